#include "kernels/cuda/cast.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/check.cuh"

namespace lgreco::kernels::cuda {
namespace {

enum class Op { kToHalf, kFromHalf, kToBf16, kFromBf16, kHalfRound, kBf16Round };

template <Op op>
__global__ void cast_kernel(const void* __restrict__ in, std::uint64_t n, void* __restrict__ out) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    if constexpr (op == Op::kToHalf) {
      static_cast<std::uint16_t*>(out)[i] = __half_as_ushort(__float2half_rn(static_cast<const float*>(in)[i]));
    } else if constexpr (op == Op::kFromHalf) {
      static_cast<float*>(out)[i] = __half2float(__ushort_as_half(static_cast<const std::uint16_t*>(in)[i]));
    } else if constexpr (op == Op::kToBf16) {
      static_cast<std::uint16_t*>(out)[i] =
          __bfloat16_as_ushort(__float2bfloat16_rn(static_cast<const float*>(in)[i]));
    } else if constexpr (op == Op::kFromBf16) {
      static_cast<float*>(out)[i] = __bfloat162float(__ushort_as_bfloat16(static_cast<const std::uint16_t*>(in)[i]));
    } else if constexpr (op == Op::kHalfRound) {
      static_cast<float*>(out)[i] = __half2float(__float2half_rn(static_cast<const float*>(in)[i]));
    } else {
      static_cast<float*>(out)[i] = __bfloat162float(__float2bfloat16_rn(static_cast<const float*>(in)[i]));
    }
  }
}

template <Op op>
void launch(const void* in, std::uint64_t n, void* out, Stream s) {
  if (n == 0) return;
  const unsigned grid = detail::grid_for(n, 256, static_cast<unsigned>(multiprocessor_count()) * 32u);
  cast_kernel<op><<<grid, 256, 0, s>>>(in, n, out);
  LGRECO_CUDA_CHECK_LAUNCH();
}

}  // namespace

void fp16_compress(const float* x, std::uint64_t n, std::uint16_t* out, Stream s) { launch<Op::kToHalf>(x, n, out, s); }
void fp16_decompress(const std::uint16_t* in, std::uint64_t n, float* out, Stream s) {
  launch<Op::kFromHalf>(in, n, out, s);
}
void bf16_compress(const float* x, std::uint64_t n, std::uint16_t* out, Stream s) { launch<Op::kToBf16>(x, n, out, s); }
void bf16_decompress(const std::uint16_t* in, std::uint64_t n, float* out, Stream s) {
  launch<Op::kFromBf16>(in, n, out, s);
}
void fp16_roundtrip(const float* x, std::uint64_t n, float* out, Stream s) { launch<Op::kHalfRound>(x, n, out, s); }
void bf16_roundtrip(const float* x, std::uint64_t n, float* out, Stream s) { launch<Op::kBf16Round>(x, n, out, s); }

}  // namespace lgreco::kernels::cuda
