#pragma once
/// Step-time predictions, one code path for every command (`plan`, `whatif`, `simulate`): the
/// compute side of a step (ComputeModel) is decided once by the rule below and written into the
/// tables' layers and the plan options; the step itself is always planner::predict_step (DDP
/// buckets, one communication stream, kernel time, sim/timeline.hpp).
///
/// Compute times, per layer:
/// - recorded: the trace's (or tables') compute_time_s when every layer has one, × recorded_scale
///   when that is not 1 (times recorded on other hardware, with a note);
/// - estimated: otherwise, when FLOP information is given (a layers file) or the model is a built-in
///   preset (traces/presets.hpp) with the same parameters, backward_s = 4·numel·uses_per_sample·batch
///   / (F · peak) — the FLOPs at a fraction F (default 0.4) of the GPU's dense 16-bit peak
///   (sim::flop_backward_s);
/// - none: otherwise zero compute (communication only); the note says so.
/// Forward time = half the backward total (forward ≈ 2·FLOPs·params, backward ≈ 4·FLOPs·params)
/// unless given; optimizer time 0 unless given. Every estimate comes with a one-line note that the
/// commands print.
#include <optional>
#include <string>
#include <vector>

#include "network_models/topology.hpp"
#include "planner/plan.hpp"
#include "planner/tables.hpp"

namespace lgreco::pipeline {

/// Where a step's compute times come from.
enum class ComputeSource { kRecorded, kEstimated, kNone };
/// "recorded" / "estimated" / "none".
std::string to_string(ComputeSource s);

/// The compute side of a step.
struct ComputeModel {
  ComputeSource source = ComputeSource::kNone;
  std::vector<double> backward_s;  ///< per layer (window order)
  double forward_s = 0, optimizer_s = 0;
  double achieved_fraction = 0.4;  ///< F of the estimate
  std::string gpu;                 ///< the GPU of the estimate
  std::string note;                ///< one line for the user when not recorded; empty otherwise
};

/// FLOP information for the estimate when the model is no preset (a layers file): uses per
/// sample of every layer and the per-GPU batch.
struct FlopSpec {
  std::vector<std::int64_t> uses_per_sample;  ///< per layer
  std::int64_t batch_per_gpu = 1;
  std::string origin;                         ///< what it came from, for the note
};

/// Options of the rule above.
struct ComputeOptions {
  double achieved_fraction = 0.4;          ///< F, in (0, 1]
  std::optional<double> forward_s;         ///< given forward time (else half the backward total)
  double optimizer_s = 0;
  std::optional<FlopSpec> flops;           ///< used instead of a preset when given
  /// Recorded times × this (> 0): recorded on other hardware than the one predicted (a CPU
  /// recording of a model to be trained on GPUs: the ratio of the two machines' throughputs).
  double recorded_scale = 1;
};

/// One layer as the rule sees it.
struct ComputeLayer {
  std::string name;
  std::vector<std::int64_t> shape;
  std::optional<double> recorded_s;  ///< recorded backward time, when any
};

/// Decides the compute model of these layers for `model` on `gpu` (nullptr: an A100-class default,
/// sim::DeviceModel). ConfigError for a fraction outside (0, 1] or negative times.
ComputeModel compute_model(const std::vector<ComputeLayer>& layers, const std::string& model, const net::GpuSpec* gpu,
                           const ComputeOptions& opt = {});
/// The same for a window's layers.
ComputeModel compute_model(const planner::Window& w, const std::string& model, const net::GpuSpec* gpu,
                           const ComputeOptions& opt = {});

/// Writes the model into every window of the tables (compute_time_s of each layer) and into the
/// plan options (forward_s, optimizer_s), so that plans and predictions use it.
void apply_compute(const ComputeModel& c, planner::Tables& t, planner::PlanOptions& opt);

/// The compute model as recorded in outputs (with the recorded_scale it used).
Json compute_json(const ComputeModel& c, double recorded_scale = 1);

/// Every window of candidate tables planned, as `lgreco plan --tables` and the Python package's
/// native plan_tables both do: with a cost model, the compute rule above is applied first (the last
/// window's layers decide it); each window's ConfigError is prefixed with origin and the window.
/// The compute rule applied to tables when a cost model is given (the last window's layers decide
/// it): what plan_all_windows does before planning; nullopt without a cost model.
std::optional<ComputeModel> apply_compute_rule(planner::Tables& t, planner::PlanOptions& opt, const net::CollectiveCost* cost,
                                               const net::GpuSpec* gpu, const ComputeOptions& co, const std::string& origin);
struct TablesPlan {
  std::vector<planner::WindowPlan> plans;
  std::optional<ComputeModel> compute;  ///< set when a cost model was given
};
TablesPlan plan_all_windows(planner::Tables& t, planner::PlanOptions& opt, const net::CollectiveCost* cost, const net::GpuSpec* gpu,
                            const ComputeOptions& co, const std::string& origin);

}  // namespace lgreco::pipeline
