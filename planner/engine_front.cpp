// Pareto-front merging for the exact primal and the dual engines. A front holds, per reachable
// trade-off, the partial plans over layers 0..l that are not dominated: sorted by the constrained
// quantity ("weight": error for the primal, bytes for the dual) ascending, the objective ("cost")
// strictly descending. Partial sums whose weight already exceeds the budget are dropped, since
// both quantities are ≥ 0 and can only grow.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

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
  const auto weights = [&](std::size_t l) -> const std::vector<double>& { return dual ? k.layers[l].bytes : k.layers[l].error; };
  const auto costs = [&](std::size_t l) -> const std::vector<double>& { return dual ? k.layers[l].error : k.layers[l].bytes; };
  // Bounds that prune without changing the optimum: a partial plan whose weight plus the least
  // weight of the remaining layers exceeds the budget cannot be completed; one whose cost plus the
  // least remaining cost exceeds a known feasible plan's cost cannot win. Both keep borderline
  // points (relative slack 1e-12) because the suffix sums are rounded in another order.
  std::vector<double> rest_w(L + 1, 0), rest_c(L + 1, 0);
  for (std::size_t l = L; l-- > 0;) {
    rest_w[l] = rest_w[l + 1] + *std::min_element(weights(l).begin(), weights(l).end());
    rest_c[l] = rest_c[l + 1] + *std::min_element(costs(l).begin(), costs(l).end());
  }
  constexpr double kSlack = 1e-12;
  // A feasible plan to beat: the reference DP on the same roles (its plans meet the real budget).
  std::optional<KnapsackResult> incumbent;
  if (budget > 0 && L > 0) {
    Knapsack swapped;
    for (std::size_t l = 0; l < L; ++l) swapped.layers.push_back({weights(l), costs(l)});
    swapped.budget = budget;
    KnapsackResult r = solve_reference(swapped, ReferenceOptions{2000});
    if (r.status != PlanStatus::kInfeasible) incumbent = r;
  }
  const double upper = incumbent ? incumbent->total_bytes * (1 + kSlack) : std::numeric_limits<double>::infinity();
  std::vector<std::vector<Point>> fronts(L);
  std::vector<Point> prev = {{0.0, 0.0, -1, -1}};
  double gap_factor = 1;
  const double delta0 = opt.epsilon / (2.0 * std::max<std::size_t>(L, 1));
  for (std::size_t l = 0; l < L; ++l) {
    throw_if_cancelled();
    const auto& w = weights(l);
    const auto& c = costs(l);
    const double w_limit = budget + kSlack * (budget + rest_w[l + 1]) - rest_w[l + 1];
    // Fold the candidates in one by one: front ← Pareto-merge(front, prev shifted by candidate j).
    // Each shifted list is sorted by weight with strictly falling cost, so a linear merge (ties:
    // the point already in the front, i.e. the earlier candidate, first) keeps the front Pareto.
    std::vector<Point> front, shifted, merged;
    for (std::size_t j = 0; j < w.size(); ++j) {
      shifted.clear();
      for (std::size_t i = 0; i < prev.size(); ++i) {
        const double nw = prev[i].weight + w[j];
        if (nw > budget || nw > w_limit) break;  // the rest of the list weighs more
        const double nc = prev[i].cost + c[j];
        if (nc + rest_c[l + 1] > upper) continue;
        shifted.push_back({nw, nc, static_cast<std::int32_t>(i), static_cast<std::int32_t>(j)});
      }
      merged.clear();
      std::size_t x = 0, y = 0;
      while (x < front.size() || y < shifted.size()) {
        const bool take_front = y >= shifted.size() ||
                                (x < front.size() && (front[x].weight < shifted[y].weight ||
                                                      (front[x].weight == shifted[y].weight && front[x].cost <= shifted[y].cost)));
        const Point& p = take_front ? front[x++] : shifted[y++];
        if (merged.empty() || p.cost < merged.back().cost) merged.push_back(p);
      }
      front.swap(merged);
    }
    if (front.empty()) {
      if (incumbent) {  // everything left was provably no better than the incumbent
        KnapsackResult r;
        r.choice = incumbent->choice;
        evaluate_choice(k, r);
        r.gap_bound = gap_factor - 1;
        r.status = r.gap_bound == 0 ? PlanStatus::kOptimal : PlanStatus::kFeasible;
        return r;
      }
      KnapsackResult r;
      r.status = PlanStatus::kInfeasible;
      r.choice = dual ? least_bytes_choice(k) : least_error_choice(k);
      evaluate_choice(k, r);
      r.gap_bound = 0;
      return r;
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
  // The last point has the least cost among points within the budget; the incumbent wins only
  // when strictly cheaper (possible only after trimming).
  std::int32_t idx = static_cast<std::int32_t>(prev.size()) - 1;
  for (std::size_t l = L; l-- > 0;) {
    const Point& p = fronts[l][idx];
    r.choice[l] = p.cand;
    idx = p.parent;
  }
  evaluate_choice(k, r);
  if (incumbent) {
    const double inc_cost = incumbent->total_bytes;  // the swapped instance's "bytes" are our costs
    const double our_cost = dual ? r.total_error : r.total_bytes;
    if (inc_cost < our_cost) r.choice = incumbent->choice, evaluate_choice(k, r);
  }
  r.gap_bound = gap_factor - 1;
  r.status = r.gap_bound == 0 ? PlanStatus::kOptimal : PlanStatus::kFeasible;
  return r;
}

}  // namespace

KnapsackResult solve_exact(const Knapsack& k, const FrontOptions& opt) { return solve_front(k, opt, false); }
KnapsackResult solve_dual(const Knapsack& k, const FrontOptions& opt) { return solve_front(k, opt, true); }

}  // namespace lgreco::planner
