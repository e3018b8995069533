#pragma once
/// Replaying a schedule over a trace with the kernels: what the schedule really delivers, in bytes
/// and error per step, next to what it predicted. Used by `lgreco replay --schedule` and by the
/// closed loop's report of delivered error.
///
/// Two modes:
/// - as scheduled (`only` = "scheduled"): every recorded step runs the setting of the phase in force
///   at that step (steps in no phase run "none"), with error feedback and PowerSGD's warm start
///   carried across phase changes within a burst and reset at each burst's start — what the DDP
///   hook does in the training job;
/// - per phase (`only` = a label, "last" or "all"): each selected phase's settings run over every
///   recorded step (state reset at each burst), as if that phase were in force throughout.
/// Bytes are what the kernels report per step (kernels/wire.hpp, including top-k's DGC warm-up
/// stages); the prediction of a step is Σ over layers of the schedule's wire plan at that step.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/json_util.hpp"
#include "kernels/compressor.hpp"
#include "pipeline/window_replay.hpp"
#include "planner/schedule.hpp"
#include "sim/replay.hpp"
#include "sim/replay_source.hpp"

namespace lgreco::pipeline {

/// Replay settings.
struct ScheduleReplayOptions {
  std::string only = "scheduled";  ///< "scheduled", "all", "last" or a phase label
  unsigned threads = 1;
  double memory_limit_bytes = 0;
  kernels::Backend backend = kernels::Backend::kCpu;
  std::uint64_t seed = 0;
  std::function<void(const sim::ReplayProgress&)> progress;
  /// Where windows are replayed (not owned; null: this process's threads), as LoopOptions::engine.
  const ReplayEngine* engine = nullptr;
};

/// One recorded step.
struct StepRecord {
  std::int64_t step = 0;
  std::string phase;               ///< the phase whose settings ran ("" = none in force)
  std::uint64_t bytes = 0;         ///< Σ over layers of the wire bytes the kernels reported
  std::uint64_t predicted_bytes = 0;  ///< Σ over layers of the registry's wire plan at this step
  double error = 0;                ///< Σ over layers of ‖acc_t − c_t‖_F
};

/// One run of a set of settings (a phase over all steps, or the whole schedule as scheduled).
struct ReplayRun {
  std::string label;               ///< phase label, or "scheduled"
  double predicted_bytes_per_step = 0;  ///< the phase's prediction (steady state); scheduled: mean of the steps'
  std::vector<StepRecord> steps;
  std::vector<double> layer_bytes_per_step, layer_error_per_step;  ///< per layer, means over the steps
  double bytes_per_step() const;   ///< mean over steps
  double error_per_step() const;   ///< mean over steps
};

/// The runs of a replay and what ran where.
struct ScheduleReplay {
  std::vector<ReplayRun> runs;
  std::size_t bursts = 0;
  std::string backend;
  Json replay_layout = nullptr;    ///< how the replays were spread over processes (null: one process)
};

/// Replays `schedule` over `source` (layers matched by name; every trace layer must be in every
/// phase). ConfigError naming `origin` for a mismatch or an unknown phase label.
ScheduleReplay replay_schedule(const sim::GradientSource& source, const planner::Schedule& schedule, const std::string& origin,
                               const ScheduleReplayOptions& opt);

}  // namespace lgreco::pipeline
