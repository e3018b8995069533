#include "pipeline/schedule_replay.hpp"

#include <limits>
#include <map>
#include <numeric>
#include <set>

#include "core/error.hpp"
#include "core/text.hpp"
#include "kernels/wire.hpp"
#include "sim/replay_windows.hpp"

namespace lgreco::pipeline {
namespace {

// Per phase, the settings of the trace's layers (in trace order).
std::vector<kernels::MethodSpec> phase_settings(const planner::Phase& ph, const std::vector<sim::SourceLayer>& layers,
                                                const std::string& where) {
  std::map<std::string, const kernels::MethodSpec*> by_name;
  for (const auto& [name, m] : ph.layers) by_name[name] = &m;
  std::vector<kernels::MethodSpec> out;
  for (const auto& l : layers) {
    auto it = by_name.find(l.name);
    if (it == by_name.end()) throw ConfigError(where + ": no entry for trace parameter '" + l.name + "'");
    out.push_back(*it->second);
  }
  if (by_name.size() != layers.size()) {
    std::set<std::string> in_trace;
    for (const auto& l : layers) in_trace.insert(l.name);
    for (const auto& [name, m] : by_name) {
      if (!in_trace.count(name))
        throw ConfigError(where + ": parameter " + quote_name(name) + " is not in the trace (" + std::to_string(by_name.size()) +
                          " parameters, the trace has " + std::to_string(layers.size()) + ")");
    }
  }
  return out;
}

// Index of the phase in force at `step`, or −1.
int phase_at(const planner::Schedule& s, std::int64_t step) {
  for (std::size_t i = 0; i < s.phases.size(); ++i) {
    const auto& p = s.phases[i];
    if (step >= p.start_step && (!p.end_step || step < *p.end_step)) return static_cast<int>(i);
  }
  return -1;
}

// Bursts of consecutive step ids (sim/replay_windows.hpp), as windows of `max_len` rows at most.
std::vector<sim::Window> burst_windows(const std::vector<std::int64_t>& steps) {
  sim::WindowConfig wc;
  wc.warmup_steps = 0;
  wc.period_steps = std::numeric_limits<std::int32_t>::max();
  wc.acc_steps = 1;
  return sim::plan_windows(steps, wc).windows;
}

void add_window(ReplayRun& run, const sim::WindowMeasure& wm, const sim::Window& w, const std::vector<std::int64_t>& steps,
                const std::vector<kernels::MethodSpec>& settings, const std::vector<sim::SourceLayer>& layers,
                const std::string& phase) {
  for (std::size_t i = 0; i < w.count; ++i) {
    StepRecord r;
    r.step = steps[w.first_row + i];
    r.phase = phase;
    for (std::size_t l = 0; l < wm.layers.size(); ++l) {
      r.bytes += wm.layers[l].step_bytes.at(i);
      r.error += wm.layers[l].step_error.at(i);
      r.predicted_bytes += kernels::wire_size(settings[l], layers[l].shape, static_cast<std::uint64_t>(r.step)).bytes;
      run.layer_bytes_per_step[l] += static_cast<double>(wm.layers[l].step_bytes.at(i));
      run.layer_error_per_step[l] += wm.layers[l].step_error.at(i);
    }
    run.steps.push_back(r);
  }
}

void finish(ReplayRun& run) {
  const double n = static_cast<double>(std::max<std::size_t>(1, run.steps.size()));
  for (auto& v : run.layer_bytes_per_step) v /= n;
  for (auto& v : run.layer_error_per_step) v /= n;
}

}  // namespace

double ReplayRun::bytes_per_step() const {
  double b = 0;
  for (const auto& s : steps) b += static_cast<double>(s.bytes);
  return steps.empty() ? 0.0 : b / static_cast<double>(steps.size());
}

double ReplayRun::error_per_step() const {
  double e = 0;
  for (const auto& s : steps) e += s.error;
  return steps.empty() ? 0.0 : e / static_cast<double>(steps.size());
}

ScheduleReplay replay_schedule(const sim::GradientSource& source, const planner::Schedule& schedule, const std::string& origin,
                               const ScheduleReplayOptions& opt) {
  const auto& layers = source.layers();
  const auto& steps = source.steps();
  std::vector<std::vector<kernels::MethodSpec>> settings;
  for (std::size_t i = 0; i < schedule.phases.size(); ++i) {
    settings.push_back(phase_settings(schedule.phases[i], layers,
                                      origin + ": phases[" + std::to_string(i) + "] (" + schedule.phases[i].label + ")"));
  }
  sim::ReplayOptions ro;
  ro.threads = opt.threads;
  ro.backend = opt.backend;
  ro.seed = opt.seed;
  ro.memory_limit_bytes = opt.memory_limit_bytes;
  ro.progress = opt.progress;
  const auto bursts = burst_windows(steps);
  ScheduleReplay out;
  out.bursts = bursts.size();
  out.backend = kernels::to_string(opt.backend);
  auto new_run = [&](const std::string& label) {
    ReplayRun run;
    run.label = label;
    run.layer_bytes_per_step.assign(layers.size(), 0.0);
    run.layer_error_per_step.assign(layers.size(), 0.0);
    return run;
  };

  if (opt.only == "scheduled") {
    // Cut every burst where the phase in force changes; carry state within the burst.
    std::vector<sim::Window> windows;
    std::vector<int> phase_of;
    for (const auto& b : bursts) {
      std::size_t start = b.first_row;
      const std::size_t end = b.first_row + b.count;
      while (start < end) {
        const int ph = phase_at(schedule, steps[start]);
        std::size_t stop = start + 1;
        while (stop < end && phase_at(schedule, steps[stop]) == ph) ++stop;
        sim::Window w = b;
        w.first_row = start;
        w.count = stop - start;
        w.start_step = steps[start];
        w.end_step = steps[stop - 1] + 1;
        w.starts_burst = start == b.first_row;
        w.acc_steps = 1;
        windows.push_back(w);
        phase_of.push_back(ph);
        start = stop;
      }
    }
    ro.windows_total = windows.size();
    const auto rep = engine_or_local(opt.engine).open(source, {}, ro);
    ReplayRun run = new_run("scheduled");
    const std::vector<kernels::MethodSpec> none(layers.size());
    for (std::size_t k = 0; k < windows.size(); ++k) {
      const bool continues = k + 1 < windows.size() && !windows[k + 1].starts_burst;
      const int ph = phase_of[k];
      const auto& s = ph < 0 ? none : settings[static_cast<std::size_t>(ph)];
      const auto wm = rep->run_window(windows[k], s, continues);
      add_window(run, wm, windows[k], steps, s, layers, ph < 0 ? "" : schedule.phases[static_cast<std::size_t>(ph)].label);
    }
    finish(run);
    double predicted = 0;
    for (const auto& st : run.steps) predicted += static_cast<double>(st.predicted_bytes);
    run.predicted_bytes_per_step = run.steps.empty() ? 0.0 : predicted / static_cast<double>(run.steps.size());
    out.runs.push_back(std::move(run));
    out.replay_layout = rep->layout();
    return out;
  }

  std::vector<std::size_t> chosen;
  for (std::size_t i = 0; i < schedule.phases.size(); ++i) {
    const auto& label = schedule.phases[i].label;
    if (opt.only == "all" || (opt.only == "last" && i + 1 == schedule.phases.size()) || opt.only == label) chosen.push_back(i);
  }
  if (chosen.empty()) {
    throw ConfigError(origin + ": no phase labelled '" + printable(opt.only) + "' (phases: " + planner::phase_labels(schedule) +
                      "; or scheduled, last, all)");
  }
  ro.windows_total = bursts.size() * chosen.size();
  for (std::size_t i : chosen) {
    const auto rep = engine_or_local(opt.engine).open(source, {}, ro);
    ReplayRun run = new_run(schedule.phases[i].label);
    run.predicted_bytes_per_step = schedule.phases[i].predicted.at("bytes_per_step").get<double>();
    for (const auto& w : bursts) add_window(run, rep->run_window(w, settings[i], false), w, steps, settings[i], layers, run.label);
    finish(run);
    out.replay_layout = rep->layout();
    out.runs.push_back(std::move(run));
  }
  return out;
}

}  // namespace lgreco::pipeline
