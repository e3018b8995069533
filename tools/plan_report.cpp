// Readable reports of plans and replay progress (plan_report.hpp).
#include "tools/plan_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/units.hpp"
#include "kernels/method.hpp"
#include "tools/args.hpp"

namespace lgreco::cli {

using namespace lgreco::planner;

namespace {

std::string fmt_num(double v, const char* f = "%.4g") {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

void print_tables_summary(std::ostream& os, const Tables& t, const std::vector<WindowPlan>& plans, const Schedule& s) {
  const Window& w = t.windows.back();
  const WindowPlan& p = plans.back();
  os << "plan for " << t.model << " (" << w.layers.size() << " parameters, world size " << t.world_size << ", engine "
     << s.engine << ", from window " << plans.size() - 1 << ": steps " << w.start_step << "-" << w.end_step << ")\n\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-36s %-9s %-28s %12s %12s  %s\n", "parameter", "role", "chosen", "bytes", "error", "default");
  os << line;
  for (std::size_t i = 0; i < w.layers.size(); ++i) {
    const auto& l = w.layers[i];
    std::snprintf(line, sizeof line, "%-36s %-9s %-28s %12s %12s  %s\n", l.name.c_str(), role_name(p.role[i]).c_str(),
                  kernels::describe(p.chosen[i].spec).c_str(), units::format_bytes(p.chosen[i].bytes).c_str(),
                  fmt_num(p.chosen[i].error).c_str(), kernels::describe(l.candidates[l.default_index].spec).c_str());
    os << line;
  }
  const Json& pr = s.predicted;
  auto ratio = [](const Json& v) { return v.is_null() ? std::string("-") : fmt_num(v.get<double>(), "%.1fx"); };
  os << "\nstatus " << status_name(p.status) << (p.detail.empty() ? "" : " (" + p.detail + ")");
  if (p.gap_bound > 0) os << (s.engine == "dual" ? ", error within " : ", bytes within ") << fmt_num(100 * p.gap_bound, "%.3g") << " % of the optimum (front trimmed)";
  os << "\n";
  os << "bytes/step   plan " << units::format_bytes(pr["bytes_per_step"].get<double>()) << "   uniform "
     << units::format_bytes(pr["uniform_bytes_per_step"].get<double>()) << "   uncompressed " << units::format_bytes(pr["uncompressed_bytes_per_step"].get<double>()) << "\n";
  os << "compression  plan " << ratio(pr["compression_ratio"]) << "   uniform " << ratio(pr["uniform_compression_ratio"])
     << "   plan vs uniform " << ratio(pr["compression_ratio_vs_uniform"]) << "\n";
  os << "total error  plan " << fmt_num(p.total_error) << "   uniform " << fmt_num(p.uniform_error);
  if (p.error_budget) os << "   budget " << fmt_num(*p.error_budget);
  if (p.bytes_budget) os << "   byte budget " << units::format_bytes(*p.bytes_budget);
  os << "\n";
  if (p.step_s) {
    os << "step time    plan " << units::format_seconds(*p.step_s) << "   uniform " << units::format_seconds(*p.uniform_step_s)
       << "   uncompressed " << units::format_seconds(*p.uncompressed_step_s) << "\n";
  }
  for (const auto& warn : pr["warnings"]) os << "warning: " << warn.get<std::string>() << "\n";
  os << "phases:";
  for (const auto& ph : s.phases) {
    os << "  " << ph.label << " [" << ph.start_step << ", " << (ph.end_step ? std::to_string(*ph.end_step) : "end") << ")";
  }
  os << "\n";
}

std::string loop_summary(const pipeline::LoopOptions& job, const pipeline::LoopResult& r, const std::string& topology) {
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
    const auto& c = p.chosen.at(l);  // (a pinned "none" has no candidate index)
    const auto& d = t.candidates.at(static_cast<std::size_t>(t.default_index));
    std::string name = t.name.size() > 44 ? "..." + t.name.substr(t.name.size() - 41) : t.name;
    const std::string setting = kernels::describe(d.spec) == kernels::describe(c.spec)
                                    ? kernels::describe(c.spec)
                                    : kernels::describe(d.spec) + " -> " + kernels::describe(c.spec);
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
  // Predicted vs delivered: the error each phase's settings really had where they ran.
  const auto delivered = pipeline::delivered_errors(job, r);
  if (!delivered.empty()) {
    o << "\nerror per step, delivered (replay with error feedback) vs predicted:\n";
    for (const auto& d : delivered) {
      std::snprintf(line, sizeof line, "  %-8s in window %zu: delivered %.5g, predicted %.5g", d.phase.c_str(), d.window, d.delivered,
                    d.predicted.value_or(0.0));
      o << line;
      if (d.uniform_same_window && *d.uniform_same_window > 0) {
        std::snprintf(line, sizeof line, ", uniform in the same window %.5g (%+.2f %%)", *d.uniform_same_window,
                      100.0 * (d.delivered / *d.uniform_same_window - 1));
        o << line;
      }
      o << "\n";
    }
    if (job.error_mode != sim::ErrorMode::kTrajectory)
      o << "  (error mode " << sim::to_string(job.error_mode)
        << " plans on the window's mean matrix A, not on the per-step error delivered: docs/replay.md)\n";
  }
  o << "plan status " << planner::status_name(p.status);
  if (p.error_budget) o << ", error budget " << *p.error_budget;
  if (!topology.empty()) o << ", predicted on " << topology;
  o << "\n";
  for (const auto& wn : p.warnings) o << "warning: " << wn << "\n";
  return o.str();
}

}  // namespace lgreco::cli
