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
namespace {

Json opt_num(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

Json ratio(double uncompressed, double bytes) { return bytes > 0 ? Json(uncompressed / bytes) : Json(nullptr); }

/// (name, setting) per parameter for a choice over one window's tables.
std::vector<std::pair<std::string, planner::MethodSpec>> layers_of(const planner::Window& w, const std::vector<int>& choice) {
  std::vector<std::pair<std::string, planner::MethodSpec>> out;
  for (std::size_t l = 0; l < w.layers.size(); ++l) {
    out.emplace_back(w.layers[l].name, w.layers[l].candidates.at(static_cast<std::size_t>(choice.at(l))).spec);
  }
  return out;
}

std::vector<int> default_choice(const planner::Window& w) {
  std::vector<int> c;
  for (const auto& l : w.layers) c.push_back(l.default_index);
  return c;
}

planner::Phase phase(std::int64_t start, std::optional<std::int64_t> end, const std::string& label,
                     std::vector<std::pair<std::string, planner::MethodSpec>> layers, Json predicted) {
  planner::Phase p;
  p.start_step = start;
  p.end_step = end;
  p.label = label;
  p.layers = std::move(layers);
  p.predicted = std::move(predicted);
  return p;
}

}  // namespace

Json schedule_json(const TraceJob& job, const ClosedLoopResult& r, const Json& config) {
  const auto& first = r.tables.windows.front();
  const std::int64_t warm = job.windows.warmup_steps, period = job.windows.period_steps;
  planner::Schedule s;
  s.model = r.model;
  s.world_size = config.value("ranks", r.world_size);
  s.family = sim::to_string(job.family);
  s.engine = planner::engine_name(job.plan.engine);
  s.seed = job.seed;
  s.config = config;
  s.provenance = r.provenance;
  double uncompressed = 0;
  for (const auto& l : first.layers) uncompressed += 4.0 * static_cast<double>(l.numel);
  if (warm > 0) {
    std::vector<std::pair<std::string, planner::MethodSpec>> none;
    for (const auto& l : first.layers) none.emplace_back(l.name, planner::normalize_method("none", Json::object(), "none"));
    s.phases.push_back(phase(0, warm, "warmup", std::move(none),
                             Json{{"bytes_per_step", uncompressed}, {"total_error", 0.0}, {"compression_ratio", 1.0},
                                  {"step_time_s", opt_num(r.uniform.front().uncompressed_step_s)}}));
  }
  const auto& u0 = r.uniform.front();
  const std::size_t k_plans = r.plans.size();
  s.phases.push_back(phase(warm, warm + period, "uniform", layers_of(first, default_choice(first)),
                           Json{{"bytes_per_step", u0.total_bytes}, {"total_error", u0.total_error},
                                {"compression_ratio", ratio(uncompressed, u0.total_bytes)},
                                {"step_time_s", opt_num(u0.step_s)}, {"status", "uniform"}, {"source_window", 0}}));
  for (std::size_t k = 0; k < k_plans; ++k) {
    const auto& p = r.plans[k];
    const std::int64_t start = warm + static_cast<std::int64_t>(k + 1) * period;
    std::optional<std::int64_t> end;
    if (k + 1 < k_plans) end = start + period;
    s.phases.push_back(phase(start, end, "plan-" + std::to_string(k + 1), layers_of(r.tables.windows[k], p.choice),
                             Json{{"bytes_per_step", p.total_bytes}, {"total_error", p.total_error},
                                  {"compression_ratio", ratio(uncompressed, p.total_bytes)}, {"step_time_s", opt_num(p.step_s)},
                                  {"status", p.status}, {"source_window", static_cast<int>(k)}}));
  }
  // Buckets as recorded in the trace (ascending index).
  std::map<int, planner::BucketInfo> buckets;
  for (const auto& l : first.layers) {
    auto& b = buckets[l.bucket];
    b.index = l.bucket;
    b.params.push_back(l.name);
    b.numel.push_back(l.numel);
    b.size_bytes += 4 * l.numel;
  }
  for (auto& [index, b] : buckets) s.buckets.push_back(std::move(b));

  const auto& last = r.plans.back();
  const auto& ulast = r.uniform.back();
  Json warnings = Json::array();
  for (const auto& n : r.windows.notes) warnings.push_back(n);
  for (const auto& w : last.warnings) warnings.push_back(w);
  s.predicted = Json{{"bytes_per_step", last.total_bytes},
                     {"uniform_bytes_per_step", ulast.total_bytes},
                     {"uncompressed_bytes_per_step", uncompressed},
                     {"compression_ratio", ratio(uncompressed, last.total_bytes)},
                     {"uniform_compression_ratio", ratio(uncompressed, ulast.total_bytes)},
                     {"compression_ratio_vs_uniform", ratio(ulast.total_bytes, last.total_bytes)},
                     {"total_error", last.total_error},
                     {"uniform_total_error", ulast.total_error},
                     {"error_budget", opt_num(last.error_budget)},
                     {"step_time_s", opt_num(last.step_s)},
                     {"uniform_step_time_s", opt_num(ulast.step_s)},
                     {"uncompressed_step_time_s", opt_num(last.uncompressed_step_s)},
                     {"status", last.status},
                     {"warnings", warnings}};
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
