// The closed loop (pipeline/loop.hpp).
#include "pipeline/loop.hpp"

#include <cmath>
#include <future>

#include "core/error.hpp"
#include "core/provenance.hpp"
#include "kernels/method_json.hpp"
#include "sim/replay_trace_source.hpp"

namespace lgreco::pipeline {
namespace {

planner::Window table_window(const sim::WindowMeasure& wm, const std::vector<sim::SourceLayer>& layers) {
  planner::Window w;
  w.start_step = wm.window.start_step;
  w.end_step = wm.window.end_step;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const auto& src = layers[l];
    const auto& lw = wm.layers[l];
    planner::LayerTable t;
    t.name = src.name;
    t.shape = src.shape;
    t.numel = static_cast<std::int64_t>(src.numel);
    t.kind = src.kind;
    t.bucket = src.bucket;
    t.backward_order = src.backward_order;
    t.compute_time_s = src.compute_time_s;
    t.default_index = lw.default_index;
    for (const auto& c : lw.candidates) t.candidates.push_back(planner::make_candidate(c.spec, src.shape, c.error));
    w.layers.push_back(std::move(t));
  }
  return w;
}

}  // namespace

void validate(const LoopOptions& o) {
  if (o.threads < 1) throw ConfigError("threads: " + std::to_string(o.threads) + "; expected >= 1");
  if (o.windows.period_steps < 1) throw ConfigError("period: " + std::to_string(o.windows.period_steps) + " steps; expected >= 1");
  if (o.windows.acc_steps < 1) throw ConfigError("acc_steps: " + std::to_string(o.windows.acc_steps) + "; expected >= 1");
  if (o.windows.warmup_steps < 0) throw ConfigError("warm-up: " + std::to_string(o.windows.warmup_steps) + " steps; expected >= 0");
  if (!(o.ranges.rank_low >= 0 && o.ranges.rank_low <= 1 && o.ranges.rank_high >= 1 && std::isfinite(o.ranges.rank_high)))
    throw ConfigError("rank range: low " + std::to_string(o.ranges.rank_low) + ", high " + std::to_string(o.ranges.rank_high) +
                      "; expected 0 <= low <= 1 <= high");
  if (!(o.memory_limit_bytes >= 0) || !std::isfinite(o.memory_limit_bytes))
    throw ConfigError("memory limit: " + std::to_string(o.memory_limit_bytes) + " bytes; expected >= 0");
  if (const std::string why = planner::budget_problem(o.plan.budget, o.plan.engine); !why.empty()) throw ConfigError(why);
}

LoopResult run_closed_loop(const sim::GradientSource& source, const LoopOptions& o, const net::CollectiveCost* cost,
                           const Progress& progress) {
  validate(o);
  const auto& layers = source.layers();
  LoopResult r;
  r.model = source.model();
  r.world_size = source.world_size();
  r.windows = sim::plan_windows(source.steps(), o.windows);
  r.schedule_warmup = r.windows.warmup_shrunk ? std::nullopt : o.schedule_warmup;

  std::vector<ComputeLayer> cl;
  for (const auto& l : layers) cl.push_back({l.name, l.shape, l.compute_time_s});
  r.compute = compute_model(cl, r.model, o.gpu ? &*o.gpu : nullptr, o.compute);
  r.plan = o.plan;
  r.plan.forward_s = r.compute.forward_s;
  r.plan.optimizer_s = r.compute.optimizer_s;
  std::vector<sim::CandidateSet> sets;
  std::vector<kernels::MethodSpec> in_force;
  for (const auto& l : layers) {
    sets.push_back(sim::make_candidates(o.family, o.defaults, l.shape, o.ranges));
    in_force.push_back(sets.back().candidates[static_cast<std::size_t>(sets.back().default_index)]);
  }
  sim::ReplayOptions opt;
  opt.mode = o.error_mode;
  opt.seed = o.seed;
  opt.threads = o.threads;
  opt.memory_limit_bytes = o.memory_limit_bytes;
  opt.backend = o.backend;
  opt.windows_total = r.windows.windows.size();
  opt.progress = progress;
  r.backend = kernels::to_string(opt.backend);

  r.tables.model = r.model;
  r.tables.world_size = r.world_size;
  r.tables.error_mode = sim::to_string(o.error_mode);
  r.tables.acc_steps = o.windows.acc_steps;

  const auto replay = engine_or_local(o.engine).open(source, sets, opt);
  const auto& wins = r.windows.windows;
  for (std::size_t k = 0; k < wins.size(); ++k) {
    const bool continues = k + 1 < wins.size() && !wins[k + 1].starts_burst;
    const auto wm = replay->run_window(wins[k], in_force, continues);
    r.in_force.push_back(in_force);
    // Delivered error over the same steps the candidates' errors are measured on: the window's last
    // acc_steps (earlier steps of a burst run with a residual still filling up).
    std::vector<double> delivered;
    for (const auto& lw : wm.layers) {
      const std::size_t n = lw.step_error.size(), a = std::min<std::size_t>(n, static_cast<std::size_t>(wins[k].acc_steps));
      double e = 0;
      for (std::size_t i = n - a; i < n; ++i) e += lw.step_error[i];
      delivered.push_back(a ? e / static_cast<double>(a) : 0.0);
    }
    r.delivered_error.push_back(std::move(delivered));
    r.tables.windows.push_back(table_window(wm, layers));
    if (r.compute.source != ComputeSource::kNone)
      for (std::size_t l = 0; l < layers.size(); ++l) r.tables.windows.back().layers[l].compute_time_s = r.compute.backward_s[l];
    const auto& tw = r.tables.windows.back();
    r.plans.push_back(planner::plan_window(tw, r.plan, cost));
    r.uniform.push_back(planner::uniform_plan(tw, r.plan, cost));
    const auto& choice = r.plans.back().choice;
    for (std::size_t l = 0; l < layers.size(); ++l) {
      // A pinned "none" (choice −1) has no candidate index: it runs uncompressed.
      in_force[l] = choice.at(l) < 0 ? kernels::MethodSpec{} : sets[l].candidates.at(static_cast<std::size_t>(choice.at(l)));
    }
  }
  const ReplayStats stats = replay->stats();
  r.replay_s = stats.elapsed_s;
  r.peak_task_bytes = stats.peak_task_bytes;
  r.peak_tasks = stats.peak_tasks;
  r.grad_bytes = stats.grad_bytes;
  r.replay_layout = replay->layout();
  planner::validate_tables(r.tables, "replay of " + r.model);
  return r;
}

LoopResult run_closed_loop(const std::filesystem::path& trace, const LoopOptions& o, const net::CollectiveCost* cost,
                           const Progress& progress) {
  validate(o);
  const auto source = sim::open_trace_source(trace);
  // Hashing a multi-GB trace for the provenance takes as long as reading it: do it meanwhile.
  auto provenance = std::async(std::launch::async, [trace] { return provenance_json({trace}); });
  LoopResult r;
  try {
    r = run_closed_loop(*source, o, cost, progress);
  } catch (...) {
    provenance.wait();
    throw;
  }
  r.provenance = provenance.get();
  if (!r.replay_layout.is_null()) r.provenance["replay"] = r.replay_layout;
  r.tables.provenance = r.provenance;
  return r;
}

Json loop_config(const LoopOptions& o, const LoopResult& r) {
  Json defaults = Json::object();
  for (const auto& [k, v] : o.default_params) defaults[k] = v;
  Json windows = Json::array();
  for (const auto& w : r.windows.windows) {
    windows.push_back(Json{{"start_step", w.start_step}, {"end_step", w.end_step}, {"acc_steps", w.acc_steps},
                           {"resets_state", w.starts_burst}});
  }
  return Json{{"family", sim::to_string(o.family)},
              {"default", defaults},
              {"engine", planner::engine_name(o.plan.engine)},
              {"error_mode", sim::to_string(o.error_mode)},
              {"alpha", o.plan.budget.value},
              {"rank_low", o.ranges.rank_low},
              {"rank_high", o.ranges.rank_high},
              {"min_numel", o.ranges.min_numel},
              {"warmup_steps", o.schedule_warmup ? Json(*o.schedule_warmup) : Json(nullptr)},
              {"period_steps", o.windows.period_steps},
              {"acc_steps", o.windows.acc_steps},
              {"seed", o.seed},
              {"backend", r.backend},
              {"memory_limit_bytes", o.memory_limit_bytes},
              {"replay_peak_concurrent_layers", r.peak_tasks},
              {"replay_peak_concurrent_layer_bytes", r.peak_task_bytes},
              {"forward_s", r.plan.forward_s},
              {"optimizer_s", r.plan.optimizer_s},
              {"replayed_windows", windows},
              {"window_notes", r.windows.notes}};
}

std::vector<Delivered> delivered_errors(const LoopOptions& o, const LoopResult& r) {
  std::vector<Delivered> out;
  for (std::size_t k = 0; k < r.delivered_error.size(); ++k) {
    Delivered d;
    d.window = k;
    d.phase = k == 0 ? "uniform" : "plan-" + std::to_string(k - 1);
    for (double e : r.delivered_error[k]) d.delivered += e;
    d.predicted = k == 0 ? r.uniform[0].total_error : r.plans[k - 1].total_error;
    if (o.error_mode == sim::ErrorMode::kTrajectory) {
      double u = 0;
      for (const auto& l : r.tables.windows[k].layers) u += l.candidates[static_cast<std::size_t>(l.default_index)].error;
      d.uniform_same_window = u;
    }
    out.push_back(std::move(d));
  }
  return out;
}

planner::Schedule loop_schedule(const LoopOptions& o, const LoopResult& r, const Json& config, int world_size) {
  // Phases follow the planner's convention (planner/schedule.hpp), shared with `plan --tables`: the
  // trace's step ids are the training timeline; plan-k is in force from the end of window k.
  planner::Schedule s = planner::build_schedule(r.tables, r.plans, planner::engine_name(o.plan.engine), r.schedule_warmup, o.seed,
                                                config, r.provenance);
  s.family = sim::to_string(o.family);
  s.world_size = world_size;
  for (const auto& n : r.windows.notes) s.predicted["warnings"].push_back(n);
  // What each phase delivered where the trace shows it running (replay with error feedback).
  for (const Delivered& d : delivered_errors(o, r)) {
    for (auto& ph : s.phases) {
      if (ph.label != d.phase) continue;
      ph.predicted["delivered_error_per_step"] = d.delivered;
      ph.predicted["delivered_in_window"] = static_cast<int>(d.window);
      if (d.uniform_same_window) ph.predicted["uniform_error_per_step_same_window"] = *d.uniform_same_window;
    }
  }
  const auto problems = planner::check_schedule(s);
  if (!problems.empty()) throw Error("the closed loop built an inconsistent schedule: " + problems.front());
  return s;
}

}  // namespace lgreco::pipeline
