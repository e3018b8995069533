// Pareto-front merging for the exact primal and the dual engines. A front holds, per reachable
// trade-off, the partial plans over layers 0..l that are not dominated: sorted by the constrained
// quantity ("weight": error for the primal, bytes for the dual) ascending, the objective ("cost")
// strictly descending. Partial sums whose weight already exceeds the budget are dropped, since
// both quantities are ≥ 0 and can only grow.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/cancel.hpp"
#include "core/error.hpp"
#include "planner/knapsack.hpp"

namespace lgreco::planner {
namespace {

struct Point {
  double weight, cost;
  std::int32_t parent;  // index into the previous layer's front
  std::int32_t cand;    // candidate of this layer
};

// Drops p when the last kept point q (weight ≤ p's) has cost ≤ (1+δ)·cost_p. Every dropped point
// keeps a representative with no more weight and at most (1+δ) times its cost; adding the same
// later candidates preserves both relations.
std::vector<Point> trim(const std::vector<Point>& f, double delta) {
  std::vector<Point> out;
  for (const Point& p : f) {
    if (!out.empty() && out.back().cost <= (1 + delta) * p.cost) continue;
    out.push_back(p);
  }
  return out;
}

KnapsackResult solve_front(const Knapsack& k, const FrontOptions& opt, bool dual) {
  check_knapsack(k);
  const double budget = k.budget;
  if (!std::isfinite(budget) || budget < 0) {
    throw InputError(std::string(dual ? "dual" : "exact") + " engine: budget " + std::to_string(budget) + "; expected a finite value >= 0");
  }
  if (opt.max_front < 2) throw ConfigError("front engine: max_front must be at least 2");
  const std::size_t L = k.layers.size();
  std::vector<std::vector<Point>> fronts(L);
  std::vector<Point> prev = {{0.0, 0.0, -1, -1}};
  double gap_factor = 1;
  const double delta0 = opt.epsilon / (2.0 * std::max<std::size_t>(L, 1));
  for (std::size_t l = 0; l < L; ++l) {
    throw_if_cancelled();
    const auto& w = dual ? k.layers[l].bytes : k.layers[l].error;
    const auto& c = dual ? k.layers[l].error : k.layers[l].bytes;
    std::vector<Point> all;
    all.reserve(prev.size() * w.size());
    for (std::size_t i = 0; i < prev.size(); ++i) {
      for (std::size_t j = 0; j < w.size(); ++j) {
        const double nw = prev[i].weight + w[j];
        if (nw > budget) continue;
        all.push_back({nw, prev[i].cost + c[j], static_cast<std::int32_t>(i), static_cast<std::int32_t>(j)});
      }
    }
    if (all.empty()) {
      KnapsackResult r;
      r.status = PlanStatus::kInfeasible;
      r.choice = dual ? least_bytes_choice(k) : least_error_choice(k);
      evaluate_choice(k, r);
      r.gap_bound = 0;
      return r;
    }
    // Generation order (previous point, then candidate) breaks remaining ties deterministically.
    std::stable_sort(all.begin(), all.end(), [](const Point& a, const Point& b) {
      return a.weight < b.weight || (a.weight == b.weight && a.cost < b.cost);
    });
    std::vector<Point> front;
    for (const Point& p : all) {
      if (front.empty() || p.cost < front.back().cost) front.push_back(p);
    }
    if (front.size() > opt.max_front) {
      double delta = delta0;
      std::vector<Point> t = trim(front, delta);
      while (t.size() > opt.max_front) {
        delta *= 2;
        t = trim(front, delta);
      }
      gap_factor *= 1 + delta;
      front = std::move(t);
    }
    fronts[l] = front;
    prev = std::move(front);
  }
  KnapsackResult r;
  r.choice.assign(L, 0);
  // The last point has the least cost among points within the budget.
  std::int32_t idx = static_cast<std::int32_t>(prev.size()) - 1;
  for (std::size_t l = L; l-- > 0;) {
    const Point& p = fronts[l][idx];
    r.choice[l] = p.cand;
    idx = p.parent;
  }
  evaluate_choice(k, r);
  r.gap_bound = gap_factor - 1;
  r.status = r.gap_bound == 0 ? PlanStatus::kOptimal : PlanStatus::kFeasible;
  return r;
}

}  // namespace

KnapsackResult solve_exact(const Knapsack& k, const FrontOptions& opt) { return solve_front(k, opt, false); }
KnapsackResult solve_dual(const Knapsack& k, const FrontOptions& opt) { return solve_front(k, opt, true); }

}  // namespace lgreco::planner
