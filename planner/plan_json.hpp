#pragma once
/// Plan options and window plans as JSON: the "config" form `lgreco plan` records in a schedule,
/// read back into PlanOptions (the Python native module plans online with it, so a job and
/// `lgreco plan --tables` run the same options), and a window's plan as a document.
///
/// Plan options (every key optional; absent keys take `lgreco plan`'s defaults; unknown keys are
/// ConfigError naming the key):
///   engine                "reference" | "exact" | "time" | "dual"
///   budget                {"kind": "alpha"|"error"|"bytes"|"time", "value": number} (α = 1)
///   include, exclude      ECMAScript regex or null
///   excluded_layers_stay_at  "default" (the only rule; recorded for readers)
///   pins                  {parameter name: {"method", "params"}}
///   min_compression_rate, max_layer_error   number or null
///   reference_buckets, time_grid, max_front, epsilon, forward_time_s
///   network               null | {"model": "ring", "bandwidth_Gbps", "latency_us"} |
///                         {"model": "nccl", "topology": NAME or {"name": NAME, ...}} (resolved by
///                         the caller; a network fit is not part of this form)
///   warmup_steps          accepted and ignored here (the schedule's business)
#include <optional>
#include <string>

#include "core/json_util.hpp"
#include "network_models/nccl_env.hpp"
#include "planner/plan.hpp"
#include "planner/tables.hpp"

namespace lgreco::planner {

/// The network the options name; the planner does not build topologies (the caller resolves it).
struct NetworkSpec {
  enum class Kind { kNone, kRing, kTopology } kind = Kind::kNone;
  double bandwidth_Bps = 0;   ///< ring
  double latency_s = 5e-6;    ///< ring, per hop
  std::string topology;       ///< a topology preset name or file (network_models)
  /// topology: the job's NCCL restrictions, the "nccl_env" of the description `lgreco plan --topology
  /// --nccl-env` records (network_models/nccl_env.hpp); none when absent or null.
  net::NcclEnv nccl_env;
  /// topology: charge the kernels' memory-traffic estimate in step predictions (the default of
  /// `lgreco plan --topology`); false for "kernel_time": {"source": "none"}.
  bool kernel_time_estimate = true;
};

/// PlanOptions from the JSON form above; `network` receives the "network" entry. Errors name
/// `origin` and the key: "online plan options.budget.kind: 'gamma'; expected alpha, error, bytes or time".
PlanOptions plan_options_from_json(const Json& options, const std::string& origin, NetworkSpec* network = nullptr);

/// The JSON form of resolved options (every key written; what schedules record as "config").
/// The network entry is `network_json` as given (null when absent).
Json plan_options_to_json(const PlanOptions& o, const Json& network_json = nullptr);

/// The "network" entry of a ring model: {"model": "ring", "bandwidth_Gbps", "latency_us"}.
Json ring_network_json(double bandwidth_Bps, double latency_s);

/// A window's plan: {"start_step", "end_step", "status", "layers": [{"name", "role", "choice",
/// "method", "params", "error", "bytes"}], totals (error, bytes; uniform and uncompressed too),
/// budgets, "gap_bound", "detail", "warnings", step-time predictions (null without a network)}.
Json window_plan_to_json(const Window& w, const WindowPlan& p);

}  // namespace lgreco::planner
