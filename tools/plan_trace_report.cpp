// Schedule document and readable summary of the closed loop.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>

#include "core/error.hpp"
#include "core/units.hpp"
#include "planner/schedule.hpp"
#include "tools/plan_trace.hpp"

namespace lgreco::cli {

Json schedule_json(const TraceJob& job, const ClosedLoopResult& r, const Json& config) {
  // Phases follow the planner's convention (planner/schedule.hpp), shared with `plan --tables`: the
  // trace's step ids are the training timeline; plan-k is in force from the end of window k.
  planner::Schedule s = planner::build_schedule(r.tables, r.plans, planner::engine_name(job.plan.engine), r.schedule_warmup,
                                                job.seed, config, r.provenance);
  s.family = sim::to_string(job.family);
  s.world_size = config.value("ranks", r.world_size);
  for (const auto& n : r.windows.notes) s.predicted["warnings"].push_back(n);
  const auto problems = planner::check_schedule(s);
  if (!problems.empty()) throw Error("plan --trace built an inconsistent schedule: " + problems.front());
  return planner::schedule_to_json(s);
}

std::string summary_text(const TraceJob& job, const ClosedLoopResult& r, const std::string& topology) {
  std::ostringstream o;
  const auto& w = r.tables.windows.back();
  const auto& p = r.plans.back();
  const auto& u = r.uniform.back();
  char line[512];
  o << "model " << r.model << ", family " << sim::to_string(job.family) << ", engine " << planner::engine_name(job.plan.engine)
    << ", error mode " << sim::to_string(job.error_mode) << ", backend " << r.backend << "\n";
  o << r.windows.windows.size() << " window(s) replayed (" << r.windows.bursts.size() << " burst(s)); final plan from steps "
    << w.start_step << ".." << (w.end_step - 1) << "\n";
  for (const auto& n : r.windows.notes) o << "note: " << n << "\n";
  std::snprintf(line, sizeof line, "\n%-44s %-36s %12s %12s %12s\n", "layer", "setting (uniform -> plan)", "bytes", "error",
                "uniform err");
  o << line;
  double uncompressed = 0;
  for (std::size_t l = 0; l < w.layers.size(); ++l) {
    const auto& t = w.layers[l];
    uncompressed += 4.0 * static_cast<double>(t.numel);
    if (t.candidates.size() < 2) continue;  // not planned: sent as its only setting
    const auto& c = t.candidates.at(static_cast<std::size_t>(p.choice[l]));
    const auto& d = t.candidates.at(static_cast<std::size_t>(t.default_index));
    std::string name = t.name.size() > 44 ? "..." + t.name.substr(t.name.size() - 41) : t.name;
    const std::string setting = planner::method_label(d.spec) == planner::method_label(c.spec)
                                    ? planner::method_label(c.spec)
                                    : planner::method_label(d.spec) + " -> " + planner::method_label(c.spec);
    std::snprintf(line, sizeof line, "%-44s %-36s %12s %12.4g %12.4g\n", name.c_str(), setting.c_str(),
                  units::format_bytes(c.bytes).c_str(), c.error, d.error);
    o << line;
  }
  std::size_t fixed = 0;
  for (const auto& t : w.layers) fixed += t.candidates.size() < 2;
  o << "(" << fixed << " small or incompressible tensors sent as their single setting are not listed)\n\n";
  auto time_of = [](const std::optional<double>& s) { return s ? units::format_seconds(*s) : std::string("-"); };
  std::snprintf(line, sizeof line, "%-14s %14s %10s %14s %14s %9s\n", "", "bytes/step", "ratio", "total error", "step time",
                "speedup");
  o << line;
  auto row = [&](const char* name, double bytes, double err, const std::optional<double>& step) {
    std::string sp = "-";
    if (step && p.uncompressed_step_s && *step > 0) {
      char b[32];
      std::snprintf(b, sizeof b, "%.2fx", *p.uncompressed_step_s / *step);
      sp = b;
    }
    std::snprintf(line, sizeof line, "%-14s %14s %9.1fx %14.5g %14s %9s\n", name, units::format_bytes(bytes).c_str(),
                  bytes > 0 ? uncompressed / bytes : 0.0, err, time_of(step).c_str(), sp.c_str());
    o << line;
  };
  row("uncompressed", uncompressed, 0.0, p.uncompressed_step_s);
  row("uniform", u.total_bytes, u.total_error, u.step_s);
  row("adaptive", p.total_bytes, p.total_error, p.step_s);
  o << "plan status " << p.status;
  if (p.error_budget) o << ", error budget " << *p.error_budget;
  if (!topology.empty()) o << ", predicted on " << topology;
  o << "\n";
  for (const auto& wn : p.warnings) o << "warning: " << wn << "\n";
  return o.str();
}

std::function<void(const sim::ReplayProgress&)> stderr_progress() {
  if (!stderr_is_tty()) return {};
  return [](const sim::ReplayProgress& p) {
    const double frac = (static_cast<double>(p.window) + static_cast<double>(p.layers_done) / std::max<std::size_t>(1, p.layers_total)) /
                        std::max<std::size_t>(1, p.windows);
    const double gbs = p.elapsed_s > 0 ? p.grad_bytes / p.elapsed_s / 1e9 : 0.0;
    const double eta = frac > 0 ? p.elapsed_s * (1 - frac) / frac : 0.0;
    std::fprintf(stderr, "\rreplay: window %zu/%zu, layers %zu/%zu, %.2f GB/s, ETA %.0f s   ", p.window + 1, p.windows,
                 p.layers_done, p.layers_total, gbs, eta);
    if (p.window + 1 == p.windows && p.layers_done == p.layers_total) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  };
}

}  // namespace lgreco::cli
