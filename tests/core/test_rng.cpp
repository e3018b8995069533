#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "core/rng.hpp"

using namespace lgreco::rng;

// Known-answer vectors of Philox4x32-10 published with Random123 (kat_vectors).
TEST_CASE("philox4x32-10 matches the published known-answer vectors") {
  {
    const Block out = philox4x32_10(Block{{0, 0, 0, 0}}, 0, 0);
    CHECK(out.v[0] == 0x6627e8d5u);
    CHECK(out.v[1] == 0xe169c58du);
    CHECK(out.v[2] == 0xbc57ac4cu);
    CHECK(out.v[3] == 0x9b00dbd8u);
  }
  {
    const Block out = philox4x32_10(Block{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, 0xffffffffu, 0xffffffffu);
    CHECK(out.v[0] == 0x408f276du);
    CHECK(out.v[1] == 0x41c83b0eu);
    CHECK(out.v[2] == 0xa20bc7c6u);
    CHECK(out.v[3] == 0x6d5451fdu);
  }
  {
    const Block out = philox4x32_10(Block{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u, 0x299f31d0u);
    CHECK(out.v[0] == 0xd16cfe09u);
    CHECK(out.v[1] == 0x94fdccebu);
    CHECK(out.v[2] == 0x5001e420u);
    CHECK(out.v[3] == 0x24126ea1u);
  }
}

TEST_CASE("draws are pure functions of (seed, stream, index)") {
  CHECK(bits_at(7, 3, 12345) == bits_at(7, 3, 12345));
  CHECK(bits_at(7, 3, 12345) != bits_at(8, 3, 12345));
  CHECK(bits_at(7, 3, 12345) != bits_at(7, 4, 12345));
  CHECK(bits_at(7, 3, 12345) != bits_at(7, 3, 12346));
  // The lane convention: element i is word i%4 of block i/4.
  const Block b = block_at(7, 3, 100);
  for (unsigned lane = 0; lane < 4; ++lane) CHECK(bits_at(7, 3, 400 + lane) == b.v[lane]);
  CHECK(stream_of(5, 2) != stream_of(2, 5));
}

TEST_CASE("uniforms lie in [0,1) and have the moments of U(0,1)") {
  const int n = 200000;
  double sum = 0, sum2 = 0;
  float lo = 1, hi = 0;
  for (int i = 0; i < n; ++i) {
    const float u = uniform_at(42, 1, static_cast<std::uint64_t>(i));
    lo = std::min(lo, u);
    hi = std::max(hi, u);
    sum += u;
    sum2 += double(u) * u;
  }
  CHECK(lo >= 0.0f);
  CHECK(hi < 1.0f);
  const double mean = sum / n, var = sum2 / n - mean * mean;
  // Standard error of the mean of U(0,1) is sqrt(1/12/n) ≈ 6.5e-4; allow 5 sigma.
  CHECK(std::fabs(mean - 0.5) < 5 * std::sqrt(1.0 / 12 / n));
  CHECK(std::fabs(var - 1.0 / 12) < 0.002);
  CHECK(word_to_unit_float(0xffffffffu) < 1.0f);
  CHECK(word_to_unit_float(0u) == 0.0f);
}

TEST_CASE("normal draws have zero mean and unit variance") {
  const int n = 100000;
  double sum = 0, sum2 = 0;
  for (int i = 0; i < n; ++i) {
    const double z = normal_at(9, 2, static_cast<std::uint64_t>(i));
    REQUIRE(std::isfinite(z));
    sum += z;
    sum2 += z * z;
  }
  const double mean = sum / n, var = sum2 / n - mean * mean;
  CHECK(std::fabs(mean) < 5 / std::sqrt(double(n)));
  CHECK(std::fabs(var - 1) < 0.03);
}
