#pragma once
// Shared helpers of the kernels tests: seeded inputs of several distributions.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/rng.hpp"

namespace lgreco::kernels::test {

/// Input distributions used across the property tests.
enum class Dist { kNormal, kHeavyTailed, kManyTies, kAllEqual, kDenormal, kSignedZeros, kAllZero };

inline const char* dist_name(Dist d) {
  switch (d) {
    case Dist::kNormal: return "normal";
    case Dist::kHeavyTailed: return "heavy-tailed";
    case Dist::kManyTies: return "many-ties";
    case Dist::kAllEqual: return "all-equal";
    case Dist::kDenormal: return "denormal";
    case Dist::kSignedZeros: return "signed-zeros";
    case Dist::kAllZero: return "all-zero";
  }
  return "?";
}

/// n values of a distribution from (seed, stream 7).
inline std::vector<float> make_input(std::uint64_t n, Dist d, std::uint64_t seed) {
  std::vector<float> x(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    const double z = rng::normal_at(seed, 7, i);
    const float u = rng::uniform_at(seed, 8, i);
    switch (d) {
      case Dist::kNormal: x[i] = static_cast<float>(z); break;
      case Dist::kHeavyTailed: x[i] = static_cast<float>(z / std::max(1e-3, std::fabs(rng::normal_at(seed, 9, i)))); break;
      case Dist::kManyTies: x[i] = static_cast<float>(std::floor(u * 5.0f) - 2.0f); break;  // {−2..2}
      case Dist::kAllEqual: x[i] = -0.75f; break;
      case Dist::kDenormal: x[i] = static_cast<float>(z) * 1e-40f; break;
      case Dist::kSignedZeros: x[i] = u < 0.3f ? -0.0f : (u < 0.6f ? 0.0f : static_cast<float>(z)); break;
      case Dist::kAllZero: x[i] = 0.0f; break;
    }
  }
  return x;
}

/// Bitwise equality of floats (distinguishes −0 and +0).
inline bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace lgreco::kernels::test
