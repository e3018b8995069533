// The exact and dual engines against brute-force enumeration; budget properties of all engines.
#include <catch2/catch.hpp>

#include <functional>
#include <limits>
#include <random>

#include "core/error.hpp"
#include "planner/knapsack.hpp"

using namespace lgreco::planner;

namespace {

struct Best {
  bool feasible = false;
  double objective = std::numeric_limits<double>::infinity();
};

// Enumerates every plan; sums in layer order like the engines. dual: minimise error s.t. bytes.
Best brute_force(const Knapsack& k, bool dual) {
  Best best;
  std::vector<int> c(k.layers.size(), 0);
  std::function<void(std::size_t)> rec = [&](std::size_t l) {
    if (l == k.layers.size()) {
      double e = 0, s = 0;
      for (std::size_t i = 0; i < c.size(); ++i) e += k.layers[i].error[c[i]], s += k.layers[i].bytes[c[i]];
      const double weight = dual ? s : e, cost = dual ? e : s;
      if (weight <= k.budget && cost < best.objective) best = {true, cost};
      return;
    }
    for (std::size_t j = 0; j < k.layers[l].error.size(); ++j) {
      c[l] = static_cast<int>(j);
      rec(l + 1);
    }
  };
  rec(0);
  return best;
}

Knapsack random_instance(std::mt19937_64& rng, bool integers) {
  std::uniform_real_distribution<double> u(0, 1);
  Knapsack k;
  const int L = 1 + static_cast<int>(rng() % 6);
  for (int l = 0; l < L; ++l) {
    KnapsackLayer layer;
    const int K = 1 + static_cast<int>(rng() % 5);
    for (int c = 0; c < K; ++c) {
      layer.error.push_back(integers ? static_cast<double>(rng() % 5) : u(rng) * 4);
      layer.bytes.push_back(integers ? static_cast<double>(rng() % 5) * 64 : std::round(u(rng) * 5000));
    }
    k.layers.push_back(layer);
  }
  return k;
}

double sum_min(const Knapsack& k, bool bytes) {
  double t = 0;
  for (const auto& l : k.layers) {
    const auto& v = bytes ? l.bytes : l.error;
    t += *std::min_element(v.begin(), v.end());
  }
  return t;
}

}  // namespace

TEST_CASE("exact engine equals brute force on random small instances", "[exact]") {
  std::mt19937_64 rng(11);
  int infeasible = 0;
  for (int trial = 0; trial < 500; ++trial) {
    Knapsack k = random_instance(rng, trial % 2 == 0);
    const double lo = sum_min(k, false);
    k.budget = std::max(0.0, lo * (0.8 + 0.8 * std::uniform_real_distribution<double>(0, 1)(rng)));
    CAPTURE(trial, k.layers.size(), k.budget);
    const Best bf = brute_force(k, false);
    const auto r = solve_exact(k);
    REQUIRE(bf.feasible == (r.status != PlanStatus::kInfeasible));
    if (bf.feasible) {
      REQUIRE(r.status == PlanStatus::kOptimal);
      REQUIRE(r.gap_bound == 0);
      REQUIRE(r.total_bytes == bf.objective);
      REQUIRE(r.total_error <= k.budget);
    } else {
      ++infeasible;
      REQUIRE(r.choice == least_error_choice(k));
    }
  }
  CHECK(infeasible > 10);
}

TEST_CASE("dual engine equals brute force on random small instances", "[dual]") {
  std::mt19937_64 rng(12);
  for (int trial = 0; trial < 500; ++trial) {
    Knapsack k = random_instance(rng, trial % 2 == 1);
    k.budget = sum_min(k, true) * (0.9 + 0.6 * std::uniform_real_distribution<double>(0, 1)(rng));
    CAPTURE(trial, k.budget);
    const Best bf = brute_force(k, true);
    const auto r = solve_dual(k);
    REQUIRE(bf.feasible == (r.status != PlanStatus::kInfeasible));
    if (bf.feasible) {
      REQUIRE(r.total_error == bf.objective);
      REQUIRE(r.total_bytes <= k.budget);
    }
  }
}

TEST_CASE("raising the budget never increases the optimum", "[exact][dual][reference]") {
  std::mt19937_64 rng(13);
  for (int trial = 0; trial < 200; ++trial) {
    Knapsack k = random_instance(rng, false);
    const double lo = sum_min(k, false);
    double prev_bytes = std::numeric_limits<double>::infinity();
    for (double f : {1.0, 1.1, 1.3, 1.6, 2.0, 3.0, 10.0}) {
      k.budget = lo * f + 1e-9;
      const auto r = solve_exact(k);
      CAPTURE(trial, f);
      REQUIRE(r.status == PlanStatus::kOptimal);
      REQUIRE(r.total_bytes <= prev_bytes);
      prev_bytes = r.total_bytes;
      // The reference DP's plan is feasible whenever it finds one, and never beats the optimum.
      const auto ref = solve_reference(k, ReferenceOptions{1000});
      if (ref.status != PlanStatus::kInfeasible) {
        REQUIRE(ref.total_error <= k.budget);
        REQUIRE(ref.total_bytes >= r.total_bytes);
      }
    }
    double prev_err = std::numeric_limits<double>::infinity();
    const double slo = sum_min(k, true);
    for (double f : {1.0, 1.2, 1.5, 2.0, 4.0}) {
      k.budget = slo * f;
      const auto d = solve_dual(k);
      REQUIRE(d.status == PlanStatus::kOptimal);
      REQUIRE(d.total_error <= prev_err);
      prev_err = d.total_error;
    }
  }
}

TEST_CASE("exact engine trims a blown-up front and reports a bound it meets", "[exact]") {
  // 14 layers × 6 candidates with incommensurable values: the full front grows past the cap.
  std::mt19937_64 rng(14);
  std::uniform_real_distribution<double> u(0, 1);
  Knapsack k;
  for (int l = 0; l < 14; ++l) {
    KnapsackLayer layer;
    for (int c = 0; c < 6; ++c) {
      layer.error.push_back(u(rng) * 10);
      layer.bytes.push_back(1000 + u(rng) * 1e6);
    }
    k.layers.push_back(layer);
  }
  k.budget = sum_min(k, false) * 3;
  const auto full = solve_exact(k, FrontOptions{10000000, 1e-3});
  REQUIRE(full.gap_bound == 0);
  const auto capped = solve_exact(k, FrontOptions{5, 0.05});
  CAPTURE(capped.gap_bound, capped.total_bytes, full.total_bytes);
  REQUIRE(capped.gap_bound > 0);
  REQUIRE(capped.total_error <= k.budget);
  REQUIRE(capped.total_bytes >= full.total_bytes);
  REQUIRE(capped.total_bytes <= full.total_bytes * (1 + capped.gap_bound));
}
