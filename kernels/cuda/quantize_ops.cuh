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

/// A bucket staged in shared memory, one padding slot after every 32 elements (element j at
/// j + j/32): lanes that each read one code word's elements, 8, 16 or 32 apart, then hit 32
/// different banks instead of the same few.
struct PaddedSlice {
  float* xs;
  __host__ __device__ static constexpr std::uint32_t slots(std::uint32_t d) { return d + d / 32u + 1u; }
  __device__ __forceinline__ float& operator[](std::uint64_t j) const { return xs[j + (j >> 5)]; }
};

/// Partial k (= lane8) of the reference's interleaved sum of squares, in double. `x` is the
/// gradient or a PaddedSlice.
template <class X>
__device__ __forceinline__ double partial_sumsq(const X& x, std::uint64_t start, std::uint32_t len,
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
template <class X>
__device__ __forceinline__ double partial_sumabs(const X& x, std::uint64_t start, std::uint32_t len,
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

// Whole-warp reductions over a bucket staged in shared memory (bucket_warp_kernel): order-free
// ones use all 32 lanes; the double sums keep the reference's 8 interleaved partials on lanes 0-7
// (lanes 8-31 contribute zeros), combined by the same tree, and broadcast from lane 0.
__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}
__device__ __forceinline__ double warp_sum8(double p) { return __shfl_sync(kFullMask, g8_tree_sum(p), 0); }

__device__ __forceinline__ float max_abs_warp(const PaddedSlice& xs, std::uint32_t len, std::uint32_t lane) {
  float m = 0.0f;
  for (std::uint32_t j = lane; j < len; j += 32) m = fmaxf(m, fabsf(xs[j]));
  return warp_max(m);
}
__device__ __forceinline__ float l2_norm_warp(const PaddedSlice& xs, std::uint32_t len, std::uint32_t lane) {
  return static_cast<float>(__dsqrt_rn(warp_sum8(partial_sumsq(xs, 0, lane < 8 ? len : 0u, lane))));
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
  __device__ Stats reduce_warp(const PaddedSlice& xs, std::uint32_t len, std::uint32_t lane) const {
    int mn = 0x7FFFFFFF;
    int mx = -0x7FFFFFFF - 1;
    for (std::uint32_t j = lane; j < len; j += 32) {
      const int k = ordered_key(xs[j]);
      mn = min(mn, k);
      mx = max(mx, k);
    }
    for (int o = 16; o > 0; o >>= 1) {
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
  __device__ Stats reduce_warp(const PaddedSlice& xs, std::uint32_t len, std::uint32_t lane) const {
    return {l2 ? l2_norm_warp(xs, len, lane) : max_abs_warp(xs, len, lane), 0.0f};
  }
};

struct SignOp : SignCodec {
  __device__ Stats reduce(const float* __restrict__ x, std::uint64_t start, std::uint32_t len, std::uint32_t lane8) const {
    const double sum = g8_tree_sum(partial_sumabs(x, start, len, lane8));
    return {len ? static_cast<float>(__ddiv_rn(sum, static_cast<double>(len))) : 0.0f, 0.0f};
  }
  __device__ Stats reduce_warp(const PaddedSlice& xs, std::uint32_t len, std::uint32_t lane) const {
    const double sum = warp_sum8(partial_sumabs(xs, 0, lane < 8 ? len : 0u, lane));
    return {len ? static_cast<float>(__ddiv_rn(sum, static_cast<double>(len))) : 0.0f, 0.0f};
  }
};

struct NuqsgdOp : NuqsgdCodec {
  __device__ Stats reduce(const float* __restrict__ x, std::uint64_t start, std::uint32_t len, std::uint32_t lane8) const {
    return {l2_norm_g8(x, start, len, lane8), 0.0f};
  }
  __device__ Stats reduce_warp(const PaddedSlice& xs, std::uint32_t len, std::uint32_t lane) const {
    return {l2_norm_warp(xs, len, lane), 0.0f};
  }
};

// TernGrad has one layer-wide scale; reduce() is never used (a grid-wide max replaces it).
struct TernGradOp : TernGradCodec {
  __device__ Stats reduce(const float*, std::uint64_t, std::uint32_t, std::uint32_t) const { return {}; }
  __device__ Stats reduce_warp(const PaddedSlice&, std::uint32_t, std::uint32_t) const { return {}; }
};

}  // namespace lgreco::kernels::cuda::detail
