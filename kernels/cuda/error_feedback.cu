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

}  // namespace

void ef_accumulate(const float* g, const float* e, std::uint64_t n, float* acc, Stream s) { launch(g, e, n, acc, false, s); }

void ef_residual(const float* acc, const float* c, std::uint64_t n, float* e, Stream s) { launch(acc, c, n, e, true, s); }

}  // namespace lgreco::kernels::cuda
