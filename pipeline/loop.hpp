#pragma once
/// The closed loop, lgreco's main job as a library: replay a trace window by window through the
/// compression kernels with the plan in force, tabulate every layer's candidates, plan the next
/// window from those tables, apply that plan in the next window, and build the phased schedule.
/// Used by `lgreco plan --trace`, `lgreco whatif --trace` and the tests; the CLI only parses
/// flags into LoopOptions and prints.
///
/// Timeline (sim/replay_windows.hpp, planner/schedule.hpp): window k is replayed with the plan made
/// from window k−1 (window 0 with the uniform default); plans[k] is made from window k and is in
/// force from the end of window k (schedule phase plan-k).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/json_util.hpp"
#include "kernels/compressor.hpp"
#include "network_models/cost.hpp"
#include "planner/plan.hpp"
#include "pipeline/predict.hpp"
#include "pipeline/window_replay.hpp"
#include "planner/schedule.hpp"
#include "sim/replay.hpp"
#include "sim/replay_candidates.hpp"
#include "sim/replay_windows.hpp"

namespace lgreco::pipeline {

/// Everything that shapes a closed loop (library words: the CLI maps its flags onto these).
struct LoopOptions {
  sim::Family family = sim::Family::kPowerSgd;
  sim::FamilyDefaults defaults;               ///< the uniform default settings of the family
  kernels::ParamList default_params;          ///< the defaults as given (recorded in outputs)
  sim::CandidateRanges ranges;
  sim::WindowConfig windows;
  std::optional<std::int64_t> schedule_warmup;  ///< warm-up of the schedule (none: the first window's start)
  sim::ErrorMode error_mode = sim::ErrorMode::kTrajectory;  ///< the delivered per-step error (docs/replay.md)
  kernels::Backend backend = kernels::Backend::kCpu;
  unsigned threads = 1;                       ///< replay worker threads (≥ 1)
  double memory_limit_bytes = 0;              ///< replay admission limit (sim::ReplayOptions); 0 = none
  std::uint64_t seed = 0;
  planner::PlanOptions plan;                  ///< engine, budget, constraints, kernel-time charge
  /// The compute side of step predictions (pipeline/predict.hpp) on this GPU (nullopt: an
  /// A100-class default); recorded compute times win when the trace has them for every layer.
  ComputeOptions compute;
  std::optional<net::GpuSpec> gpu;
  /// Where windows are replayed (not owned): null = this process's threads (local_engine());
  /// pipeline/distributed.hpp's engine spreads the layers over MPI ranks. The results are the same.
  const ReplayEngine* engine = nullptr;
};

/// Checks the options before any work (ConfigError naming the option and value): thread count,
/// window lengths, rank range, budget.
void validate(const LoopOptions& o);

/// What the closed loop produced.
struct LoopResult {
  std::string model;
  int world_size = 1;
  sim::WindowPlan windows;
  planner::Tables tables;                      ///< one window per replayed window
  std::vector<planner::WindowPlan> plans;      ///< plans[k] = plan-k, made from tables.windows[k]
  std::vector<planner::WindowPlan> uniform;    ///< the uniform plan evaluated on each window
  std::vector<std::vector<kernels::MethodSpec>> in_force;  ///< per window, per layer: what ran
  /// Per window, per layer: the mean ‖acc_t − c_t‖_F per step of the setting that ran, over the
  /// window's last acc_steps steps (the steps candidates are measured on): the delivered error.
  std::vector<std::vector<double>> delivered_error;
  planner::PlanOptions plan;                   ///< the plan options used (forward_s resolved)
  ComputeModel compute;                        ///< the compute side of the step predictions
  std::optional<std::int64_t> schedule_warmup; ///< warm-up of the schedule (none: the first window's start)
  std::string backend;                         ///< "cpu" or "cuda": what ran
  double replay_s = 0, grad_bytes = 0;         ///< wall time and fp32 gradient bytes replayed
  double peak_task_bytes = 0;                  ///< replay: largest estimated bytes of concurrent layers
  unsigned peak_tasks = 0;                     ///< replay: most layers run at the same time
  Json provenance = Json::object();            ///< provenance_json({trace}) (empty for a memory source)
  /// How the replay was spread over processes (WindowReplayer::layout; null for one process). The
  /// trace overload records it in the provenance as "replay".
  Json replay_layout = nullptr;
};

/// Progress callback (called serialised, from replay worker threads).
using Progress = std::function<void(const sim::ReplayProgress&)>;

/// Runs the closed loop on a gradient source. Compute times of the step predictions follow
/// pipeline/predict.hpp (recorded, else estimated, else none; forward = half the backward total
/// unless given) and are written into every table window. `cost` may be null (no time
/// predictions; the time engine needs it).
LoopResult run_closed_loop(const sim::GradientSource& source, const LoopOptions& o, const net::CollectiveCost* cost,
                           const Progress& progress = {});

/// The same on a trace file; the result's provenance hashes the file (concurrently with the replay).
LoopResult run_closed_loop(const std::filesystem::path& trace, const LoopOptions& o, const net::CollectiveCost* cost,
                           const Progress& progress = {});

/// What a setting delivered in one replayed window, against what was predicted for it.
struct Delivered {
  std::size_t window = 0;          ///< the replayed window
  std::string phase;               ///< the schedule phase in force there ("uniform", "plan-k")
  double delivered = 0;            ///< Σ over layers of the mean ‖acc_t − c_t‖_F per step that ran
  std::optional<double> predicted; ///< the plan's total error, from the window before (plan-k: window k)
  /// Σ of the uniform default's errors measured in the same window; comparable with `delivered`
  /// only in trajectory mode (the same per-step measure); nullopt otherwise.
  std::optional<double> uniform_same_window;
};

/// Per replayed window: the error the setting in force delivered (uniform in window 0, plan-k in
/// window k+1), what was predicted for it, and the uniform default's error in the same window.
std::vector<Delivered> delivered_errors(const LoopOptions& o, const LoopResult& r);

/// The resolved configuration recorded in outputs (family, defaults, engine, windows, replay).
Json loop_config(const LoopOptions& o, const LoopResult& r);

/// The phased schedule of a closed loop (planner::build_schedule: warm-up (none) [0, N), uniform
/// [N, W_0.end), plan-k [W_k.end, W_{k+1}.end), the last open), with the windows' notes as
/// warnings. `config` is the resolved configuration to record; `world_size` the ranks it is for.
/// Throws Error when the result is inconsistent (planner::check_schedule).
planner::Schedule loop_schedule(const LoopOptions& o, const LoopResult& r, const Json& config, int world_size);

}  // namespace lgreco::pipeline
