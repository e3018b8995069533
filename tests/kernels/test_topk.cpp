// Top-k: radix select against std::nth_element over boundary sizes and distributions; tie rule
// against a brute-force sort; DGC and random-k properties.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <set>

#include "core/rng.hpp"
#include "kernels/cpu/topk.hpp"
#include "test_util.hpp"

using namespace lgreco::kernels;
using namespace lgreco::kernels::test;

namespace {
const std::vector<std::uint64_t> kSizes = {1, 31, 32, 33, 255, 256, 257, 1000, 4099, 1u << 20};
const std::vector<Dist> kDists = {Dist::kNormal,   Dist::kHeavyTailed, Dist::kManyTies,   Dist::kAllEqual,
                                  Dist::kDenormal, Dist::kSignedZeros, Dist::kAllZero};

// k-th largest |x| by std::nth_element (the oracle).
float nth_abs(const std::vector<float>& x, std::uint64_t k) {
  std::vector<float> a(x.size());
  std::transform(x.begin(), x.end(), a.begin(), [](float v) { return std::fabs(v); });
  std::nth_element(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(k - 1), a.end(), std::greater<float>());
  return a[k - 1];
}

// Top-k by sorting (|x| descending, index ascending), indices returned increasing.
std::vector<std::uint32_t> brute_topk(const std::vector<float>& x, std::uint64_t k) {
  std::vector<std::uint32_t> idx(x.size());
  std::iota(idx.begin(), idx.end(), 0u);
  std::stable_sort(idx.begin(), idx.end(), [&](auto a, auto b) { return std::fabs(x[a]) > std::fabs(x[b]); });
  idx.resize(k);
  std::sort(idx.begin(), idx.end());
  return idx;
}
}  // namespace

TEST_CASE("radix select returns nth_element's k-th largest |x|", "[topk]") {
  std::uint64_t seed = 100;
  for (std::uint64_t n : kSizes)
    for (Dist d : kDists) {
      const auto x = make_input(n, d, ++seed);
      for (std::uint64_t k : {std::uint64_t{1}, n / 100 + 1, n / 3 + 1, n / 2, n - 1, n}) {
        if (k < 1 || k > n) continue;
        CAPTURE(n, dist_name(d), k, seed);
        const cpu::KthKey r = cpu::radix_select_abs(x, k);
        float t;
        std::memcpy(&t, &r.key, sizeof t);
        REQUIRE(same_bits(t, std::fabs(nth_abs(x, k))));
        const auto greater = static_cast<std::uint64_t>(
            std::count_if(x.begin(), x.end(), [&](float v) { return cpu::abs_key(v) > r.key; }));
        REQUIRE(r.count_greater == greater);
        REQUIRE(greater < k);
      }
    }
}

TEST_CASE("top-k selects the k largest |x| with ties to the lower index", "[topk]") {
  std::uint64_t seed = 500;
  for (std::uint64_t n : {1ull, 31ull, 32ull, 33ull, 255ull, 256ull, 257ull, 5000ull})
    for (Dist d : kDists) {
      const auto x = make_input(n, d, ++seed);
      for (std::uint64_t k : {std::uint64_t{1}, n / 10 + 1, n / 2 + 1, n}) {
        if (k > n) continue;
        CAPTURE(n, dist_name(d), k);
        std::vector<std::uint32_t> idx;
        cpu::topk_exact(x, k, idx);
        REQUIRE(idx == brute_topk(x, k));
      }
    }
  // Hand case: |x| = {1, 3, 3, 2, 3}, k = 2 → the two lowest-index 3s: indices 1, 2.
  std::vector<std::uint32_t> idx;
  cpu::topk_exact(std::vector<float>{1, -3, 3, 2, -3}, 2, idx);
  CHECK(idx == std::vector<std::uint32_t>{1, 2});
  cpu::topk_exact(std::vector<float>{}, 0, idx);
  CHECK(idx.empty());
}

TEST_CASE("DGC selection: subset above the threshold, truncated to k, equals exact top-k when enough pass", "[topk][dgc]") {
  for (std::uint64_t n : {100ull, 5000ull, 100000ull})
    for (Dist d : {Dist::kNormal, Dist::kHeavyTailed, Dist::kManyTies}) {
      const auto x = make_input(n, d, n + 17);
      const std::uint64_t k = std::max<std::uint64_t>(1, n / 100);
      std::vector<std::uint32_t> idx;
      const float t = cpu::topk_dgc(x, k, 9, 3, cpu::DgcSampling{}, idx);
      CAPTURE(n, dist_name(d), k, t, idx.size());
      REQUIRE(idx.size() <= k);
      REQUIRE(std::is_sorted(idx.begin(), idx.end()));
      for (auto i : idx) REQUIRE(std::fabs(x[i]) > t);
      const auto above = static_cast<std::uint64_t>(std::count_if(x.begin(), x.end(), [&](float v) { return std::fabs(v) > t; }));
      if (above >= k) REQUIRE(idx == brute_topk(x, k));
      else REQUIRE(idx.size() == above);
      std::vector<std::uint32_t> again;
      cpu::topk_dgc(x, k, 9, 3, cpu::DgcSampling{}, again);
      REQUIRE(again == idx);  // deterministic for a seed
    }
  std::vector<std::uint32_t> idx;
  cpu::topk_dgc(std::vector<float>(50, 0.0f), 1, 1, 1, cpu::DgcSampling{}, idx);
  CHECK(idx.empty());  // all-zero: nothing is above a zero threshold
}

TEST_CASE("random-k indices: k distinct, increasing, shared by seed, uniform inclusion", "[randomk]") {
  const std::uint64_t n = 1000, k = 50;
  std::vector<std::uint32_t> a, b, c;
  cpu::randomk_indices(n, k, 5, lgreco::rng::stream_of(3, 2), a);
  cpu::randomk_indices(n, k, 5, lgreco::rng::stream_of(3, 2), b);
  cpu::randomk_indices(n, k, 5, lgreco::rng::stream_of(4, 2), c);
  REQUIRE(a.size() == k);
  CHECK(std::adjacent_find(a.begin(), a.end(), std::greater_equal<>()) == a.end());
  CHECK(a == b);
  CHECK(a != c);
  // Definition: the k smallest Philox words (ties → lower index).
  std::vector<std::uint32_t> all(n);
  std::iota(all.begin(), all.end(), 0u);
  std::stable_sort(all.begin(), all.end(), [](auto x, auto y) { return lgreco::rng::bits_at(5, lgreco::rng::stream_of(3, 2), x) < lgreco::rng::bits_at(5, lgreco::rng::stream_of(3, 2), y); });
  all.resize(k);
  std::sort(all.begin(), all.end());
  CHECK(a == all);
  // Inclusion frequency over T steps: each index is kept with probability p = k/n; count ~
  // Binomial(T, p), sd = sqrt(T p (1−p)); allow 6 sd (false alarm < 1e-6 over n indices).
  const int T = 400;
  std::vector<int> hits(n, 0);
  for (int t = 0; t < T; ++t) {
    cpu::randomk_indices(n, k, 11, lgreco::rng::stream_of(static_cast<std::uint64_t>(t), 0), a);
    for (auto i : a) ++hits[i];
  }
  const double p = static_cast<double>(k) / n, mean = T * p, sd = std::sqrt(T * p * (1 - p));
  for (std::uint64_t i = 0; i < n; ++i) {
    CAPTURE(i, hits[i], mean, sd);
    REQUIRE(std::fabs(hits[i] - mean) <= 6 * sd);
  }
}

TEST_CASE("top-k on large inputs: sampled-bound path and its fallback give the exact answer", "[topk]") {
  // n ≥ 2^20 and k ≤ n/16 enable the sampled prefilter (see topk.cpp). Normal, heavy-tailed and
  // tied inputs exercise the short-list path (k = n/4 the plain path); the adversarial input below
  // puts 50 huge values exactly on the sampled positions (every 64th element) with k = 100, so the
  // sample overestimates the threshold, fewer than k keys pass, and the plain select must run.
  const std::uint64_t n = std::uint64_t{1} << 20;
  for (Dist d : {Dist::kNormal, Dist::kHeavyTailed, Dist::kManyTies, Dist::kAllEqual}) {
    const auto x = make_input(n, d, 77);
    for (std::uint64_t k : {std::uint64_t{1}, std::uint64_t{10486}, n / 4}) {
      CAPTURE(dist_name(d), k);
      std::vector<std::uint32_t> idx;
      cpu::topk_exact(x, k, idx);
      REQUIRE(idx == brute_topk(x, k));
    }
  }
  auto x = make_input(n, Dist::kNormal, 78);
  for (std::uint64_t t = 0; t < 50; ++t) x[t * 64] = 1000.0f + static_cast<float>(t);
  std::vector<std::uint32_t> idx;
  cpu::topk_exact(x, 100, idx);
  REQUIRE(idx == brute_topk(x, 100));
  const cpu::KthKey r = cpu::radix_select_abs(x, 100);
  float t;
  std::memcpy(&t, &r.key, sizeof t);
  CHECK(t == nth_abs(x, 100));
}
