#pragma once
/// The multiple-choice knapsack the engines solve, independent of tables and schedules:
/// choose one candidate k_l per layer to minimise Σ_l bytes_l(k_l) subject to Σ_l error_l(k_l) ≤ T
/// (primal), or to minimise Σ_l error_l(k_l) subject to Σ_l bytes_l(k_l) ≤ S (dual).
/// Layers are in the order the engine processes them (the planner passes DDP bucket order);
/// candidates are in tie-break order (an earlier candidate wins a tie).
#include <cstdint>
#include <string>
#include <vector>

namespace lgreco::planner {

/// One layer's candidates: parallel arrays, finite and ≥ 0.
struct KnapsackLayer {
  std::vector<double> error;
  std::vector<double> bytes;
};

/// A knapsack instance. Engines throw InputError naming the layer and candidate for NaN/Inf or
/// negative entries and for an empty layer.
struct Knapsack {
  std::vector<KnapsackLayer> layers;
  double budget = 0;  ///< T (error) for primal engines, S (bytes) for the dual engine
};

/// Outcome of a plan. kInfeasible comes with the least-error plan (primal) or the least-bytes
/// plan (dual), so the caller always gets a plan. kUniform: every layer at its default (the
/// uniform plan itself, or a degenerate budget); engines never return it.
enum class PlanStatus { kOptimal, kFeasible, kInfeasible, kUniform };

/// "optimal" / "feasible" / "infeasible" / "uniform".
std::string status_name(PlanStatus s);

/// An engine's answer.
struct KnapsackResult {
  PlanStatus status = PlanStatus::kOptimal;
  std::vector<int> choice;      ///< candidate index per layer
  double total_error = 0;       ///< Σ error of the choice (layer order summation)
  double total_bytes = 0;       ///< Σ bytes of the choice
  /// Guaranteed relative gap of the objective to the optimum of the undiscretised problem
  /// (0 = exact); negative when no bound is known (the reference DP's discretisation).
  double gap_bound = 0;
  /// Bytes of the parent table the reference DP allocated (0 for other engines).
  std::size_t parent_table_bytes = 0;
};

/// Throws InputError for empty layers, mismatched arrays, NaN/Inf or negative values.
void check_knapsack(const Knapsack& k);

/// Σ error and Σ bytes of a choice, summed in layer order.
void evaluate_choice(const Knapsack& k, KnapsackResult& r);

/// Per layer the least-error candidate (ties: fewer bytes, then the earlier candidate).
std::vector<int> least_error_choice(const Knapsack& k);
/// Per layer the least-bytes candidate (ties: less error, then the earlier candidate).
std::vector<int> least_bytes_choice(const Knapsack& k);

// ---- engines -------------------------------------------------------------------------------------

/// Options of the reference DP.
struct ReferenceOptions {
  int buckets = 10000;  ///< B
};

/// The L-GreCo reference program, exactly (docs/reference-lgreco.md; docs/planner-engines.md):
/// w = T/B; ẽ_l(k) = clip(⌈min(e_l(k), T+1)/w⌉, 1, B); columns b = 0..B;
/// DP[−1][0] = ∞, DP[−1][b ≥ 1] = 0 (so DP[0][b] = min over k with ẽ_0(k) < b of s_0(k));
/// DP[l][b] = min_k DP[l−1][b − ẽ_l(k)] + s_l(k) (∞ for b − ẽ < 0), candidates scanned in order
/// with strict <; answer: the first b minimising DP[L−1][b]; backtrack through a parent table of
/// one byte per (layer, column) (two bytes when a layer has more than 256 candidates).
/// Effectively Σ ẽ ≤ B − 1. Requires T > 0 and finite. Cost O(L·K·B), memory O(L·B) bytes.
/// Candidates dominated by an earlier candidate (ẽ' ≤ ẽ and s' ≤ s) are skipped: they can never
/// win because DP rows are non-increasing in b and rounding is monotone.
KnapsackResult solve_reference(const Knapsack& k, const ReferenceOptions& opt = {});

/// The discretised errors ẽ_l(k) the reference DP uses (for tests and reports).
std::vector<std::vector<std::int32_t>> reference_discretise(const Knapsack& k, int buckets);

/// Options of the Pareto-front engines.
struct FrontOptions {
  std::size_t max_front = 20000;   ///< points kept per layer before ε-trimming starts
  double epsilon = 1e-3;           ///< total relative objective slack allowed when trimming
};

/// Exact optimum of the primal problem on undiscretised errors by merging (error, bytes) Pareto
/// fronts layer by layer, dropping dominated points and partial sums already over the budget
/// (errors are ≥ 0). When a front exceeds max_front it is trimmed: a point is dropped when an
/// earlier kept point (less or equal error) has at most (1+δ) times its bytes; after t trims
/// the bytes are within Π(1+δ_i) of the optimum, reported as gap_bound = Π(1+δ_i) − 1 (0 when no
/// trimming happened). δ starts at ε/(2L) and doubles until the front fits.
KnapsackResult solve_exact(const Knapsack& k, const FrontOptions& opt = {});

/// The dual (Kimad-style): minimise Σ error subject to Σ bytes ≤ S (k.budget), same front
/// merging with the roles of error and bytes swapped; trimming bounds the error gap.
KnapsackResult solve_dual(const Knapsack& k, const FrontOptions& opt = {});

}  // namespace lgreco::planner
