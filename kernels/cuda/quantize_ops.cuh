#pragma once
// Per-method device policies of the bucket quantisers (reduce a bucket, encode, decode), written
// on top of the shared formulas of kernels/quant_math.hpp. Included by quantize.cu only.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/rng.hpp"
#include "kernels/quant_math.hpp"

namespace lgreco::kernels::cuda::detail {

constexpr unsigned kFullMask = 0xFFFFFFFFu;

/// Scales of one bucket: a = min / norm / scale, b = unit (max-min only).
struct Stats {
  float a = 0.0f;
  float b = 0.0f;
};

// Group-of-8 reductions: lanes 8g..8g+7 of a warp form group g; every lane of the warp calls them.
__device__ __forceinline__ float g8_min(float v) {
  for (int o = 1; o < 8; o <<= 1) v = fminf(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}
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

struct MaxMinOp {
  int bits;
  std::uint32_t max_level;
  bool stochastic;
  __host__ __device__ bool random() const { return stochastic; }
  __device__ Stats reduce(const float* __restrict__ x, std::uint64_t start, std::uint32_t len, std::uint32_t lane8) const {
    float mn = __int_as_float(0x7f800000);
    float mx = -mn;
    for (std::uint32_t j = lane8; j < len; j += 8) {
      const float v = x[start + j];
      mn = fminf(mn, v);
      mx = fmaxf(mx, v);
    }
    mn = g8_min(mn);
    mx = g8_max(mx);
    return {mn, maxmin_unit(mn, mx, bits)};
  }
  __device__ std::uint32_t code(float v, const Stats& st, float u) const {
    return maxmin_level(v, st.a, st.b, stochastic ? u : 0.5f, max_level);
  }
  __device__ float decode(std::uint32_t c, const Stats& st) const { return maxmin_decode(st.a, st.b, c); }
  __device__ std::uint32_t elias_len(std::uint32_t) const { return 0; }
};

struct QsgdOp {
  int s;
  bool l2;
  __host__ __device__ bool random() const { return true; }
  __device__ Stats reduce(const float* __restrict__ x, std::uint64_t start, std::uint32_t len, std::uint32_t lane8) const {
    return {l2 ? l2_norm_g8(x, start, len, lane8) : max_abs_g8(x, start, len, lane8), 0.0f};
  }
  __device__ std::uint32_t code(float v, const Stats& st, float u) const {
    return qsgd_code(v, qsgd_level(v, st.a, s, u), s);
  }
  __device__ float decode(std::uint32_t c, const Stats& st) const { return qsgd_decode(c, s, st.a); }
  // gamma_len(ξ + 1) + [ξ ≠ 0], ξ = |code − s|.
  __device__ std::uint32_t elias_len(std::uint32_t c) const {
    const std::uint32_t xi = c >= static_cast<std::uint32_t>(s) ? c - s : s - c;
    return 2u * (31u - __clz(xi + 1u)) + 1u + (xi != 0u ? 1u : 0u);
  }
};

struct SignOp {
  __host__ __device__ bool random() const { return false; }
  __device__ Stats reduce(const float* __restrict__ x, std::uint64_t start, std::uint32_t len, std::uint32_t lane8) const {
    const double sum = g8_tree_sum(partial_sumabs(x, start, len, lane8));
    return {len ? static_cast<float>(__ddiv_rn(sum, static_cast<double>(len))) : 0.0f, 0.0f};
  }
  __device__ std::uint32_t code(float v, const Stats&, float) const { return sign_code(v); }
  __device__ float decode(std::uint32_t c, const Stats& st) const { return c ? st.a : -st.a; }
  __device__ std::uint32_t elias_len(std::uint32_t) const { return 0; }
};

struct NuqsgdOp {
  int s;
  int mbits;
  __host__ __device__ bool random() const { return true; }
  __device__ Stats reduce(const float* __restrict__ x, std::uint64_t start, std::uint32_t len, std::uint32_t lane8) const {
    return {l2_norm_g8(x, start, len, lane8), 0.0f};
  }
  __device__ std::uint32_t code(float v, const Stats& st, float u) const {
    return nuqsgd_code(v, nuqsgd_index(v, st.a, s, u), mbits);
  }
  __device__ float decode(std::uint32_t c, const Stats& st) const { return nuqsgd_decode(c, s, mbits, st.a); }
  __device__ std::uint32_t elias_len(std::uint32_t) const { return 0; }
};

// TernGrad has one layer-wide scale; reduce() is never used (a grid-wide max replaces it).
struct TernGradOp {
  __host__ __device__ bool random() const { return true; }
  __device__ Stats reduce(const float*, std::uint64_t, std::uint32_t, std::uint32_t) const { return {}; }
  __device__ std::uint32_t code(float v, const Stats& st, float u) const { return terngrad_code(v, st.a, u); }
  __device__ float decode(std::uint32_t c, const Stats& st) const {
    return mul_rn(static_cast<float>(static_cast<int>(c) - 1), st.a);
  }
  __device__ std::uint32_t elias_len(std::uint32_t) const { return 0; }
};

}  // namespace lgreco::kernels::cuda::detail
