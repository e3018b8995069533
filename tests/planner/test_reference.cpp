// The optimised reference DP against the plain transcription of its rules (naive_reference.hpp).
#include <catch2/catch.hpp>

#include <random>

#include "naive_reference.hpp"
#include "planner/knapsack.hpp"
#include "core/error.hpp"

using namespace lgreco::planner;

namespace {

// Random instance with many ties: errors and bytes drawn from small sets; some errors above T.
Knapsack random_instance(std::mt19937_64& rng, int L, int K, bool ties) {
  Knapsack k;
  std::uniform_int_distribution<int> small(0, 4);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  double uniform_err = 0;
  for (int l = 0; l < L; ++l) {
    KnapsackLayer layer;
    const int kk = 1 + static_cast<int>(rng() % K);
    for (int c = 0; c < kk; ++c) {
      layer.error.push_back(ties ? 0.5 * small(rng) : u(rng) * 3);
      layer.bytes.push_back(ties ? 100.0 * small(rng) : std::floor(u(rng) * 1000));
    }
    uniform_err += layer.error[0];
    k.layers.push_back(layer);
  }
  // Budgets around the uniform total, sometimes tiny so that errors exceed T + 1.
  const double f = (rng() % 4 == 0) ? 0.05 : 0.5 + u(rng);
  k.budget = std::max(1e-3, f * uniform_err);
  return k;
}

}  // namespace

TEST_CASE("reference DP equals the naive transcription of the rules on random instances", "[reference]") {
  std::mt19937_64 rng(20261202);
  int feasible = 0, infeasible = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int L = 1 + static_cast<int>(rng() % 7);
    const int K = 1 + static_cast<int>(rng() % 6);
    const int B = std::vector<int>{1, 2, 7, 31, 64, 65, 100, 257}[rng() % 8];
    const bool ties = trial % 2 == 0;
    Knapsack k = random_instance(rng, L, K, ties);
    CAPTURE(trial, L, K, B, ties, k.budget);
    const auto naive = testing::naive_reference(k, B);
    const auto fast = solve_reference(k, ReferenceOptions{B});
    REQUIRE(naive.feasible == (fast.status != PlanStatus::kInfeasible));
    if (naive.feasible) {
      ++feasible;
      REQUIRE(fast.choice == naive.choice);
      // A plan of the reference DP meets the real budget: Σ e ≤ Σ ẽ·w ≤ (B − 1)·w < T.
      REQUIRE(fast.total_error <= k.budget);
    } else {
      ++infeasible;
      REQUIRE(fast.choice == least_error_choice(k));
    }
  }
  CHECK(feasible > 100);
  CHECK(infeasible > 5);
}

TEST_CASE("reference DP with B = 10000 and more than 256 candidates matches the naive rules", "[reference]") {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 6; ++trial) {
    const int K = trial < 3 ? 40 : 300;  // > 256 switches the parent table to two bytes
    Knapsack k = random_instance(rng, 4, K, trial % 2 == 0);
    CAPTURE(trial, K);
    const auto naive = testing::naive_reference(k, 10000);
    const auto fast = solve_reference(k);
    REQUIRE(naive.feasible == (fast.status != PlanStatus::kInfeasible));
    if (naive.feasible) REQUIRE(fast.choice == naive.choice);
  }
}

TEST_CASE("reference DP tie rules: lower candidate and least discretised error win", "[reference]") {
  // Two layers, two candidates with equal bytes: the earlier candidate wins the tie.
  Knapsack k;
  k.layers = {{{1.0, 1.0}, {10, 10}}, {{1.0, 2.0}, {5, 5}}};
  k.budget = 10;
  auto r = solve_reference(k, ReferenceOptions{100});
  REQUIRE(r.status == PlanStatus::kFeasible);
  CHECK(r.choice == std::vector<int>{0, 0});
  // Candidate 1 strictly cheaper but needs more error than allowed: e > T+1 is clipped to B buckets.
  Knapsack big;
  big.layers = {{{50.0, 0.5}, {1, 9}}};
  big.budget = 1;
  r = solve_reference(big, ReferenceOptions{100});
  CHECK(r.choice == std::vector<int>{1});
}

TEST_CASE("reference DP rejects non-finite input and a zero budget", "[reference]") {
  Knapsack k;
  k.layers = {{{std::nan(""), 1.0}, {1, 2}}};
  k.budget = 1;
  CHECK_THROWS_AS(solve_reference(k), lgreco::InputError);
  k.layers = {{{1.0}, {1}}};
  k.budget = 0;
  CHECK_THROWS_AS(solve_reference(k), lgreco::InputError);
}
