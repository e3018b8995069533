#pragma once
/// The `time` engine: minimise the predicted step time (sim/timeline.hpp) subject to the error
/// budget Σ_l e_l(k_l) ≤ T.
///
/// Method. Errors are put on a grid of G steps of w = T/G, rounded up (ẽ = ⌈e/w⌉, so any plan with
/// Σ ẽ ≤ G meets the real budget). Buckets communicate in order and the comm stream obeys
/// end_b = max(ready_b, end_{b−1}) + comm_b, monotone in end_{b−1} and in comm_b, so
///   F_b[E] = min_{e ≤ E} max(ready_b, F_{b−1}[E − e]) + C_b[e],   F_{−1}[E] = 0,
/// where C_b[e] is the least communication time of bucket b using discretised error ≤ e, is exact
/// for the discretised problem. C_b comes from a per-bucket DP over its layers whose state is the
/// bucket's error and whose value is the Pareto set of (allreduce round 0, round 1, allgather byte
/// sums, kernel seconds) (each collective's time is monotone in its bytes; C_b adds the kernel
/// seconds). Sets larger than max_points keep the points of least communication time;
/// `exact_discretised` says whether that ever happened.
/// Kernel time: decompression runs on the comm stream after the bucket's collectives, so charging
/// it to C_b is exact. Compression really runs on the compute stream and delays every later
/// bucket's readiness, which would make readiness depend on earlier choices; the DP charges it to
/// its own bucket's C_b instead (a bucket-local stand-in that keeps the recursion exact in form),
/// and ready times use the backward compute times alone. The final plans are evaluated with
/// simulate_step, which puts compression where it runs.
///
/// Guarantee: when a reference plan is given it is evaluated too and the better of the two
/// (strictly smaller predicted step time wins, else the reference) is returned, so the result is
/// never worse than the reference on predicted time. Cost O(G²·buckets + G·F²·ΣK).
#include <optional>
#include <string>
#include <vector>

#include "planner/knapsack.hpp"
#include "sim/timeline.hpp"

namespace lgreco::planner {

/// One layer of the time problem; a layer with one candidate is fixed.
struct TimeLayer {
  std::vector<double> error;              ///< per candidate
  std::vector<sim::LayerComm> comm;       ///< per candidate: bytes split by collective, kernel times
};

/// Layers indexed like the step model's layer ids.
struct TimeProblem {
  sim::StepModel model;
  std::vector<TimeLayer> layers;
  double error_budget = 0;  ///< T over all layers (fixed ones included)
};

/// Knobs of the time engine.
struct TimeOptions {
  int grid = 1000;        ///< G
  int max_points = 8;     ///< Pareto points kept per (bucket state)
};

/// The time engine's answer.
struct TimeResult {
  std::vector<int> choice;            ///< per layer id
  PlanStatus status = PlanStatus::kFeasible;
  double step_s = 0;                  ///< simulate_step of the returned plan
  double total_error = 0;
  std::string source;                 ///< "time-dp" or "reference"
  std::optional<double> dp_step_s;    ///< the DP plan's predicted step (absent if it found none)
  std::optional<double> reference_step_s;
  bool exact_discretised = true;
};

/// Predicted step time of a choice (per layer id).
double predict_step_s(const TimeProblem& p, const std::vector<int>& choice, const net::CollectiveCost& cost);

/// Solves; `reference_choice` (per layer id, may be null) is the plan to beat.
TimeResult solve_time(const TimeProblem& p, const net::CollectiveCost& cost, const TimeOptions& opt,
                      const std::vector<int>* reference_choice);

}  // namespace lgreco::planner
