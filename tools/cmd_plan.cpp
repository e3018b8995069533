// `lgreco plan`: a per-layer compression schedule, from candidate tables (--tables) or from a trace
// replayed in the closed loop (--trace). Flags in, library calls, text out.
#include <cstdio>
#include <iostream>
#include <optional>

#include "core/atomic_file.hpp"
#include "core/cancel.hpp"
#include "core/error.hpp"
#include "core/json_util.hpp"
#include "core/provenance.hpp"
#include "core/units.hpp"
#include "kernels/method_json.hpp"
#include "pipeline/loop.hpp"
#include "planner/plan.hpp"
#include "planner/schedule.hpp"
#include "planner/tables.hpp"
#include "tools/args.hpp"
#include "tools/command.hpp"
#include "tools/loop_args.hpp"
#include "tools/plan_report.hpp"
#include "tools/ranks.hpp"

namespace lgreco::cli {
namespace {

using namespace lgreco::planner;

struct Flags {
  std::string tables, engine = "reference", alpha, error_budget, bytes_budget, time_budget, include, exclude;
  std::vector<std::string> pins;
  std::string min_rate, max_layer_error, warmup, seed = "0", buckets = "10000", grid = "1000", max_front = "20000";
  std::string bandwidth, latency = "5us", forward, out, topology, network_fit;
  bool force = false, allow_infeasible = false;
  Format format = Format::kTable;
};

std::string fmt_num(double v, const char* f = "%.4g") {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

PlanOptions plan_options(const Flags& f, const ArgParser& p, Json& config) {
  PlanOptions o;
  try {
    o.engine = parse_engine(f.engine);
  } catch (const ConfigError& e) {
    throw UsageError(std::string("--engine: ") + e.what());
  }
  int budgets = 0;
  for (const char* b : {"--alpha", "--error-budget", "--bytes-budget", "--time-budget"}) budgets += p.given(b) ? 1 : 0;
  if (budgets > 1) throw UsageError("lgreco plan: give at most one of --alpha, --error-budget, --bytes-budget, --time-budget");
  if (p.given("--error-budget")) o.budget = {Budget::Kind::kError, parse_double("--error-budget", f.error_budget)};
  else if (p.given("--bytes-budget")) o.budget = {Budget::Kind::kBytes, static_cast<double>(units::parse_bytes(f.bytes_budget))};
  else if (p.given("--time-budget")) o.budget = {Budget::Kind::kTime, units::parse_seconds(f.time_budget)};
  else o.budget = {Budget::Kind::kAlpha, p.given("--alpha") ? parse_double("--alpha", f.alpha) : 1.0};
  if ((o.budget.kind == Budget::Kind::kAlpha || o.budget.kind == Budget::Kind::kError) && o.budget.value < 0) {
    throw UsageError(std::string(o.budget.kind == Budget::Kind::kAlpha ? "--alpha " + f.alpha : "--error-budget " + f.error_budget) +
                     ": expected a number >= 0");
  }
  if (p.given("--include")) o.include_re = f.include;
  if (p.given("--exclude")) o.exclude_re = f.exclude;
  for (const auto& pin : f.pins) {
    const auto eq = pin.find('=');
    if (eq == std::string::npos || eq == 0) throw UsageError("--pin '" + pin + "': expected name=method[:key=value,...]");
    try {
      o.pins.emplace_back(pin.substr(0, eq), kernels::parse_method_text(pin.substr(eq + 1)));
    } catch (const ConfigError& e) {
      throw UsageError("--pin " + pin.substr(0, eq) + ": " + e.what());
    }
  }
  if (p.given("--min-compression-rate")) o.min_compression_rate = parse_double("--min-compression-rate", f.min_rate);
  if (p.given("--max-layer-error")) o.max_layer_error = parse_double("--max-layer-error", f.max_layer_error);
  o.reference.buckets = static_cast<int>(parse_int("--buckets", f.buckets));
  o.time.grid = static_cast<int>(parse_int("--grid", f.grid));
  o.front.max_front = static_cast<std::size_t>(parse_int("--max-front", f.max_front));
  if (p.given("--bandwidth")) o.bandwidth_Bps = units::parse_bandwidth_Bps(f.bandwidth);
  if (p.given("--forward-time")) o.forward_s = units::parse_seconds(f.forward);
  const char* kinds[] = {"alpha", "error", "bytes", "time"};
  Json pins = Json::object();
  for (const auto& [n, m] : o.pins) pins[n] = kernels::method_to_json(m);
  config = {{"engine", f.engine},
            {"budget", {{"kind", kinds[static_cast<int>(o.budget.kind)]}, {"value", o.budget.value}}},
            {"include", o.include_re ? Json(*o.include_re) : Json(nullptr)},
            {"exclude", o.exclude_re ? Json(*o.exclude_re) : Json(nullptr)},
            {"excluded_layers_stay_at", "default"},
            {"pins", pins},
            {"min_compression_rate", o.min_compression_rate ? Json(*o.min_compression_rate) : Json(nullptr)},
            {"max_layer_error", o.max_layer_error ? Json(*o.max_layer_error) : Json(nullptr)},
            {"reference_buckets", o.reference.buckets},
            {"time_grid", o.time.grid},
            {"max_front", o.front.max_front},
            {"epsilon", o.front.epsilon},
            {"forward_time_s", o.forward_s},
            {"network", o.bandwidth_Bps ? Json{{"model", "ring"}, {"bandwidth_Gbps", units::Bps_to_gbps(*o.bandwidth_Bps)},
                                               {"latency_us", units::s_to_us(units::parse_seconds(f.latency))}}
                                        : Json(nullptr)}};
  return o;
}

// `lgreco plan --trace ...`: the closed loop from a trace to a phased schedule.
int run_plan_trace(const std::vector<std::string>& args) {
  LoopArgs a;
  std::string topology, out, tables_out, network_fit;
  bool force = false;
  Format fmt = Format::kTable;
  ArgParser p("lgreco plan",
              "Replay a trace window by window through the compression kernels, plan each window from the "
              "previous one's candidate tables, apply that plan in the next window, and write the phased "
              "schedule (warm-up, uniform, one phase per plan). The summary goes to stdout.");
  add_loop_options(p, a);
  p.option("--topology", &topology, "NAME|FILE", "cluster to predict step times on, e.g. 4x8xA100-1x25G");
  p.option("--network-fit", &network_fit, "FILE", "calibration of that topology from `lgreco net calibrate`");
  p.option("--output", &out, "FILE", "schedule to write (JSON)", true, "-o");
  p.option("--tables-out", &tables_out, "FILE", "also write the candidate tables (reusable by plan --tables; HDF5 when FILE ends in .h5)");
  p.flag("--force", &force, "overwrite existing outputs");
  KernelTimeArgs kt;
  add_kernel_time_options(p, kt);
  p.format(&fmt);
  if (!p.parse(args)) return 0;
  const Overwrite policy = force ? Overwrite::kAllow : Overwrite::kRefuse;
  check_writable_destination(out, policy);
  if (!tables_out.empty()) check_writable_destination(tables_out, policy);

  LoopRequest req = resolve_loop_options(a);
  pipeline::LoopOptions& o = req.options;
  const std::optional<pipeline::Cluster> cluster = resolve_cluster(topology, network_fit);
  if (o.plan.engine == planner::Engine::kTime && !cluster) {
    throw UsageError("--engine time needs --topology (it minimises the predicted step time)");
  }
  if (!kt.profile.empty() && !cluster) throw UsageError("--kernel-profile needs --topology (kernel time only enters step predictions)");
  const pipeline::KernelTime kernel_time = resolve_kernel_time(kt);
  if (cluster) {
    o.plan.kernel_time = pipeline::kernel_time_fn(kernel_time, *cluster);
    o.gpu = cluster->gpu;
  }
  o.engine = ranks().engine;
  const pipeline::LoopResult r = pipeline::run_closed_loop(a.trace, o, cluster ? cluster->cost.get() : nullptr, stderr_progress());
  print_layout_note(r.replay_layout);
  Json config = pipeline::loop_config(o, r);
  config["trace"] = a.trace;
  config["threads"] = req.threads_requested;
  if (cluster) {
    config["topology"] = cluster->description;
    config["ranks"] = cluster->ranks();
  }
  config["kernel_time"] = pipeline::kernel_time_json(kernel_time, cluster ? &*cluster : nullptr);
  const Json schedule = planner::schedule_to_json(pipeline::loop_schedule(o, r, config, cluster ? cluster->ranks() : r.world_size));

  // Both outputs go to temporary files first and are renamed only when both are complete.
  AtomicFile sched_file(out, policy);
  sched_file.stream() << schedule.dump(2) << "\n";
  std::optional<planner::PendingTables> tables_file;
  if (!tables_out.empty()) tables_file.emplace(r.tables, tables_out, policy);
  throw_if_cancelled();
  sched_file.commit();
  if (tables_file) tables_file->commit();

  if (fmt == Format::kJson) {
    std::cout << Json{{"schema_version", 1}, {"kind", "lgreco-plan-summary"}, {"schedule", out},
                      {"predicted", schedule["predicted"]}, {"config", config},
                      {"replay", Json{{"seconds", r.replay_s}, {"grad_bytes", r.grad_bytes}}},
                      {"provenance", schedule["provenance"]}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << loop_summary(o, r, cluster ? cluster->name : "") << "schedule written to " << out;
    if (!tables_out.empty()) std::cout << ", tables to " << tables_out;
    std::cout << " (replayed " << units::format_bytes(r.grad_bytes) << " of gradients in " << units::format_seconds(r.replay_s)
              << ")\n";
  }
  return 0;
}

int run_plan(const std::vector<std::string>& args) {
  // The trace-driven path (closed-loop replay) has its own options.
  for (const auto& a : args) {
    if (a == "--trace" || a.rfind("--trace=", 0) == 0) return run_plan_trace(args);
  }
  Flags f;
  ArgParser p("lgreco plan",
              "Choose a compression setting for every layer from candidate tables (docs/tables-format.md) and write a phased\n"
              "schedule (docs/schedule-format.md): warm-up uncompressed, the uniform default during the first window, then\n"
              "the plan made from window k during window k+1. Engines: reference (the L-GreCo DP), exact (Pareto fronts),\n"
              "time (least predicted step time, needs --bandwidth), dual (least error within a byte or time budget).");
  p.option("--tables", &f.tables, "FILE", "candidate tables (JSON, or HDF5 for large models)")
      .option("--engine", &f.engine, "NAME", "reference | exact | time | dual (default reference)")
      .option("--alpha", &f.alpha, "A", "error budget = A x the uniform default's total error (default 1)")
      .option("--error-budget", &f.error_budget, "E", "explicit total error budget")
      .option("--bytes-budget", &f.bytes_budget, "SIZE", "byte budget per step (dual engine), e.g. 64MiB")
      .option("--time-budget", &f.time_budget, "DURATION", "communication time per step (dual; bytes = time x --bandwidth)")
      .option("--include", &f.include, "RE", "plan only parameters whose name matches (others stay at their default)")
      .option("--exclude", &f.exclude, "RE", "keep matching parameters at their default setting")
      .multi("--pin", &f.pins, "NAME=METHOD[:K=V,...]", "fix a parameter's setting (must be a candidate, or none)")
      .option("--min-compression-rate", &f.min_rate, "R", "drop PowerSGD candidates that do not compress at rate R")
      .option("--max-layer-error", &f.max_layer_error, "E", "drop candidates whose error exceeds E")
      .option("--warmup-steps", &f.warmup, "N", "uncompressed warm-up steps (default: the first window's start)")
      .option("--seed", &f.seed, "S", "seed recorded in the schedule for the hook's random draws (default 0)")
      .option("--buckets", &f.buckets, "B", "reference DP error buckets (default 10000)")
      .option("--grid", &f.grid, "G", "time engine error grid (default 1000)")
      .option("--max-front", &f.max_front, "N", "exact/dual front size before epsilon-trimming (default 20000)")
      .option("--bandwidth", &f.bandwidth, "BW", "network bandwidth for time predictions, e.g. 25Gbps (ring model)")
      .option("--latency", &f.latency, "DURATION", "per-hop latency of the ring model (default 5us)")
      .option("--topology", &f.topology, "NAME|FILE",
              "cluster for time predictions instead of the ring model (the NCCL-shaped network model, e.g. 4x8xA100-1x25G)")
      .option("--network-fit", &f.network_fit, "FILE", "calibration of that topology from `lgreco net calibrate`")
      .option("--forward-time", &f.forward, "DURATION", "forward pass time before backward starts (default 0)")
      .option("--output", &f.out, "FILE", "write the schedule here", false, "-o")
      .flag("--force", &f.force, "overwrite an existing output file")
      .flag("--allow-infeasible", &f.allow_infeasible, "write the least-error plan (status infeasible) when no plan meets the budget")
      .format(&f.format);
  if (!p.parse(args)) return 0;
  const Overwrite policy = f.force ? Overwrite::kAllow : Overwrite::kRefuse;
  if (!f.out.empty()) check_writable_destination(f.out, policy);
  Json config;
  const PlanOptions opt = plan_options(f, p, config);
  if (f.tables.empty()) throw UsageError("lgreco plan: needs --tables FILE (see --help)");
  std::vector<std::filesystem::path> inputs{f.tables};
  const Tables t = read_tables(f.tables);
  std::optional<net::RingCost> ring;
  std::optional<Json> fit_doc;
  const std::optional<pipeline::Cluster> cluster = resolve_cluster(f.topology, f.network_fit, &fit_doc);
  if (cluster) {
    if (fit_doc) inputs.push_back(f.network_fit);
    config["network"] = Json{{"model", "nccl"}, {"topology", cluster->description}};
  } else if (opt.bandwidth_Bps) {
    ring.emplace(units::parse_seconds(f.latency), *opt.bandwidth_Bps, t.world_size);
  }
  const net::CollectiveCost* cost = cluster ? cluster->cost.get() : ring ? &*ring : nullptr;
  std::vector<WindowPlan> plans;
  for (std::size_t w = 0; w < t.windows.size(); ++w) {
    try {
      plans.push_back(plan_window(t.windows[w], opt, cost));
    } catch (const ConfigError& e) {
      throw ConfigError(f.tables + ": window " + std::to_string(w) + ": " + e.what());
    }
  }
  for (std::size_t w = 0; w < plans.size(); ++w) {
    const WindowPlan& pl = plans[w];
    if (pl.status != PlanStatus::kInfeasible || f.allow_infeasible) continue;
    const std::string what = pl.bytes_budget ? "byte budget " + units::format_bytes(*pl.bytes_budget) + " (least possible " +
                                                   units::format_bytes(pl.total_bytes) + ")"
                                             : "error budget " + fmt_num(pl.error_budget.value_or(0)) + " (least possible error " +
                                                   fmt_num(pl.total_error) + ")";
    throw InputError(f.tables + ": window " + std::to_string(w) + ": no plan meets the " + what +
                     "; raise the budget or pass --allow-infeasible to write the least-" + (pl.bytes_budget ? "bytes" : "error") + " plan");
  }
  std::optional<std::int64_t> warm;
  if (p.given("--warmup-steps")) warm = parse_int("--warmup-steps", f.warmup);
  const long long seed = parse_int("--seed", f.seed);
  if (seed < 0) throw UsageError("--seed: expected an integer >= 0");
  config["warmup_steps"] = warm ? Json(*warm) : Json(nullptr);
  const Schedule s = build_schedule(t, plans, f.engine, warm, static_cast<std::uint64_t>(seed), config, provenance_json(inputs));
  const Json doc = schedule_to_json(s);
  if (!f.out.empty()) write_json_file(f.out, doc, policy);
  if (f.format == Format::kJson) {
    std::cout << doc.dump(2) << "\n";
  } else {
    print_tables_summary(std::cout, t, plans, s);
    if (!f.out.empty()) std::cout << "wrote " << f.out << "\n";
  }
  return 0;
}

LGRECO_COMMAND("plan", "choose per-layer compression from candidate tables and write a schedule", run_plan);

}  // namespace
}  // namespace lgreco::cli
