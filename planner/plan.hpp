#pragma once
/// Planning one window of candidate tables: constraints (include/exclude, pins, PowerSGD minimum
/// compression rate, per-layer error cap), the budget, the engine, and the predictions.
///
/// Layer roles:
/// - pinned (PlanOptions::pins): fixed to that setting; it must be one of the layer's
///   candidates, except "none", which is always available (error 0, 4·numel bytes);
/// - excluded (matching exclude_re, or not matching include_re): fixed to the layer's DEFAULT
///   candidate (the uniform setting), not to "none";
/// - planned: the remaining candidates after dropping PowerSGD candidates that do not compress at
///   the minimum compression rate (the option, else each candidate's own min_compression_rate;
///   the default candidate is never dropped by this rule) and candidates whose error exceeds the
///   per-layer cap. A layer left with one candidate is fixed.
/// Budget: T = α·Σ_l e_l(default) over all layers (or the explicit error budget); fixed layers'
/// errors are charged first, planned layers share the rest. For the dual engine a byte budget S
/// (or a time budget × bandwidth) with fixed layers' bytes charged first.
/// Planned layers are handed to the engines in DDP bucket order: (bucket, backward_order).
/// Degenerate input: T = 0 → the uniform plan, status kUniform and a warning; a budget no plan
/// meets → status kInfeasible with the least-error plan (dual: least-bytes plan).
#include <array>
#include <functional>
#include <optional>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "planner/engine_time.hpp"
#include "planner/knapsack.hpp"
#include "planner/tables.hpp"

namespace lgreco::planner {

/// The planning engines.
enum class Engine { kReference, kExact, kTime, kDual };
/// "reference" / "exact" / "time" / "dual".
std::string engine_name(Engine e);
/// Parses an engine name; ConfigError listing the names.
Engine parse_engine(const std::string& name);

/// What the plan is constrained by.
struct Budget {
  enum class Kind { kAlpha, kError, kBytes, kTime } kind = Kind::kAlpha;
  double value = 1.0;  ///< α, error, bytes per step, or seconds of communication per step
};
/// The largest α: an error budget a million times the uniform plan's is no constraint at all.
inline constexpr double kMaxAlpha = 1e6;
/// What is wrong with budget `b` for engine `e` ("" when nothing), one clause naming the value: α must be
/// > 0 and at most kMaxAlpha; an error, byte or time budget finite and >= 0; byte and time budgets go with the
/// dual engine only, and the dual engine takes nothing else. The one rule that plan_window, the closed loop,
/// the plan-options JSON and the command-line flags apply.
std::string budget_problem(const Budget& b, Engine e);
/// The value's part of that rule, without the value: "" when b.value suits its kind, else what is expected
/// ("expected a number > 0 and at most 1e+06"); callers name the value as their input spells it.
std::string budget_value_problem(const Budget& b);
/// budget_value_problem's kind name: "alpha", "error budget", "byte budget" or "time budget".
const char* budget_kind_label(Budget::Kind k);

/// Compression and decompression kernel seconds {compress_s, decompress_s} of a candidate on the
/// target device, for candidates whose tables carry no measured kernel_time_s.
using KernelTimeFn = std::function<std::array<double, 2>(const LayerTable&, const Candidate&)>;

/// Everything that shapes one plan.
struct PlanOptions {
  Engine engine = Engine::kReference;
  Budget budget;
  std::optional<std::string> include_re, exclude_re;      ///< ECMAScript regex, searched in the name
  std::vector<std::pair<std::string, kernels::MethodSpec>> pins;   ///< parameter name → setting
  std::optional<double> min_compression_rate;             ///< PowerSGD rule override
  std::optional<double> max_layer_error;                  ///< per-layer error cap
  ReferenceOptions reference;
  FrontOptions front;
  TimeOptions time;
  double forward_s = 0, optimizer_s = 0;                  ///< step-model constants for predictions
  std::optional<double> bandwidth_Bps;                    ///< for a time budget (dual)
  KernelTimeFn kernel_time;  ///< kernel time when the tables have none (empty: none charged)
};

/// How a layer's setting was decided (see the file comment).
enum class Role { kPlanned, kFixed, kExcluded, kPinned };
/// "planned" / "fixed" / "excluded" / "pinned".
std::string role_name(Role r);

/// The plan for one window, with the same figures for the uniform default and no compression.
struct WindowPlan {
  std::vector<int> choice;              ///< candidate per layer (window order); −1: a pinned "none"
  std::vector<Role> role;               ///< per layer
  std::vector<Candidate> chosen;        ///< the chosen candidate (a synthesised "none" for pins)
  PlanStatus status = PlanStatus::kFeasible;
  std::vector<std::string> warnings;
  double total_error = 0, total_bytes = 0;
  double uniform_error = 0, uniform_bytes = 0, uncompressed_bytes = 0;
  std::optional<double> error_budget, bytes_budget;
  double gap_bound = 0;                 ///< engine's optimality gap bound (−1: unknown)
  std::string detail;                   ///< engine-specific note (time engine: which plan won)
  std::optional<double> step_s, uniform_step_s, uncompressed_step_s;
};

/// Longest include/exclude expression, and longest parameter name matched against one. The
/// standard library's regex compiler and matcher recurse per character, so a longer pattern or
/// name could overflow the stack; real ones are far shorter.
inline constexpr std::size_t kMaxNamePatternChars = 1024;
inline constexpr std::size_t kMaxMatchedNameBytes = 4096;

/// Compiles an include/exclude expression (ECMAScript); ConfigError naming the expression when it
/// is invalid or longer than kMaxNamePatternChars.
std::regex compile_name_pattern(const std::string& re);

/// Plans one window. `cost` may be null (no time predictions); the time engine needs it
/// (ConfigError otherwise).
WindowPlan plan_window(const Window& w, const PlanOptions& opt, const net::CollectiveCost* cost);

/// The uniform plan (every layer at its default), with predictions; status "uniform".
WindowPlan uniform_plan(const Window& w, const PlanOptions& opt, const net::CollectiveCost* cost);

/// The one step-time prediction of lgreco (plan, whatif and simulate all call it): the window's
/// step model (step_model_of with opt.forward_s / opt.optimizer_s) with `chosen` settings, one per
/// layer (layer_comm_of with opt.kernel_time), on `cost` (sim::simulate_step).
sim::StepResult predict_step(const Window& w, const std::vector<Candidate>& chosen, const PlanOptions& opt,
                             const net::CollectiveCost& cost);

/// The uncompressed setting ("none") of every layer of a window.
std::vector<Candidate> uncompressed(const Window& w);

/// The step model of a window: backward times from compute_time_s (0 when absent), backward order
/// from backward_order, buckets in ascending bucket index.
sim::StepModel step_model_of(const Window& w, double forward_s, double optimizer_s);

/// A candidate's communication split for the timeline, from the registry's wire plan
/// (kernels/wire.hpp: PowerSGD P/Q in allreduce rounds 0/1; allgather methods in the allgather;
/// the candidate's bytes are the same figure, checked when the tables were read). Kernel time: the
/// candidate's measured kernel_time_s split evenly between compression (before the collective)
/// and decompression (after it), as sim::layer_comm does with a device profile; else
/// `kernel_time`'s figures; else none. "none" candidates cost no kernel time.
sim::LayerComm layer_comm_of(const LayerTable& layer, const Candidate& c, const KernelTimeFn& kernel_time = {});

}  // namespace lgreco::planner
