#include "kernels/cpu/cast.hpp"

#include <cstring>

#include "kernels/cpu/simd.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define LGRECO_CAST_F16C 1
#endif

namespace lgreco::kernels::cpu {
namespace {
inline std::uint32_t bits_of(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}
inline float float_of(std::uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}
}  // namespace

std::uint16_t float_to_half(float x) {
  const std::uint32_t f = bits_of(x);
  const std::uint32_t sign = (f >> 16) & 0x8000u;
  const std::uint32_t a = f & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return static_cast<std::uint16_t>(sign | 0x7E00u);  // NaN → quiet NaN
  if (a >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u); // ≥ 65520 (and Inf) → Inf
  if (a < 0x38800000u) {
    // Result is an fp16 subnormal or zero: value = a_float / 2^-24 units, rounded to nearest even.
    if (a < 0x33000000u) return static_cast<std::uint16_t>(sign);  // < 2^-25: rounds to 0
    const std::uint32_t exp = a >> 23;
    const std::uint32_t mant = (a & 0x7FFFFFu) | 0x800000u;
    const std::uint32_t shift = 126u - exp;  // 113 - exp + 13
    const std::uint32_t q = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1u);
    const std::uint32_t half = 1u << (shift - 1);
    const std::uint32_t r = q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
    return static_cast<std::uint16_t>(sign | r);
  }
  // Normal: rebias exponent (127 → 15) and round the 13 dropped mantissa bits to nearest even;
  // a carry into the exponent is correct (and reaches Inf only above the checked bound).
  const std::uint32_t rebased = a - (112u << 23);
  const std::uint32_t q = rebased >> 13;
  const std::uint32_t rem = rebased & 0x1FFFu;
  const std::uint32_t r = q + ((rem > 0x1000u || (rem == 0x1000u && (q & 1u))) ? 1u : 0u);
  return static_cast<std::uint16_t>(sign | r);
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu;
  std::uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) return float_of(sign | 0x7F800000u | (mant << 13));
  if (exp != 0) return float_of(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return float_of(sign);
  // Subnormal: mant · 2^-24, exact in fp32.
  const float v = static_cast<float>(mant) * 5.9604644775390625e-08f;
  return sign ? -v : v;
}

std::uint16_t float_to_bf16(float x) {
  const std::uint32_t f = bits_of(x);
  if ((f & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((f >> 16) | 0x40u);
  const std::uint32_t lsb = (f >> 16) & 1u;
  return static_cast<std::uint16_t>((f + 0x7FFFu + lsb) >> 16);
}

float bf16_to_float(std::uint16_t h) { return float_of(static_cast<std::uint32_t>(h) << 16); }

void fp16_compress(std::span<const float> x, std::span<std::uint16_t> out) {
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = float_to_half(x[i]);
}
void fp16_decompress(std::span<const std::uint16_t> in, std::span<float> out) {
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = half_to_float(in[i]);
}
void bf16_compress(std::span<const float> x, std::span<std::uint16_t> out) {
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = float_to_bf16(x[i]);
}
void bf16_decompress(std::span<const std::uint16_t> in, std::span<float> out) {
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = bf16_to_float(in[i]);
}
namespace {
#if LGRECO_CAST_F16C
// Hardware conversion (F16C, round to nearest even, IEEE overflow/subnormal handling): the same
// results as float_to_half/half_to_float, which the tests check element by element.
__attribute__((target("avx,f16c"))) void fp16_roundtrip_f16c(const float* x, float* out, std::size_t n) noexcept {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) out[i] = half_to_float(float_to_half(x[i]));
}
bool have_f16c() {
  // AVX through the builtin (it includes the OS's YMM state check); F16C from CPUID leaf 1, ECX bit 29
  // directly, since Clang before 15 does not know the "f16c" name (the fuzz build uses Clang 14).
  static const bool yes = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __builtin_cpu_supports("avx") && __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & bit_F16C) != 0;
  }();
  return yes;
}
#endif

// Branch-free RNE to bf16 and back (NaN is rejected before casts are called; it still maps to a
// quiet NaN here).
LGRECO_CPU_CLONES void bf16_roundtrip_loop(const float* x, float* out, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t f;
    std::memcpy(&f, x + i, sizeof f);
    const std::uint32_t r = (f + 0x7FFFu + ((f >> 16) & 1u)) & 0xFFFF0000u;
    const std::uint32_t q = (f & 0xFFFF0000u) | 0x400000u;
    const std::uint32_t v = (f & 0x7FFFFFFFu) > 0x7F800000u ? q : r;
    std::memcpy(out + i, &v, sizeof v);
  }
}
}  // namespace

void fp16_roundtrip(std::span<const float> x, std::span<float> out) {
#if LGRECO_CAST_F16C
  if (have_f16c()) {
    fp16_roundtrip_f16c(x.data(), out.data(), x.size());
    return;
  }
#endif
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = half_to_float(float_to_half(x[i]));
}
void bf16_roundtrip(std::span<const float> x, std::span<float> out) { bf16_roundtrip_loop(x.data(), out.data(), x.size()); }

}  // namespace lgreco::kernels::cpu
