#include "kernels/cuda/error_feedback.hpp"

#include <cuda_runtime.h>

#include "kernels/cuda/check.cuh"

namespace lgreco::kernels::cuda {
namespace {

// sign = +1: out = a + b; sign = −1: out = a − b. One fp32 rounding, as on the host.
__global__ void axpb_kernel(const float* a, const float* b, std::uint64_t n, float* out, bool subtract) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = subtract ? __fsub_rn(a[i], b[i]) : __fadd_rn(a[i], b[i]);
}

void launch(const float* a, const float* b, std::uint64_t n, float* out, bool subtract, Stream s) {
  if (n == 0) return;
  const unsigned grid = detail::grid_for(n, 256, static_cast<unsigned>(multiprocessor_count()) * 32u);
  axpb_kernel<<<grid, 256, 0, s>>>(a, b, n, out, subtract);
  LGRECO_CUDA_CHECK_LAUNCH();
}

__global__ void momentum_accumulate_kernel(const float* g, float* u, const float* e, float m, std::uint64_t n,
                                           float* acc) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = __fadd_rn(__fmul_rn(m, u[i]), g[i]);
    u[i] = v;
    acc[i] = __fadd_rn(e[i], v);
  }
}

__global__ void momentum_mask_kernel(const std::uint32_t* indices, std::uint64_t k, float* u) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t j = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < k; j += stride)
    u[indices[j]] = 0.0f;
}

unsigned grid_of(std::uint64_t n) {
  return detail::grid_for(n, 256, static_cast<unsigned>(multiprocessor_count()) * 32u);
}

}  // namespace

void momentum_accumulate(const float* g, float* u, const float* e, float m, std::uint64_t n, float* acc, Stream s) {
  if (n == 0) return;
  momentum_accumulate_kernel<<<grid_of(n), 256, 0, s>>>(g, u, e, m, n, acc);
  LGRECO_CUDA_CHECK_LAUNCH();
}

void momentum_mask(const std::uint32_t* indices, std::uint64_t k, float* u, Stream s) {
  if (k == 0) return;
  momentum_mask_kernel<<<grid_of(k), 256, 0, s>>>(indices, k, u);
  LGRECO_CUDA_CHECK_LAUNCH();
}

void ef_accumulate(const float* g, const float* e, std::uint64_t n, float* acc, Stream s) { launch(g, e, n, acc, false, s); }

void ef_residual(const float* acc, const float* c, std::uint64_t n, float* e, Stream s) { launch(acc, c, n, e, true, s); }

}  // namespace lgreco::kernels::cuda
