// `lgreco replay`: run a schedule's settings over a trace with the kernels and count what they send.
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
#include "tools/plan_trace.hpp"

namespace lgreco::cli {
namespace {

struct PhaseSettings {
  std::string label;
  double predicted_bytes = 0;
  std::vector<kernels::MethodSpec> specs;  ///< per trace layer
};

std::vector<PhaseSettings> read_phases(const std::string& path, const std::vector<sim::SourceLayer>& layers,
                                       const std::string& only) {
  const planner::Schedule sched = planner::read_schedule(path);
  std::vector<PhaseSettings> out;
  for (std::size_t i = 0; i < sched.phases.size(); ++i) {
    const planner::Phase& ph = sched.phases[i];
    if (only == "last" ? i + 1 != sched.phases.size() : (only != "all" && only != ph.label)) continue;
    const std::string where = path + ": phases[" + std::to_string(i) + "] (" + ph.label + ")";
    PhaseSettings s;
    s.label = ph.label;
    s.predicted_bytes = ph.predicted.at("bytes_per_step").get<double>();
    std::map<std::string, const planner::MethodSpec*> by_name;
    for (const auto& [name, m] : ph.layers) by_name[name] = &m;
    if (by_name.size() != layers.size()) {
      throw ConfigError(where + ": " + std::to_string(by_name.size()) + " parameters, the trace has " +
                        std::to_string(layers.size()));
    }
    for (const auto& l : layers) {
      auto it = by_name.find(l.name);
      if (it == by_name.end()) throw ConfigError(where + ": no entry for trace parameter '" + l.name + "'");
      s.specs.push_back(kernels::method_from_json(Json{{"method", it->second->method}, {"params", it->second->params}},
                                                  where + ".layers." + l.name));
    }
    out.push_back(std::move(s));
  }
  if (out.empty()) throw ConfigError(path + ": no phase labelled '" + only + "'");
  return out;
}

int run_replay(const std::vector<std::string>& args) {
  std::string trace, schedule, phase = "all", threads, backend = "auto", seed = "0", memory_limit;
  Format fmt = Format::kTable;
  ArgParser p("lgreco replay",
              "Run a schedule's per-layer settings over every recorded step of a trace with error feedback "
              "(state reset at each burst start) and report the wire bytes per step the kernels produced and "
              "the per-step compression error, next to the schedule's prediction.");
  p.option("--trace", &trace, "FILE", "trace (HDF5)", true);
  p.option("--schedule", &schedule, "FILE", "schedule (JSON) whose settings to run", true);
  p.option("--phase", &phase, "LABEL", "phase to run: a label (uniform, plan-2, ...), last, or all (default)");
  p.option("--threads", &threads, "N", "worker threads (default: all cores)");
  p.option("--memory-limit", &memory_limit, "SIZE",
           "run layers in parallel only while their buffers fit in SIZE; 0 = no limit (default: half the physical memory)");
  p.option("--backend", &backend, "NAME", "auto, cpu or cuda (default auto)");
  p.option("--seed", &seed, "N", "run seed (default 0)");
  p.format(&fmt);
  if (!p.parse(args)) return 0;

  const auto source = sim::open_trace_source(trace);
  const auto phases = read_phases(schedule, source->layers(), phase);
  sim::WindowConfig wc;
  wc.warmup_steps = 0;
  wc.period_steps = std::numeric_limits<std::int32_t>::max();
  wc.acc_steps = 1;
  const auto wplan = sim::plan_windows(source->steps(), wc);
  sim::ReplayOptions opt;
  opt.threads = sim::resolve_threads(threads.empty() ? 0 : static_cast<int>(parse_int("--threads", threads)));
  opt.backend = sim::resolve_backend(backend);
  opt.seed = static_cast<std::uint64_t>(parse_int("--seed", seed));
  try {
    opt.memory_limit_bytes = memory_limit.empty() ? default_memory_limit_bytes() : static_cast<double>(units::parse_bytes(memory_limit));
  } catch (const ConfigError& e) {
    throw UsageError(std::string("--memory-limit: ") + e.what());
  }
  opt.windows_total = wplan.windows.size() * phases.size();
  opt.progress = stderr_progress();

  Json out_phases = Json::array();
  std::size_t steps = 0;
  for (const auto& w : wplan.windows) steps += w.count;
  for (const auto& ph : phases) {
    sim::Replay rep(*source, {}, opt);
    std::vector<double> bytes(ph.specs.size(), 0.0), err(ph.specs.size(), 0.0);
    for (const auto& w : wplan.windows) {
      const auto wm = rep.run_window(w, ph.specs, false);
      for (std::size_t l = 0; l < ph.specs.size(); ++l) {
        bytes[l] += wm.layers[l].applied_bytes_per_step * static_cast<double>(w.count);
        err[l] += wm.layers[l].applied_error_per_step * static_cast<double>(w.count);
      }
    }
    Json layers = Json::array();
    double total_bytes = 0, total_err = 0;
    for (std::size_t l = 0; l < ph.specs.size(); ++l) {
      total_bytes += bytes[l] / static_cast<double>(steps);
      total_err += err[l] / static_cast<double>(steps);
      layers.push_back(Json{{"name", source->layers()[l].name}, {"method", kernels::method_to_json(ph.specs[l])},
                            {"bytes_per_step", bytes[l] / static_cast<double>(steps)},
                            {"error_per_step", err[l] / static_cast<double>(steps)}});
    }
    out_phases.push_back(Json{{"label", ph.label}, {"predicted_bytes_per_step", ph.predicted_bytes},
                              {"bytes_per_step", total_bytes}, {"error_per_step", total_err}, {"layers", layers}});
  }
  if (fmt == Format::kJson) {
    std::cout << Json{{"schema_version", 1},
                      {"kind", "lgreco-replay"},
                      {"model", source->model()},
                      {"backend", kernels::to_string(opt.backend)},
                      {"steps", steps},
                      {"bursts", wplan.windows.size()},
                      {"phases", out_phases},
                      {"config", Json{{"trace", trace}, {"schedule", schedule}, {"phase", phase}, {"threads", opt.threads},
                                      {"seed", opt.seed}}},
                      {"provenance", provenance_json({trace, schedule})}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << "replayed " << steps << " step(s) in " << wplan.windows.size() << " burst(s) on " << kernels::to_string(opt.backend)
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
