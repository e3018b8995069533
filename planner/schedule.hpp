#pragma once
/// Schedules (schemas/schedule.schema.json, docs/schedule-format.md): phases over training steps,
/// per parameter the method and its parameters, the DDP bucket plan, predictions, the resolved
/// configuration and provenance.
///
/// Phases built from tables with windows W_0..W_{n−1} (statistics of [start, end)):
///   warmup   [0, N)                    every parameter "none" (N = --warmup-steps, default W_0.start;
///                                      omitted when N = 0)
///   uniform  [N, W_0.end)              every parameter at its default (the window measured)
///   plan-k   [W_k.end, W_{k+1}.end)    the plan made from window k; the last one is open (end null)
/// A phase's bytes_per_step is Σ over parameters of the registry's wire bytes of its setting
/// (kernels/wire.hpp, steady state). The top-level "predicted" describes
/// the last plan phase against the uniform default and no compression on the same window.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/json_util.hpp"
#include "kernels/method.hpp"
#include "planner/plan.hpp"
#include "planner/tables.hpp"

namespace lgreco::planner {

/// One phase: steps [start_step, end_step) (end absent = open), a setting per parameter.
struct Phase {
  std::int64_t start_step = 0;
  std::optional<std::int64_t> end_step;
  std::string label;                                        ///< warmup | uniform | plan-<k>
  std::vector<std::pair<std::string, kernels::MethodSpec>> layers;   ///< in model order
  Json predicted = Json::object();                          ///< {"bytes_per_step", ...}
};

/// One DDP bucket: its parameters (in order) and their element counts.
struct BucketInfo {
  int index = 0;
  std::vector<std::string> params;
  std::vector<std::int64_t> numel;  ///< per parameter (optional in files; empty when absent)
  std::int64_t size_bytes = 0;      ///< uncompressed fp32 size of the bucket
};

/// A whole schedule document.
struct Schedule {
  std::string model;
  int world_size = 1;
  std::string family, engine;
  std::uint64_t seed = 0;
  /// Every parameter with its shape, in model.parameters() order (format 2; empty for a format-1
  /// document, which has no wire plans).
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> parameters;
  std::vector<Phase> phases;
  std::vector<BucketInfo> buckets;
  Json predicted = Json::object(), config = Json::object(), provenance = Json::object();
};

/// Builds the phased schedule from the tables and one plan per window (plans[k] from window k).
/// Throws ConfigError when warmup_steps ≥ W_0.end or plans and windows differ in number.
Schedule build_schedule(const Tables& t, const std::vector<WindowPlan>& plans, const std::string& engine,
                        std::optional<std::int64_t> warmup_steps, std::uint64_t seed, Json config, Json provenance);

/// Serialises (kind "lgreco-schedule"). With parameters known: format 2, with "parameters" and for
/// every phase the wire plan of every parameter (wire_json); otherwise format 1.
Json schedule_to_json(const Schedule& s);
/// The wire plans of a phase, keyed by parameter name: kernels::wire_plan_to_json of the steady
/// state, plus "stages" (kernels::wire_stage_to_json) over the phase's steps when top-k's DGC
/// warm-up makes any of them differ from the steady state. What the DDP hook executes and checks its bytes against.
Json wire_json(const Schedule& s, const Phase& p);
/// Strict structural reading (unknown keys, wrong types → ConfigError naming `origin` and field);
/// methods are normalised (defaults filled; unknown methods/params are errors); a format-2 phase's
/// parameters come in model order (the document's "parameters"). Format 1 and 2;
/// a format-2 document's wire plans must equal the registry's (InputError naming the phase and
/// parameter otherwise).
Schedule schedule_from_json(const Json& doc, const std::string& origin);
/// Reads a schedule file.
Schedule read_schedule(const std::string& path);

/// Semantic problems: phases unordered or overlapping, an open phase that is not the last, a
/// parameter missing from a phase, a parameter in two buckets, bad labels. Empty = valid.
std::vector<std::string> check_schedule(const Schedule& s);

/// One per-parameter difference between two phases.
struct PhaseChange {
  std::string param;
  std::optional<kernels::MethodSpec> from, to;  ///< absent when the parameter is missing on that side
};
/// Parameters whose setting differs between a and b (in a's order, then b's extra ones).
std::vector<PhaseChange> diff_phases(const Phase& a, const Phase& b);

/// Finds a phase by label; ConfigError listing the labels.
const Phase& find_phase(const Schedule& s, const std::string& label);
/// The phases' labels as messages list them: "uniform, plan-0, plan-1" (control characters escaped).
std::string phase_labels(const Schedule& s);

/// "k=v;k=v" of all parameters (CSV and tables).
std::string params_text(const kernels::MethodSpec& m);

}  // namespace lgreco::planner
