// `lgreco replay`: run a schedule's settings over a trace with the kernels and count what they send.
#include <algorithm>
#include <iostream>
#include <limits>
#include <map>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "core/provenance.hpp"
#include "core/units.hpp"
#include "kernels/method_json.hpp"
#include "planner/schedule.hpp"
#include "sim/replay.hpp"
#include "sim/replay_pool.hpp"
#include "sim/replay_trace_source.hpp"
#include "tools/args.hpp"
#include "tools/command.hpp"
#include "pipeline/schedule_replay.hpp"
#include "tools/loop_args.hpp"
#include "tools/plan_report.hpp"
#include "tools/ranks.hpp"

namespace lgreco::cli {
namespace {

int run_replay(const std::vector<std::string>& args) {
  std::string trace, schedule, phase = "all", threads, backend = "auto", seed = "0", memory_limit;
  Format fmt = Format::kTable;
  ArgParser p("lgreco replay",
              "Run a schedule's per-layer settings over every recorded step of a trace with error feedback "
              "(state reset at each burst start) and report the wire bytes per step the kernels produced and "
              "the per-step compression error, next to the schedule's prediction.");
  p.option("--trace", &trace, "FILE", "trace (HDF5)", true);
  p.option("--schedule", &schedule, "FILE", "schedule (JSON) whose settings to run", true);
  p.option("--phase", &phase, "LABEL",
           "what to run: scheduled (each step with the phase in force at that step, as the training job does), a phase "
           "label (uniform, plan-2, ...) over every step, last, or all phases one by one (default)");
  p.option("--threads", &threads, "N", "worker threads (default: all cores; under MPI, each rank its share of its machine's)");
  p.option("--memory-limit", &memory_limit, "SIZE",
           "run layers in parallel only while their buffers fit in SIZE; 0 = no limit (default: half the physical memory)");
  p.option("--backend", &backend, "NAME", "auto, cpu or cuda (default auto)");
  p.option("--seed", &seed, "N", "run seed (default 0)");
  p.format(&fmt);
  if (!p.parse(args)) return 0;

  const auto source = sim::open_trace_source(trace);
  const planner::Schedule sched = planner::read_schedule(schedule);
  pipeline::ScheduleReplayOptions opt;
  opt.only = phase;
  // Ranks on one machine share its cores: by default each takes its share (tools/ranks.hpp).
  opt.threads = threads.empty() ? std::max(1u, sim::resolve_threads(0) / static_cast<unsigned>(std::max(1, ranks().on_node)))
                                : sim::resolve_threads(static_cast<int>(parse_int("--threads", threads, 1, 4096)));
  opt.backend = sim::resolve_backend(backend);
  opt.seed = static_cast<std::uint64_t>(parse_int("--seed", seed, 0, std::numeric_limits<int>::max()));
  try {
    opt.memory_limit_bytes = memory_limit.empty() ? default_memory_limit_bytes() : static_cast<double>(units::parse_bytes(memory_limit));
  } catch (const ConfigError& e) {
    throw UsageError(std::string("--memory-limit: ") + e.what());
  }
  opt.progress = stderr_progress();
  opt.engine = ranks().engine;
  const pipeline::ScheduleReplay rep = pipeline::replay_schedule(*source, sched, schedule, opt);
  print_layout_note(rep.replay_layout);

  Json out_phases = Json::array();
  std::size_t steps = 0;
  for (const auto& run : rep.runs) {
    steps = run.steps.size();
    Json layers = Json::array();
    for (std::size_t l = 0; l < source->layers().size(); ++l) {
      layers.push_back(Json{{"name", source->layers()[l].name}, {"bytes_per_step", run.layer_bytes_per_step[l]},
                            {"error_per_step", run.layer_error_per_step[l]}});
    }
    Json per_step = Json::array();
    for (const auto& st : run.steps) {
      per_step.push_back(Json{{"step", st.step}, {"phase", st.phase}, {"bytes", st.bytes}, {"predicted_bytes", st.predicted_bytes},
                              {"error", st.error}});
    }
    out_phases.push_back(Json{{"label", run.label}, {"predicted_bytes_per_step", run.predicted_bytes_per_step},
                              {"bytes_per_step", run.bytes_per_step()}, {"error_per_step", run.error_per_step()}, {"layers", layers},
                              {"steps", per_step}});
  }
  if (fmt == Format::kJson) {
    Json provenance = provenance_json({trace, schedule});
    if (!rep.replay_layout.is_null()) provenance["replay"] = rep.replay_layout;
    std::cout << Json{{"schema_version", 1},
                      {"kind", "lgreco-replay"},
                      {"model", source->model()},
                      {"backend", rep.backend},
                      {"steps", steps},
                      {"bursts", rep.bursts},
                      {"phases", out_phases},
                      {"config", Json{{"trace", trace}, {"schedule", schedule}, {"phase", phase}, {"threads", opt.threads},
                                      {"seed", opt.seed}}},
                      {"provenance", provenance}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << "replayed " << steps << " step(s) in " << rep.bursts << " burst(s) on " << rep.backend
              << "\n";
    for (const auto& ph : out_phases) {
      std::cout << "  " << ph["label"].get<std::string>() << ": " << units::format_bytes(ph["bytes_per_step"].get<double>())
                << "/step measured, " << units::format_bytes(ph["predicted_bytes_per_step"].get<double>())
                << "/step predicted, error/step " << ph["error_per_step"].get<double>() << "\n";
    }
  }
  return 0;
}

LGRECO_COMMAND("replay", "run a schedule's settings over a trace and count bytes and error", run_replay);

}  // namespace
}  // namespace lgreco::cli
