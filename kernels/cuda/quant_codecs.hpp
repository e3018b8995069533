#pragma once
/// Per-element encode/decode policies of the CUDA bucket quantisers (host + device, standard
/// library only): thin wrappers over kernels/quant_math.hpp with the method's parameters bound.
/// The device kernels add the bucket reductions (quantize_ops.cuh); the host test of the packing
/// (tests/kernels/cuda_host_pack.cpp) runs these same policies against the CPU reference.
#include <cstdint>

#include "core/hd.hpp"
#include "kernels/quant_math.hpp"

namespace lgreco::kernels::cuda::detail {

/// Scales of one bucket: a = min / norm / scale, b = unit (max-min only).
struct Stats {
  float a = 0.0f;
  float b = 0.0f;
};

/// floor(log2 x) for x ≥ 1.
LGRECO_HD_INLINE std::uint32_t floor_log2_u32(std::uint32_t x) {
#if defined(__CUDA_ARCH__)
  return 31u - static_cast<std::uint32_t>(__clz(x));
#else
  return 31u - static_cast<std::uint32_t>(__builtin_clz(x));
#endif
}

struct MaxMinCodec {
  int bits;
  std::uint32_t max_level;
  bool stochastic;
  LGRECO_HD_INLINE bool random() const { return stochastic; }
  LGRECO_HD_INLINE std::uint32_t code(float v, const Stats& st, float u) const {
    return maxmin_level(v, st.a, st.b, stochastic ? u : 0.5f, max_level);
  }
  LGRECO_HD_INLINE float decode(std::uint32_t c, const Stats& st) const { return maxmin_decode(st.a, st.b, c); }
  LGRECO_HD_INLINE std::uint32_t elias_len(std::uint32_t) const { return 0; }
};

struct QsgdCodec {
  int s;
  bool l2;
  LGRECO_HD_INLINE bool random() const { return true; }
  LGRECO_HD_INLINE std::uint32_t code(float v, const Stats& st, float u) const {
    return qsgd_code(v, qsgd_level(v, st.a, s, u), s);
  }
  LGRECO_HD_INLINE float decode(std::uint32_t c, const Stats& st) const { return qsgd_decode(c, s, st.a); }
  /// gamma_len(ξ + 1) + [ξ ≠ 0], ξ = |code − s| (the reference's Elias bit count).
  LGRECO_HD_INLINE std::uint32_t elias_len(std::uint32_t c) const {
    const std::uint32_t us = static_cast<std::uint32_t>(s);
    const std::uint32_t xi = c >= us ? c - us : us - c;
    return 2u * floor_log2_u32(xi + 1u) + 1u + (xi != 0u ? 1u : 0u);
  }
};

struct SignCodec {
  LGRECO_HD_INLINE bool random() const { return false; }
  LGRECO_HD_INLINE std::uint32_t code(float v, const Stats&, float) const { return sign_code(v); }
  LGRECO_HD_INLINE float decode(std::uint32_t c, const Stats& st) const { return c ? st.a : -st.a; }
  LGRECO_HD_INLINE std::uint32_t elias_len(std::uint32_t) const { return 0; }
};

struct NuqsgdCodec {
  int s;
  int mbits;
  LGRECO_HD_INLINE bool random() const { return true; }
  LGRECO_HD_INLINE std::uint32_t code(float v, const Stats& st, float u) const {
    return nuqsgd_code(v, nuqsgd_index(v, st.a, s, u), mbits);
  }
  LGRECO_HD_INLINE float decode(std::uint32_t c, const Stats& st) const { return nuqsgd_decode(c, s, mbits, st.a); }
  LGRECO_HD_INLINE std::uint32_t elias_len(std::uint32_t) const { return 0; }
};

/// TernGrad: one layer-wide scale s (Stats::a).
struct TernGradCodec {
  LGRECO_HD_INLINE bool random() const { return true; }
  LGRECO_HD_INLINE std::uint32_t code(float v, const Stats& st, float u) const { return terngrad_code(v, st.a, u); }
  LGRECO_HD_INLINE float decode(std::uint32_t c, const Stats& st) const {
    return mul_rn(static_cast<float>(static_cast<int>(c) - 1), st.a);
  }
  LGRECO_HD_INLINE std::uint32_t elias_len(std::uint32_t) const { return 0; }
};

}  // namespace lgreco::kernels::cuda::detail
