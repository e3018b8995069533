#pragma once
/// Per-element formulas of the quantisers and the bit-packing layout, shared verbatim by the CPU
/// reference and the CUDA kernels (LGRECO_HD), so both produce identical codes and bytes.
///
/// Packing layout (every quantiser): a byte array of ceil(b·N/8) bytes, all bits zero-initialised;
/// element i's b-bit code c_i occupies bit offsets [i·b, i·b + b) of the array, little-endian bit
/// order: bit j of c_i is bit (i·b + j) mod 8 of byte (i·b + j) / 8. Bits past b·N in the last byte
/// are zero.
///
/// Floating point: every formula is written with one IEEE fp32 rounding per operation and no fused
/// multiply-add (mul_rn/add_rn keep nvcc from contracting); the CPU build never contracts
/// (-std=c++20 implies -ffp-contract=off in GCC).
///
/// Random draws: u_i = rng::uniform_at(seed, rng::stream_of(step, layer), i), i = element index in
/// the layer (not in the bucket), u ∈ [0, 1) with 24 random bits.
#include <cstdint>

#include "core/hd.hpp"

namespace lgreco::kernels {

/// fp32 multiply with a single rounding, never fused into an FMA.
LGRECO_HD_INLINE float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

/// fp32 add with a single rounding, never fused into an FMA.
LGRECO_HD_INLINE float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

/// Writes a b-bit code (b ≤ 24) at element i: ORs it into the zero-initialised array.
LGRECO_HD_INLINE void put_code(std::uint8_t* bytes, std::uint64_t i, int b, std::uint32_t code) {
  const std::uint64_t bit = i * static_cast<std::uint64_t>(b);
  std::uint64_t byte = bit >> 3;
  std::uint32_t v = code << (bit & 7u);
  int nbits = b + static_cast<int>(bit & 7u);
  while (nbits > 0) {
    bytes[byte++] |= static_cast<std::uint8_t>(v & 0xFFu);
    v >>= 8;
    nbits -= 8;
  }
}

/// Reads the b-bit code (b ≤ 24) of element i.
LGRECO_HD_INLINE std::uint32_t get_code(const std::uint8_t* bytes, std::uint64_t i, int b) {
  const std::uint64_t bit = i * static_cast<std::uint64_t>(b);
  std::uint64_t byte = bit >> 3;
  const int shift = static_cast<int>(bit & 7u);
  std::uint32_t v = 0;
  for (int k = 0; k * 8 < b + shift; ++k) v |= static_cast<std::uint32_t>(bytes[byte + k]) << (8 * k);
  return (v >> shift) & ((b >= 32) ? 0xFFFFFFFFu : ((1u << b) - 1u));
}

// ---- max-min (CGX) ---------------------------------------------------------------------------
// min, max: of the bucket in the total order of the ordered-integer key (bits ^ ((bits >> 31) &
// 0x7FFFFFFF) as int32), i.e. float order with −0 < +0; so a bucket holding both zeros has min −0.
// unit = (max − min) / (2^b − 1)  [fp32 division]; a bucket with max == min has unit 0.
// level = unit == 0 ? 0 : min(floor((x − min) / unit + u), 2^b − 1), u = 0.5 (nearest) or u_i;
// a NaN quotient (range beyond FLT_MAX: Inf / Inf) gives 2^b − 1 on CPU and GPU alike.
// decode = min + unit · level  (two roundings, no FMA); unit 0 decodes to min exactly.

/// Max-min unit of a bucket.
LGRECO_HD_INLINE float maxmin_unit(float mn, float mx, int bits) {
  return (mx - mn) / static_cast<float>((1u << bits) - 1u);
}

/// Max-min level of x (x ≥ mn, so the truncating conversion is floor).
LGRECO_HD_INLINE std::uint32_t maxmin_level(float x, float mn, float unit, float u, std::uint32_t max_level) {
  if (unit == 0.0f) return 0u;
  const float t = (x - mn) / unit + u;
  // Also catches NaN (x − mn and unit both Inf when the bucket's range overflows fp32), whose
  // conversion to an integer differs between x86 and the GPU (undefined in C++).
  if (!(t < static_cast<float>(max_level))) return max_level;
  const std::uint32_t l = static_cast<std::uint32_t>(static_cast<std::int32_t>(t));
  return l < max_level ? l : max_level;
}

/// Max-min decoded value.
LGRECO_HD_INLINE float maxmin_decode(float mn, float unit, std::uint32_t level) {
  return add_rn(mn, mul_rn(unit, static_cast<float>(level)));
}

// ---- QSGD ----------------------------------------------------------------------------------------
// norm: bucket L2 (see kernels/cpu/quantize.hpp for the summation order) or max |v|.
// r = |v| / norm · s; ℓ = floor(r); ξ = ℓ + (u < r − ℓ ? 1 : 0), clamped to s; ξ = 0 when norm == 0.
// code = s + ξ for v ≥ 0 (including −0), s − ξ for v < 0: offset binary in [0, 2s],
// width ceil(log2(2s+1)) bits. decode = ((code − s) / s) · norm  [int→float, fp32 div, fp32 mul].

/// QSGD level magnitude ξ ∈ [0, s].
LGRECO_HD_INLINE std::uint32_t qsgd_level(float v, float norm, int s, float u) {
  if (norm == 0.0f) return 0u;
  const float a = v < 0.0f ? -v : v;
  const float r = a / norm * static_cast<float>(s);
  const std::uint32_t l = static_cast<std::uint32_t>(static_cast<std::int32_t>(r));
  const float p = r - static_cast<float>(l);
  const std::uint32_t xi = l + (u < p ? 1u : 0u);
  return xi < static_cast<std::uint32_t>(s) ? xi : static_cast<std::uint32_t>(s);
}

/// QSGD code from value and level magnitude.
LGRECO_HD_INLINE std::uint32_t qsgd_code(float v, std::uint32_t xi, int s) {
  return v < 0.0f ? static_cast<std::uint32_t>(s) - xi : static_cast<std::uint32_t>(s) + xi;
}

/// QSGD decoded value.
LGRECO_HD_INLINE float qsgd_decode(std::uint32_t code, int s, float norm) {
  const float q = static_cast<float>(static_cast<std::int32_t>(code) - s) / static_cast<float>(s);
  return mul_rn(q, norm);
}

// ---- EF-SignSGD ------------------------------------------------------------------------------
// code = v < 0 ? 0 : 1 (so +0 and −0 give 1); decode = code ? scale : −scale, scale = ‖bucket‖₁ / n.

/// Sign code.
LGRECO_HD_INLINE std::uint32_t sign_code(float v) { return v < 0.0f ? 0u : 1u; }

// ---- TernGrad --------------------------------------------------------------------------------
// s = max |g| over the layer; t = (u < |g| / s) ? sign(g) : 0 (t = 0 when s == 0 or g == 0);
// code = 1 + t ∈ {0, 1, 2}, 2 bits; decode = (code − 1) · s.

/// TernGrad code.
LGRECO_HD_INLINE std::uint32_t terngrad_code(float g, float s, float u) {
  // Branch-free: g == 0 gives p = 0 (u < 0 is false); s == 0 only when every g is 0, and then
  // 0/0 = NaN makes u < p false as well.
  const float a = g < 0.0f ? -g : g;
  const bool keep = u < a / s;
  return keep ? (g < 0.0f ? 0u : 2u) : 1u;
}

// ---- NUQSGD ----------------------------------------------------------------------------------
// Levels L_0 = 0, L_j = 2^(j − s − 1) for j = 1..s+1 (L_1 = 2^−s, L_{s+1} = 1). r = |v| / norm
// (fp32, ≤ 1 after clamping). Interval j: L_j ≤ r < L_{j+1}, found from the binary exponent of r
// (r < 2^−s → j = 0). p = (r − L_j) / (L_{j+1} − L_j); index = j + (u < p ? 1 : 0), ≤ s + 1.
// code = index | (v < 0 && index > 0 ? 1 : 0) << mbits, mbits = ceil(log2(s + 2)); decode =
// ±L_index · norm (exact scaling by a power of two, up to underflow). norm == 0 → index 0.

/// NUQSGD level value L_j.
LGRECO_HD_INLINE float nuqsgd_level_value(std::uint32_t j, int s) {
  // 2^(j − s − 1) built from its exponent bits (j − s − 1 ∈ [−s, 0] with s ≤ 30 stays normal);
  // j = 0 gives the bit pattern 0, i.e. 0.0f. Branch-free so that CPU loops vectorise.
  const std::uint32_t bits_pattern = j == 0 ? 0u : static_cast<std::uint32_t>(127 + static_cast<int>(j) - s - 1) << 23;
  float f;
  __builtin_memcpy(&f, &bits_pattern, sizeof f);
  return f;
}

/// NUQSGD level index ∈ [0, s + 1] for norm > 0 (branch-free; nuqsgd_index handles norm == 0).
LGRECO_HD_INLINE std::uint32_t nuqsgd_index_nonzero_norm(float v, float norm, int s, float u) {
  const float a = v < 0.0f ? -v : v;
  const float r = a / norm;
  std::uint32_t rb;
  __builtin_memcpy(&rb, &r, sizeof rb);
  const int e = static_cast<int>((rb >> 23) & 0xFFu) - 127;  // floor(log2 r) for normal r
  // j with L_j ≤ r < L_{j+1}: L_j = 2^(j − s − 1) → j = e + s + 1 when e ≥ −s, else j = 0.
  // (For r ≥ 1 the result is s + 1 regardless; j is then clamped to keep the arithmetic finite.)
  std::uint32_t j = (e >= -s) ? static_cast<std::uint32_t>(e + s + 1) : 0u;
  j = j > static_cast<std::uint32_t>(s) ? static_cast<std::uint32_t>(s) : j;
  const float lo = nuqsgd_level_value(j, s);
  const float hi = nuqsgd_level_value(j + 1, s);
  const float p = (r - lo) / (hi - lo);
  const std::uint32_t idx = j + (u < p ? 1u : 0u);
  return r >= 1.0f ? static_cast<std::uint32_t>(s) + 1u : idx;
}

/// NUQSGD level index ∈ [0, s + 1].
LGRECO_HD_INLINE std::uint32_t nuqsgd_index(float v, float norm, int s, float u) {
  return norm == 0.0f ? 0u : nuqsgd_index_nonzero_norm(v, norm, s, u);
}

/// NUQSGD code from value and index.
LGRECO_HD_INLINE std::uint32_t nuqsgd_code(float v, std::uint32_t index, int mbits) {
  return index | ((v < 0.0f && index > 0u) ? (1u << mbits) : 0u);
}

/// NUQSGD decoded value.
LGRECO_HD_INLINE float nuqsgd_decode(std::uint32_t code, int s, int mbits, float norm) {
  const std::uint32_t index = code & ((1u << mbits) - 1u);
  const float mag = mul_rn(nuqsgd_level_value(index, s), norm);
  return (code >> mbits) ? -mag : mag;
}

}  // namespace lgreco::kernels
