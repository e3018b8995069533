// The closed loop of `lgreco plan --trace`: replay a window under the plan in force, tabulate its
// candidates, plan the next window from those tables.
#include <algorithm>
#include <cmath>
#include <future>

#include <unistd.h>

#include "core/error.hpp"
#include "core/provenance.hpp"
#include "core/units.hpp"
#include "kernels/method_json.hpp"
#include "sim/replay_pool.hpp"
#include "sim/replay_trace_source.hpp"
#include "tools/plan_trace.hpp"

namespace lgreco::cli {
namespace {

planner::MethodSpec to_planner(const kernels::MethodSpec& s, const std::string& where) {
  const Json j = kernels::method_to_json(s);
  return planner::normalize_method(j.at("method").get<std::string>(), j.at("params"), where);
}

sim::Collective to_sim(kernels::Collective c) {
  return c == kernels::Collective::kAllgather ? sim::Collective::kAllgather : sim::Collective::kAllreduce;
}

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
    for (const auto& c : lw.candidates) {
      planner::Candidate pc;
      pc.spec = to_planner(c.spec, "layer '" + src.name + "' candidate");
      pc.error = c.error;
      pc.bytes = c.bytes;
      pc.collective = to_sim(c.collective);
      t.candidates.push_back(std::move(pc));
    }
    w.layers.push_back(std::move(t));
  }
  return w;
}

double parse_num(const std::string& opt, const std::string& v) { return parse_double(opt, v); }

}  // namespace

void add_trace_job_options(ArgParser& p, TraceJobArgs& a, bool trace_required) {
  p.option("--trace", &a.trace, "FILE", "trace to replay (HDF5, docs/trace-format.md)", trace_required);
  p.option("--family", &a.family, "NAME", "method family: powersgd, topk, qsgd, maxmin, mixed (PowerSGD + max-min), or all (PowerSGD + top-k + max-min); default powersgd");
  p.option("--default", &a.defaults, "K=V[,K=V]",
           "the uniform default setting, e.g. rank=4 (powersgd), density=0.01 (topk), bits=4 (qsgd, maxmin), "
           "rank=4,bits=4 (mixed); unspecified parameters take their defaults");
  p.option("--engine", &a.engine, "NAME", "planning engine: reference, exact, time or dual (default reference)");
  p.option("--error-mode", &a.error_mode, "MODE",
           "candidate error: power (5 seeded subspace iterations on A), exact (singular values), trajectory "
           "(each candidate run over the window with its own residual); default power");
  p.option("--backend", &a.backend, "NAME", "kernels: auto (CUDA when a device is there), cpu or cuda (default auto)");
  p.option("--threads", &a.threads, "N", "worker threads (default: all cores)");
  p.option("--memory-limit", &a.memory_limit, "SIZE",
           "run layers in parallel only while their buffers (estimated at 32 bytes per element) fit in SIZE, "
           "e.g. 8GiB; 0 = no limit (default: half the physical memory)");
  p.option("--seed", &a.seed, "N", "run seed: random streams and the measurement start (default 0)");
  p.option("--warmup-steps", &a.warmup, "N", "uncompressed warm-up steps of the schedule (default: the trace's first step)");
  p.option("--period", &a.period, "N", "longest window, in steps (default 1000); bursts are cut into windows of this length");
  p.option("--acc-steps", &a.acc, "N", "steps averaged into the measurement matrix A (default 10)");
  p.option("--alpha", &a.alpha, "X", "error budget as a multiple of the uniform plan's total error (default 1)");
  p.option("--rank-low", &a.rank_low, "LOW", "lowest candidate rank as a fraction of the default (default 0.5)");
  p.option("--rank-high", &a.rank_high, "HIGH", "highest candidate rank as a multiple of the default (default 2)");
  p.option("--min-numel", &a.min_numel, "N", "smallest tensor planned by topk/qsgd/maxmin (default 1024)");
}

double default_memory_limit_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? 0.5 * static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}

TraceJob resolve_trace_job(const TraceJobArgs& a) {
  TraceJob j;
  j.trace = a.trace;
  j.family = sim::family_from_name(a.family);
  if (!a.defaults.empty()) {
    for (const auto& kv : split_list(a.defaults)) {
      const auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) throw UsageError("--default: expected KEY=VALUE, got '" + kv + "'");
      j.default_kv.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    }
  }
  j.defaults = sim::parse_family_defaults(j.family, j.default_kv);
  j.ranges.rank_low = parse_num("--rank-low", a.rank_low);
  j.ranges.rank_high = parse_num("--rank-high", a.rank_high);
  if (!(j.ranges.rank_low >= 0 && j.ranges.rank_low <= 1 && j.ranges.rank_high >= 1)) {
    throw UsageError("rank range must satisfy 0 <= --rank-low <= 1 <= --rank-high");
  }
  j.ranges.min_numel = static_cast<std::uint64_t>(parse_int("--min-numel", a.min_numel));
  j.windows.warmup_steps = 0;
  if (!a.warmup.empty()) {
    j.schedule_warmup = parse_int("--warmup-steps", a.warmup);
    j.windows.warmup_steps = *j.schedule_warmup;
  }
  j.windows.period_steps = parse_int("--period", a.period);
  j.windows.acc_steps = static_cast<int>(parse_int("--acc-steps", a.acc));
  j.error_mode = sim::error_mode_from_name(a.error_mode);
  j.backend_request = a.backend;
  if (!a.threads.empty()) {
    j.threads = static_cast<int>(parse_int("--threads", a.threads));
    if (j.threads < 1) throw UsageError("--threads must be >= 1, got " + a.threads);
  }
  if (a.memory_limit.empty()) {
    j.memory_limit_bytes = default_memory_limit_bytes();
  } else {
    try {
      j.memory_limit_bytes = static_cast<double>(units::parse_bytes(a.memory_limit));
    } catch (const ConfigError& e) {
      throw UsageError(std::string("--memory-limit: ") + e.what());
    }
  }
  const long long seed = parse_int("--seed", a.seed);
  if (seed < 0) throw UsageError("--seed must be >= 0, got " + a.seed);
  j.seed = static_cast<std::uint64_t>(seed);
  j.plan.engine = planner::parse_engine(a.engine);
  j.plan.budget.kind = planner::Budget::Kind::kAlpha;
  j.plan.budget.value = parse_num("--alpha", a.alpha);
  if (!(j.plan.budget.value > 0) || !std::isfinite(j.plan.budget.value)) throw UsageError("--alpha must be > 0, got " + a.alpha);
  return j;
}

ClosedLoopResult run_closed_loop(const TraceJob& job, const sim::CollectiveCost* cost,
                                 const std::function<void(const sim::ReplayProgress&)>& progress) {
  const auto source = sim::open_trace_source(job.trace);
  // Hashing a multi-GB trace for the provenance takes as long as reading it: do it meanwhile.
  auto provenance = std::async(std::launch::async, [path = job.trace] { return provenance_json({path}); });
  const auto& layers = source->layers();
  ClosedLoopResult r;
  r.model = source->model();
  r.world_size = source->world_size();
  r.windows = sim::plan_windows(source->steps(), job.windows);
  r.schedule_warmup = r.windows.warmup_shrunk ? std::nullopt : job.schedule_warmup;

  r.plan = job.plan;
  if (r.plan.forward_s == 0) {
    double backward = 0;
    for (const auto& l : layers) backward += l.compute_time_s.value_or(0.0);
    r.plan.forward_s = 0.5 * backward;
  }
  std::vector<sim::CandidateSet> sets;
  std::vector<kernels::MethodSpec> in_force;
  for (const auto& l : layers) {
    sets.push_back(sim::make_candidates(job.family, job.defaults, l.shape, job.ranges));
    in_force.push_back(sets.back().candidates[static_cast<std::size_t>(sets.back().default_index)]);
  }
  sim::ReplayOptions opt;
  opt.mode = job.error_mode;
  opt.seed = job.seed;
  opt.threads = sim::resolve_threads(job.threads);
  opt.memory_limit_bytes = job.memory_limit_bytes;
  opt.backend = sim::resolve_backend(job.backend_request);
  opt.windows_total = r.windows.windows.size();
  opt.progress = progress;
  r.backend = kernels::to_string(opt.backend);

  r.tables.model = r.model;
  r.tables.world_size = r.world_size;
  r.tables.error_mode = sim::to_string(job.error_mode);
  r.tables.acc_steps = job.windows.acc_steps;

  sim::Replay replay(*source, sets, opt);
  const auto& wins = r.windows.windows;
  for (std::size_t k = 0; k < wins.size(); ++k) {
    const bool continues = k + 1 < wins.size() && !wins[k + 1].starts_burst;
    const auto wm = replay.run_window(wins[k], in_force, continues);
    r.in_force.push_back(in_force);
    r.tables.windows.push_back(table_window(wm, layers));
    const auto& tw = r.tables.windows.back();
    r.plans.push_back(planner::plan_window(tw, r.plan, cost));
    r.uniform.push_back(planner::uniform_plan(tw, r.plan, cost));
    const auto& choice = r.plans.back().choice;
    for (std::size_t l = 0; l < layers.size(); ++l) in_force[l] = sets[l].candidates.at(static_cast<std::size_t>(choice.at(l)));
  }
  r.replay_s = replay.elapsed_s();
  r.peak_task_bytes = replay.peak_task_bytes();
  r.peak_tasks = replay.peak_tasks();
  r.grad_bytes = replay.grad_bytes();
  planner::validate_tables(r.tables, "replay of " + job.trace.string());
  r.provenance = provenance.get();
  r.tables.provenance = r.provenance;
  return r;
}

}  // namespace lgreco::cli
