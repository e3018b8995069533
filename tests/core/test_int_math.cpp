#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <vector>

#include "core/int_math.hpp"

using lgreco::checked_add;
using lgreco::checked_mul;
using lgreco::shape_numel;

TEST_CASE("checked multiplication and addition answer nullopt exactly at int64's edge") {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  CHECK(checked_mul(3, 7) == 21);
  CHECK(checked_mul(kMax, 1) == kMax);
  CHECK_FALSE(checked_mul(kMax / 2 + 1, 2));
  CHECK(checked_mul(std::int64_t{1} << 31, std::int64_t{1} << 31) == std::int64_t{1} << 62);
  CHECK_FALSE(checked_mul(std::int64_t{1} << 32, std::int64_t{1} << 31));
  CHECK(checked_add(kMax - 1, 1) == kMax);
  CHECK_FALSE(checked_add(kMax, 1));
}

TEST_CASE("shape_numel: products that wrap are refused, also behind a zero dimension") {
  using V = std::vector<std::int64_t>;
  CHECK(shape_numel(V{}) == 1);
  CHECK(shape_numel(V{16, 8}) == 128);
  CHECK(shape_numel(V{4, 0, 3}) == 0);
  // 3 · 6148914691236517206 = 2^64 + 2 wraps to 2 in int64 arithmetic.
  CHECK_FALSE(shape_numel(V{3, 6148914691236517206}));
  // 2^32 · 2^32 wraps to 0.
  CHECK_FALSE(shape_numel(V{std::int64_t{1} << 32, std::int64_t{1} << 32}));
  CHECK_FALSE(shape_numel(V{0, std::int64_t{1} << 32, std::int64_t{1} << 32}));
  CHECK_FALSE(shape_numel(V{2, -1}));
  // 2^31 · 2^31 = 2^62 fits; one more factor 2 reaches 2^63, one past int64's maximum.
  CHECK(shape_numel(V{std::int64_t{1} << 31, std::int64_t{1} << 31}) == std::int64_t{1} << 62);
  CHECK_FALSE(shape_numel(V{std::int64_t{1} << 31, std::int64_t{1} << 31, 2}));
}

TEST_CASE("narrow_checked keeps values in the target's range and the given bounds") {
  CHECK(lgreco::narrow_checked<int>(2147483647) == 2147483647);
  CHECK_FALSE(lgreco::narrow_checked<int>(2147483648));
  CHECK_FALSE(lgreco::narrow_checked<int>(-2147483649LL));
  CHECK_FALSE(lgreco::narrow_checked<std::uint32_t>(-1));
  CHECK(lgreco::narrow_checked<int>(5, 1, 8) == 5);
  CHECK_FALSE(lgreco::narrow_checked<int>(9, 1, 8));
}
