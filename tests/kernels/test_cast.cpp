// fp16 / bf16 casts: hand-derived ties, overflow, subnormals, and the compiler's _Float16 as oracle.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/cpu/cast.hpp"
#include "test_util.hpp"

using namespace lgreco::kernels;
using lgreco::kernels::test::same_bits;

namespace {
float from_bits(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
float rt16(float x) { return cpu::half_to_float(cpu::float_to_half(x)); }
float rtb(float x) { return cpu::bf16_to_float(cpu::float_to_bf16(x)); }
}  // namespace

TEST_CASE("fp16 rounding: hand-derived ties, overflow and subnormals", "[cast]") {
  // fp16 keeps 10 fraction bits: the ulp at 1 is 2^-10.
  CHECK(rt16(1.0f + std::ldexp(1.0f, -11)) == 1.0f);                              // tie → even (1)
  CHECK(rt16(1.0f + 3 * std::ldexp(1.0f, -11)) == 1.0f + std::ldexp(1.0f, -9));   // tie → even
  CHECK(rt16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)) == 1.0f + std::ldexp(1.0f, -10));
  CHECK(rt16(65504.0f) == 65504.0f);
  CHECK(rt16(65519.0f) == 65504.0f);
  CHECK(std::isinf(rt16(65520.0f)));  // halfway to 2^16 rounds to even = overflow
  CHECK(rt16(-1e6f) == -std::numeric_limits<float>::infinity());
  CHECK(rt16(std::ldexp(1.0f, -24)) == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(rt16(std::ldexp(1.0f, -25)) == 0.0f);                    // tie with 0 → 0
  CHECK(rt16(1.5f * std::ldexp(1.0f, -25)) == std::ldexp(1.0f, -24));
  CHECK(rt16(3 * std::ldexp(1.0f, -25)) == std::ldexp(1.0f, -23));  // 1.5 ulp → 2 ulp (even)
  CHECK(same_bits(rt16(-0.0f), -0.0f));
  CHECK(same_bits(rt16(-1e-30f), -0.0f));
}

TEST_CASE("fp16 matches the compiler's _Float16 conversion", "[cast]") {
  // Every fp16 value round-trips; random fp32 values (normal, tiny, huge) convert as _Float16 does.
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const float f = cpu::half_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(f)) continue;
    REQUIRE(cpu::float_to_half(f) == h);
    REQUIRE(same_bits(f, static_cast<float>(std::bit_cast<_Float16>(static_cast<std::uint16_t>(h)))));
  }
  for (std::uint64_t i = 0; i < 200000; ++i) {
    const std::uint32_t bits = lgreco::rng::bits_at(42, 3, i);
    const float x = from_bits(bits);
    if (std::isnan(x)) continue;
    CAPTURE(bits, x);
    const _Float16 ref = static_cast<_Float16>(x);
    REQUIRE(cpu::float_to_half(x) == std::bit_cast<std::uint16_t>(ref));
  }
}

TEST_CASE("bf16 rounding: ties to even, overflow, sign of zero", "[cast]") {
  // bf16 keeps 7 fraction bits: the ulp at 1 is 2^-7.
  CHECK(rtb(1.0f + std::ldexp(1.0f, -8)) == 1.0f);
  CHECK(rtb(1.0f + 3 * std::ldexp(1.0f, -8)) == 1.0f + std::ldexp(1.0f, -6));
  CHECK(rtb(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)) == 1.0f + std::ldexp(1.0f, -7));
  CHECK(std::isinf(rtb(std::numeric_limits<float>::max())));
  CHECK(same_bits(rtb(-0.0f), -0.0f));
  // Against the nearest of the two bf16 neighbours computed in double (ties: even last bit).
  for (std::uint64_t i = 0; i < 200000; ++i) {
    const float x = from_bits(lgreco::rng::bits_at(43, 3, i) & 0xFEFFFFFFu);  // exponent < 0xFE: no overflow
    if (std::isnan(x) || std::isinf(x)) continue;
    std::uint32_t b;
    std::memcpy(&b, &x, sizeof b);
    const float lo = from_bits(b & 0xFFFF0000u), hi = from_bits((b & 0xFFFF0000u) + 0x10000u);
    const double dlo = std::fabs(static_cast<double>(x) - lo), dhi = std::fabs(static_cast<double>(hi) - x);
    const float expect = dlo < dhi ? lo : (dhi < dlo ? hi : (((b >> 16) & 1u) ? hi : lo));
    CAPTURE(x);
    REQUIRE(same_bits(rtb(x), expect));
  }
}

TEST_CASE("vectorised round trips equal the scalar conversions element by element", "[cast]") {
  // fp16_roundtrip may use hardware conversion and bf16_roundtrip a branch-free loop; both must
  // match the scalar definitions on every finite input (random bit patterns, tiny and huge values).
  std::vector<float> x;
  for (std::uint64_t i = 0; i < 100003; ++i) {
    const float v = from_bits(lgreco::rng::bits_at(44, 5, i));
    if (!std::isnan(v)) x.push_back(v);
  }
  std::vector<float> a(x.size()), b(x.size());
  cpu::fp16_roundtrip(x, a);
  cpu::bf16_roundtrip(x, b);
  for (std::size_t i = 0; i < x.size(); ++i) {
    CAPTURE(x[i]);
    REQUIRE(same_bits(a[i], rt16(x[i])));
    REQUIRE(same_bits(b[i], rtb(x[i])));
  }
}
