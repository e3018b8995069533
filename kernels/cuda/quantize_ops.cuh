#pragma once
// Device bucket reductions of the quantisers, added to the per-element codecs of
// kernels/cuda/quant_codecs.hpp (which wrap kernels/quant_math.hpp). Included by quantize.cu only.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/rng.hpp"
#include "kernels/cuda/quant_codecs.hpp"
#include "kernels/quant_math.hpp"

namespace lgreco::kernels::cuda::detail {

constexpr unsigned kFullMask = 0xFFFFFFFFu;

// Group-of-8 reductions: lanes 8g..8g+7 of a warp form group g; every lane of the warp calls them.
__device__ __forceinline__ float g8_max(float v) {
  for (int o = 1; o < 8; o <<= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}
// The reference's combination ((p0+p1)+(p2+p3))+((p4+p5)+(p6+p7)): xor 1, then 2, then 4
// builds exactly that tree (IEEE addition is commutative, so operand order does not matter).
__device__ __forceinline__ double g8_tree_sum(double p) {
  for (int o = 1; o < 8; o <<= 1) p = __dadd_rn(p, __shfl_xor_sync(kFullMask, p, o));
  return p;
}

/// Partial k (= lane8) of the reference's interleaved sum of squares, in double.
__device__ __forceinline__ double partial_sumsq(const float* __restrict__ x, std::uint64_t start, std::uint32_t len,
                                                std::uint32_t lane8) {
  double p = 0.0;
#pragma unroll 4
  for (std::uint32_t j = lane8; j < len; j += 8) {
    const double v = x[start + j];
    p = __dadd_rn(p, __dmul_rn(v, v));
  }
  return p;
}

/// Partial k (= lane8) of the reference's interleaved sum of |v|, in double.
__device__ __forceinline__ double partial_sumabs(const float* __restrict__ x, std::uint64_t start, std::uint32_t len,
                                                 std::uint32_t lane8) {
  double p = 0.0;
#pragma unroll 4
  for (std::uint32_t j = lane8; j < len; j += 8) p = __dadd_rn(p, static_cast<double>(fabsf(x[start + j])));
  return p;
}

__device__ __forceinline__ float l2_norm_g8(const float* __restrict__ x, std::uint64_t start, std::uint32_t len,
                                            std::uint32_t lane8) {
  return static_cast<float>(__dsqrt_rn(g8_tree_sum(partial_sumsq(x, start, len, lane8))));
}

__device__ __forceinline__ float max_abs_g8(const float* __restrict__ x, std::uint64_t start, std::uint32_t len,
                                            std::uint32_t lane8) {
  float m = 0.0f;
  for (std::uint32_t j = lane8; j < len; j += 8) m = fmaxf(m, fabsf(x[start + j]));
  return g8_max(m);
}

// Float order with −0 < +0, as the reference: the ordered-integer key of the bit pattern.
__device__ __forceinline__ int ordered_key(float v) {
  const int b = __float_as_int(v);
  return b ^ ((b >> 31) & 0x7FFFFFFF);
}
__device__ __forceinline__ float from_ordered_key(int k) { return __int_as_float(k ^ ((k >> 31) & 0x7FFFFFFF)); }

struct MaxMinOp : MaxMinCodec {
  __device__ Stats reduce(const float* __restrict__ x, std::uint64_t start, std::uint32_t len, std::uint32_t lane8) const {
    int mn = 0x7FFFFFFF;
    int mx = -0x7FFFFFFF - 1;
    for (std::uint32_t j = lane8; j < len; j += 8) {
      const int k = ordered_key(x[start + j]);
      mn = min(mn, k);
      mx = max(mx, k);
    }
    for (int o = 1; o < 8; o <<= 1) {
      mn = min(mn, __shfl_xor_sync(kFullMask, mn, o));
      mx = max(mx, __shfl_xor_sync(kFullMask, mx, o));
    }
    const float fmn = from_ordered_key(mn), fmx = from_ordered_key(mx);
    return {fmn, maxmin_unit(fmn, fmx, bits)};
  }
};

struct QsgdOp : QsgdCodec {
  __device__ Stats reduce(const float* __restrict__ x, std::uint64_t start, std::uint32_t len, std::uint32_t lane8) const {
    return {l2 ? l2_norm_g8(x, start, len, lane8) : max_abs_g8(x, start, len, lane8), 0.0f};
  }
};

struct SignOp : SignCodec {
  __device__ Stats reduce(const float* __restrict__ x, std::uint64_t start, std::uint32_t len, std::uint32_t lane8) const {
    const double sum = g8_tree_sum(partial_sumabs(x, start, len, lane8));
    return {len ? static_cast<float>(__ddiv_rn(sum, static_cast<double>(len))) : 0.0f, 0.0f};
  }
};

struct NuqsgdOp : NuqsgdCodec {
  __device__ Stats reduce(const float* __restrict__ x, std::uint64_t start, std::uint32_t len, std::uint32_t lane8) const {
    return {l2_norm_g8(x, start, len, lane8), 0.0f};
  }
};

// TernGrad has one layer-wide scale; reduce() is never used (a grid-wide max replaces it).
struct TernGradOp : TernGradCodec {
  __device__ Stats reduce(const float*, std::uint64_t, std::uint32_t, std::uint32_t) const { return {}; }
};

}  // namespace lgreco::kernels::cuda::detail
