#pragma once
/// IEEE binary16 and bfloat16 conversions, bit-exact and platform independent.
/// - decode (16 → 32 bits) is exact for every input: subnormals, ±0, ±Inf, NaN (payload kept).
/// - encode (32 → 16 bits) rounds to nearest, ties to even; overflow gives ±Inf; NaN stays NaN (quiet).
#include <cstdint>
#include <cstring>

namespace lgreco::traces {

inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// binary16 → float32 (exact).
inline float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t o = static_cast<std::uint32_t>(h & 0x7fffu) << 13;  // exponent and mantissa in place
  const std::uint32_t exp = o & 0x0f800000u;
  o += (127u - 15u) << 23;                                          // rebias the exponent
  if (exp == 0x0f800000u) {
    o += (128u - 16u) << 23;                                        // Inf/NaN: exponent to 255
  } else if (exp == 0) {
    // Subnormal (or zero): value = mantissa·2^-24; renormalise exactly with one float subtraction.
    o += 1u << 23;
    o = float_bits(bits_float(o) - bits_float(113u << 23));
  }
  return bits_float(o | sign);
}

/// float32 → binary16, round to nearest even.
inline std::uint16_t float_to_half(float value) {
  std::uint32_t f = float_bits(value);
  const std::uint32_t sign = (f >> 16) & 0x8000u;
  f &= 0x7fffffffu;
  std::uint32_t o;
  if (f >= 0x47800000u) {                       // ≥ 65536 (after rounding always Inf), Inf or NaN
    o = f > 0x7f800000u ? 0x7e00u | ((f >> 13) & 0x3ffu) : 0x7c00u;
  } else if (f < 0x38800000u) {                 // below 2^-14: result is subnormal or zero
    // Adding 0.5 aligns the value so the FPU's round-to-nearest-even does the rounding.
    const float denorm_magic = bits_float(((127u - 15u) + (23u - 10u) + 1u) << 23);
    o = float_bits(bits_float(f) + denorm_magic) - float_bits(denorm_magic);
  } else {
    const std::uint32_t mant_odd = (f >> 13) & 1u;
    f += ((15u - 127u) << 23) + 0xfffu;          // rebias and add rounding bias (−1 ulp/2)
    f += mant_odd;                               // ties to even
    o = f >> 13;                                 // may carry into Inf (65520 and above)
  }
  return static_cast<std::uint16_t>(o | sign);
}

/// bfloat16 → float32 (exact).
inline float bfloat16_to_float(std::uint16_t b) { return bits_float(static_cast<std::uint32_t>(b) << 16); }

/// float32 → bfloat16, round to nearest even; NaN stays a quiet NaN.
inline std::uint16_t float_to_bfloat16(float value) {
  const std::uint32_t f = float_bits(value);
  if ((f & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((f >> 16) | 0x40u);
  return static_cast<std::uint16_t>((f + 0x7fffu + ((f >> 16) & 1u)) >> 16);
}

}  // namespace lgreco::traces
