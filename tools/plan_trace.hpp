#pragma once
/// The main job: replay a trace window by window, plan each window from the previous one's tables
/// and apply that plan in the next window (closed loop), then write the phased schedule.
/// Used by `lgreco plan --trace`, `lgreco whatif` and `lgreco replay`.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/json_util.hpp"
#include "planner/plan.hpp"
#include "sim/replay.hpp"
#include "sim/replay_candidates.hpp"
#include "sim/replay_windows.hpp"
#include "tools/args.hpp"

namespace lgreco::cli {

/// Options shared by the commands that replay a trace, as text from the command line.
struct TraceJobArgs {
  std::string trace, family = "powersgd", defaults, engine = "reference", error_mode = "power";
  std::string backend = "auto", threads, seed = "0", warmup, period = "1000", acc = "10", memory_limit;
  std::string alpha = "1", rank_low = "0.5", rank_high = "2", min_numel = "1024";
};

/// Declares the shared options on a parser (--trace required unless `trace_required` is false).
void add_trace_job_options(ArgParser& p, TraceJobArgs& a, bool trace_required = true);

/// The resolved job.
struct TraceJob {
  std::filesystem::path trace;
  sim::Family family = sim::Family::kPowerSgd;
  sim::FamilyDefaults defaults;
  std::vector<std::pair<std::string, std::string>> default_kv;
  sim::CandidateRanges ranges;
  sim::WindowConfig windows;
  std::optional<std::int64_t> schedule_warmup;  ///< --warmup-steps (default: the first window's start)
  sim::ErrorMode error_mode = sim::ErrorMode::kPower;
  std::string backend_request = "auto";
  int threads = 0;
  double memory_limit_bytes = 0;  ///< replay admission limit (sim::ReplayOptions); 0 = none
  std::uint64_t seed = 0;
  planner::PlanOptions plan;
};

/// Default replay memory limit: half the machine's physical memory (0 when unknown).
double default_memory_limit_bytes();

/// Parses the shared options; UsageError/ConfigError naming the option and value.
TraceJob resolve_trace_job(const TraceJobArgs& a);

/// What the closed loop produced.
struct ClosedLoopResult {
  std::string model;
  int world_size = 1;
  sim::WindowPlan windows;
  planner::Tables tables;                      ///< one window per replayed window
  std::vector<planner::WindowPlan> plans;      ///< plans[k] = plan-(k+1), made from tables.windows[k]
  std::vector<planner::WindowPlan> uniform;    ///< the uniform plan evaluated on each window
  std::vector<std::vector<kernels::MethodSpec>> in_force;  ///< per window, per layer: what ran
  planner::PlanOptions plan;                   ///< the plan options used (forward_s resolved)
  std::optional<std::int64_t> schedule_warmup; ///< warm-up of the schedule (none: the first window's start)
  std::string backend;                         ///< "cpu" or "cuda": what ran
  double replay_s = 0, grad_bytes = 0;         ///< wall time and fp32 gradient bytes replayed
  double peak_task_bytes = 0;                  ///< replay: largest estimated bytes of concurrent layers
  unsigned peak_tasks = 0;                     ///< replay: most layers run at the same time
  Json provenance;                             ///< provenance_json({trace}), hashed while replaying
};

/// Runs the closed loop on a trace. The step model's forward time, unless set, is half the
/// recorded backward compute time (forward ≈ 2·FLOPs·params, backward ≈ 4·FLOPs·params). `cost` may be null (no time predictions; the time engine needs
/// it). Progress goes to `progress` (may be empty).
ClosedLoopResult run_closed_loop(const TraceJob& job, const sim::CollectiveCost* cost,
                                 const std::function<void(const sim::ReplayProgress&)>& progress);

struct Cluster;

/// The resolved configuration recorded in outputs.
Json trace_job_config(const TraceJob& job, const ClosedLoopResult& r, const Cluster* cluster);

/// The schedule document (schemas/schedule.schema.json) of a closed loop, built by
/// planner::build_schedule: warm-up (none) [0, N), uniform [N, W_0.end), plan-k [W_k.end, W_{k+1}.end)
/// (the last open); `config` is the resolved configuration to record.
Json schedule_json(const TraceJob& job, const ClosedLoopResult& r, const Json& config);

/// A readable summary of the final plan (per layer setting, bytes, error; totals vs uncompressed and
/// uniform), with the windows' notes.
std::string summary_text(const TraceJob& job, const ClosedLoopResult& r, const std::string& topology);

/// Progress printer for stderr (a no-op function when stderr is not a terminal).
std::function<void(const sim::ReplayProgress&)> stderr_progress();

/// `lgreco plan --trace ...`: entry point called by cmd_plan.cpp.
int run_plan_trace(const std::vector<std::string>& args);

}  // namespace lgreco::cli
