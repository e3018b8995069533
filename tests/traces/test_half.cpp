// binary16 / bfloat16 conversions against definitions computed in double precision.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "traces/half.hpp"

using namespace lgreco::traces;

namespace {
// Value of a binary16 bit pattern from the IEEE 754 definition.
double half_value(std::uint16_t h) {
  const int sign = (h >> 15) ? -1 : 1;
  const int e = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  if (e == 0x1f) return mant ? std::numeric_limits<double>::quiet_NaN() : sign * std::numeric_limits<double>::infinity();
  if (e == 0) return sign * std::ldexp(mant, -24);
  return sign * std::ldexp(1024 + mant, e - 25);
}

// Reference rounding: among all finite halves and ±Inf pick the nearest to x, ties to even mantissa;
// values ≥ 65520 (halfway between 65504 and 2^16) round to Inf as IEEE specifies.
std::uint16_t half_reference(float x) {
  if (std::isnan(x)) return 0x7e00;
  const double v = x;
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(v);
  if (a >= 65520.0) return sign | 0x7c00;
  std::uint16_t best = 0;
  double best_err = std::numeric_limits<double>::infinity();
  // Candidates: the two halves around a (binary search over the monotone positive patterns).
  std::uint16_t lo = 0, hi = 0x7bff;
  while (lo < hi) {
    const std::uint16_t mid = static_cast<std::uint16_t>((lo + hi + 1) / 2);
    if (half_value(mid) <= a) lo = mid; else hi = static_cast<std::uint16_t>(mid - 1);
  }
  for (std::uint16_t c : {lo, static_cast<std::uint16_t>(std::min(lo + 1, 0x7bff))}) {
    const double err = std::fabs(half_value(c) - a);
    if (err < best_err || (err == best_err && (c & 1) == 0)) {
      best = c;
      best_err = err;
    }
  }
  return sign | best;
}

std::uint16_t bf16_reference(float x) {
  if (std::isnan(x)) return 0x7fc0;
  const std::uint32_t u = float_bits(x);
  const std::uint16_t down = static_cast<std::uint16_t>(u >> 16);
  const std::uint16_t up = static_cast<std::uint16_t>(down + 1);
  const double v = x, dv = bfloat16_to_float(down), uv = bfloat16_to_float(up);
  const double ed = std::fabs(v - dv), eu = std::fabs(uv - v);
  if ((u & 0xffff) == 0) return down;
  if (ed < eu) return down;
  if (eu < ed) return up;
  return (down & 1) ? up : down;
}
}  // namespace

TEST_CASE("half decode is exact for all 65536 patterns and encode inverts it", "[half]") {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    CAPTURE(h);
    const float f = half_to_float(static_cast<std::uint16_t>(h));
    const double ref = half_value(static_cast<std::uint16_t>(h));
    if (std::isnan(ref)) {
      CHECK(std::isnan(f));
      CHECK(std::isnan(half_to_float(float_to_half(f))));
    } else {
      REQUIRE(static_cast<double>(f) == ref);
      REQUIRE(std::signbit(f) == bool(h & 0x8000));
      REQUIRE(float_to_half(f) == h);
    }
  }
}

TEST_CASE("half encode rounds to nearest even", "[half]") {
  // Boundary cases: largest finite, the Inf threshold, the smallest subnormal and its ties.
  CHECK(float_to_half(65504.0f) == 0x7bff);
  CHECK(float_to_half(65519.996f) == 0x7bff);
  CHECK(float_to_half(65520.0f) == 0x7c00);
  CHECK(float_to_half(1e10f) == 0x7c00);
  CHECK(float_to_half(-std::numeric_limits<float>::infinity()) == 0xfc00);
  CHECK(float_to_half(std::ldexp(1.0f, -25)) == 0x0000);      // tie between 0 and 2^-24: even is 0
  CHECK(float_to_half(std::ldexp(3.0f, -25)) == 0x0002);      // tie between 1 and 2 ulps: even is 2
  CHECK(float_to_half(std::ldexp(1.0f, -14)) == 0x0400);      // smallest normal
  CHECK(float_to_half(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);  // tie → even (1.0)
  CHECK(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);
  std::mt19937 gen(20261202);
  std::uniform_int_distribution<std::uint32_t> bits;
  for (int k = 0; k < 200000; ++k) {
    // Random bit patterns restricted to the half range and around it.
    std::uint32_t u = bits(gen);
    u = (u & 0x807fffffu) | (((u >> 23) % 45 + 100) << 23);
    const float x = bits_float(u);
    CAPTURE(u);
    REQUIRE(float_to_half(x) == half_reference(x));
  }
}

TEST_CASE("bfloat16 decode is exact and encode rounds to nearest even", "[half]") {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const float f = bfloat16_to_float(static_cast<std::uint16_t>(b));
    CAPTURE(b);
    REQUIRE(float_bits(f) == b << 16);
    if (!std::isnan(f)) REQUIRE(float_to_bfloat16(f) == b);
  }
  CHECK(std::isnan(bfloat16_to_float(float_to_bfloat16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(float_to_bfloat16(std::numeric_limits<float>::max()) == 0x7f80);  // rounds up to Inf
  std::mt19937 gen(7);
  std::uniform_int_distribution<std::uint32_t> bits;
  for (int k = 0; k < 200000; ++k) {
    const float x = bits_float(bits(gen));
    if (std::isnan(x) || std::isinf(x)) continue;
    CAPTURE(float_bits(x));
    const std::uint16_t got = float_to_bfloat16(x);
    if ((float_bits(x) & 0x7fffffffu) >= 0x7f7f8000u) continue;  // rounds to Inf: checked above
    REQUIRE(got == bf16_reference(x));
  }
}
