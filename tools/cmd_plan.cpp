// `lgreco plan`: a per-layer compression schedule, from candidate tables (--tables) or from a trace
// replayed in the closed loop (--trace). Flags in, library calls, text out.
#include <cstdio>
#include <array>
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
#include "pipeline/predict.hpp"
#include "pipeline/whatif.hpp"
#include "sim/replay_trace_source.hpp"
#include "planner/plan.hpp"
#include "planner/plan_json.hpp"
#include "planner/schedule.hpp"
#include "planner/tables.hpp"
#include "tools/args.hpp"
#include "tools/command.hpp"
#include "tools/loop_args.hpp"
#include "tools/net_common.hpp"
#include "tools/plan_report.hpp"
#include "tools/ranks.hpp"

namespace lgreco::cli {
namespace {

using namespace lgreco::planner;

struct Flags {
  std::string tables, engine = "reference", alpha, error_budget, bytes_budget, time_budget, include, exclude;
  std::vector<std::string> pins;
  std::string min_rate, max_layer_error, warmup, seed = "0", buckets = "10000", grid = "1000", max_front = "20000";
  std::string bandwidth, latency = "5us", forward, out, topology, network_fit, nccl_env;
  bool force = false, allow_infeasible = false;
  Format format = Format::kTable;
};

std::string fmt_num(double v, const char* f = "%.4g") {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// A unit-bearing option value (size, duration, bandwidth); a bad one is a usage error naming the flag.
template <class F>
auto flag_value(const char* flag, F&& parse) {
  try {
    return parse();
  } catch (const ConfigError& e) {
    throw UsageError(std::string(flag) + ": " + e.what());
  }
}

PlanOptions plan_options(const Flags& f, const ArgParser& p, Json& config) {
  PlanOptions o;
  try {
    o.engine = parse_engine(f.engine);
  } catch (const ConfigError& e) {
    throw UsageError(std::string("--engine: ") + e.what());
  }
  // The budget flags in Budget::Kind's order, with their texts.
  const std::array<std::pair<const char*, const std::string*>, 4> budget_flags{
      {{"--alpha", &f.alpha}, {"--error-budget", &f.error_budget}, {"--bytes-budget", &f.bytes_budget}, {"--time-budget", &f.time_budget}}};
  int budgets = 0;
  for (const auto& [flag, text] : budget_flags) budgets += p.given(flag) ? 1 : 0;
  if (budgets > 1) throw UsageError("lgreco plan: give at most one of --alpha, --error-budget, --bytes-budget, --time-budget");
  if (p.given("--error-budget")) o.budget = {Budget::Kind::kError, parse_double("--error-budget", f.error_budget)};
  else if (p.given("--bytes-budget"))
    o.budget = {Budget::Kind::kBytes, flag_value("--bytes-budget", [&] { return static_cast<double>(units::parse_bytes(f.bytes_budget)); })};
  else if (p.given("--time-budget")) o.budget = {Budget::Kind::kTime, flag_value("--time-budget", [&] { return units::parse_seconds(f.time_budget); })};
  else o.budget = {Budget::Kind::kAlpha, p.given("--alpha") ? parse_double("--alpha", f.alpha) : 1.0};
  // One rule for the budget (planner::budget_problem), reported against the flag that set it.
  if (const std::string why = planner::budget_value_problem(o.budget); !why.empty()) {
    const auto& [flag, text] = budget_flags[static_cast<std::size_t>(o.budget.kind)];
    throw UsageError(std::string(flag) + " " + *text + ": " + why);
  }
  if (const std::string why = planner::budget_problem(o.budget, o.engine); !why.empty()) throw UsageError("--engine " + f.engine + ": " + why);
  // An expression the planner cannot use is the flag's usage error, found before any work.
  const auto pattern = [](const char* flag, const std::string& re) {
    flag_value(flag, [&] { return compile_name_pattern(re); });
    return re;
  };
  if (p.given("--include")) o.include_re = pattern("--include", f.include);
  if (p.given("--exclude")) o.exclude_re = pattern("--exclude", f.exclude);
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
  const long long buckets = parse_int("--buckets", f.buckets), grid = parse_int("--grid", f.grid),
                  front = parse_int("--max-front", f.max_front);
  if (buckets < 1 || buckets > 100000000) throw UsageError("--buckets " + f.buckets + ": expected an integer in [1, 100000000]");
  if (grid < 1 || grid > 1000000) throw UsageError("--grid " + f.grid + ": expected an integer in [1, 1000000]");
  if (front < 1 || front > 100000000) throw UsageError("--max-front " + f.max_front + ": expected an integer in [1, 100000000]");
  o.reference.buckets = static_cast<int>(buckets);
  o.time.grid = static_cast<int>(grid);
  o.front.max_front = static_cast<std::size_t>(front);
  if (p.given("--bandwidth")) o.bandwidth_Bps = flag_value("--bandwidth", [&] { return units::parse_bandwidth_Bps(f.bandwidth); });
  if (p.given("--forward-time")) o.forward_s = flag_value("--forward-time", [&] { return units::parse_seconds(f.forward); });
  const double latency_s = flag_value("--latency", [&] { return units::parse_seconds(f.latency); });
  if (latency_s < 0) throw UsageError("--latency " + f.latency + ": expected a duration >= 0");
  // The recorded form is the one the planner reads back (planner/plan_json.hpp), e.g. online.
  config = plan_options_to_json(o, o.bandwidth_Bps ? ring_network_json(*o.bandwidth_Bps, latency_s) : Json(nullptr));
  return o;
}

// Options that only the trace form has (the closed loop's replay and candidates).
const char* const kTraceOnly[] = {"--family", "--default", "--error-mode", "--backend", "--threads", "--memory-limit",
                                  "--period", "--acc-steps", "--rank-low", "--rank-high", "--min-numel", "--tables-out"};

// Exits with a usage error when a plan for some window misses its budget (one rule for both forms).
void refuse_infeasible(const std::vector<WindowPlan>& plans, const std::string& origin, bool allow) {
  for (std::size_t w = 0; w < plans.size(); ++w) {
    const WindowPlan& pl = plans[w];
    if (pl.status != PlanStatus::kInfeasible || allow) continue;
    const std::string what = pl.bytes_budget ? "byte budget " + units::format_bytes(*pl.bytes_budget) + " (least possible " +
                                                   units::format_bytes(pl.total_bytes) + ")"
                                             : "error budget " + fmt_num(pl.error_budget.value_or(0)) + " (least possible error " +
                                                   fmt_num(pl.total_error) + ")";
    throw InputError(origin + ": window " + std::to_string(w) + ": no plan meets the " + what +
                     "; raise the budget or pass --allow-infeasible to write the least-" + (pl.bytes_budget ? "bytes" : "error") + " plan");
  }
}


// With the presets, how far off to expect the step times' network part (error_bands.hpp; every size band:
// buckets of every size); nothing with a calibration or the plain ring model.
Json expected_error(const std::optional<pipeline::Cluster>& cluster) {
  if (!cluster || !cluster->network_class) return nullptr;
  return net::expected_error_json({*cluster->network_class}, net::all_size_bands());
}

void print_expected_error(const std::optional<pipeline::Cluster>& cluster) {
  if (!cluster || !cluster->network_class) return;
  for (const auto& line : net::expected_error_lines({*cluster->network_class}, net::all_size_bands())) std::cout << line << "\n";
}

// With the presets, the last window's speedups over uncompressed if the network times were off by the 80 % held-out
// factor of their class, either way (the same computation as each what-if point's).
std::optional<pipeline::SpeedupRanges> speedup_ranges(const std::optional<pipeline::Cluster>& cluster, const pipeline::LoopResult& r) {
  const planner::WindowPlan& p = r.plans.back();  // its step times are the nominal ones, on the cluster's cost
  if (!cluster || !cluster->network_class || !p.step_s || !p.uniform_step_s || !p.uncompressed_step_s) return std::nullopt;
  return pipeline::speedup_ranges_p80(r.tables.windows.back(), p.chosen, r.plan, *cluster->cost, *cluster->network_class, cluster->ranks(),
                                      {*p.uncompressed_step_s / *p.uniform_step_s, *p.uncompressed_step_s / *p.step_s});
}

// `lgreco plan --trace ...`: the closed loop from a trace to a phased schedule.
int run_trace_form(const Flags& f, LoopRequest& req, const PlanOptions& opt, Json config, double compute_scale,
                   const std::optional<pipeline::Cluster>& cluster, const std::string& tables_out, Overwrite policy) {
  pipeline::LoopOptions& o = req.options;
  o.plan = opt;
  if (cluster) o.gpu = cluster->gpu;
  std::optional<net::RingCost> ring;
  const net::CollectiveCost* cost = cluster ? cluster->cost.get() : nullptr;
  if (!cluster && opt.bandwidth_Bps) {
    // The ring model needs the world size, which the trace records.
    ring.emplace(units::parse_seconds(f.latency), *opt.bandwidth_Bps, sim::open_trace_source(req.trace)->world_size());
    cost = &*ring;
  }
  if (f.forward.size()) o.compute.forward_s = opt.forward_s;
  o.compute.recorded_scale = compute_scale;
  o.engine = ranks().engine;
  const pipeline::LoopResult r = pipeline::run_closed_loop(req.trace, o, cost, stderr_progress());
  print_layout_note(r.replay_layout);
  if (cost && !r.compute.note.empty()) std::cerr << "lgreco: note: " << r.compute.note << "\n";
  refuse_infeasible(r.plans, req.trace, f.allow_infeasible);
  Json loop = pipeline::loop_config(o, r);
  loop["trace"] = req.trace;
  loop["threads"] = req.threads_requested;
  if (cluster) {
    loop["topology"] = cluster->description;
    loop["ranks"] = cluster->ranks();
  }
  loop["kernel_time"] = config["kernel_time"];
  loop["compute"] = pipeline::compute_json(r.compute, compute_scale);
  config.erase("kernel_time");
  loop["plan"] = config;  // budget, constraints, engine parameters, network: as with --tables
  const Json schedule = planner::schedule_to_json(pipeline::loop_schedule(o, r, loop, cluster ? cluster->ranks() : r.world_size));

  // Both outputs go to temporary files first and are renamed only when both are complete.
  AtomicFile sched_file(f.out, policy);
  sched_file.stream() << schedule.dump(2) << "\n";
  std::optional<planner::PendingTables> tables_file;
  if (!tables_out.empty()) tables_file.emplace(r.tables, tables_out, policy);
  throw_if_cancelled();
  sched_file.commit();
  if (tables_file) tables_file->commit();

  const auto ranges = speedup_ranges(cluster, r);
  if (f.format == Format::kJson) {
    const Json ranges_json = ranges ? Json{{"uniform", pipeline::range_json(ranges->uniform)}, {"adaptive", pipeline::range_json(ranges->adaptive)}}
                                    : Json(nullptr);
    std::cout << Json{{"schema_version", 1}, {"kind", "lgreco-plan-summary"}, {"schedule", f.out},
                      {"predicted", schedule["predicted"]}, {"config", loop},
                      {"expected_network_error", expected_error(cluster)}, {"speedup_range_p80", ranges_json},
                      {"replay", Json{{"seconds", r.replay_s}, {"grad_bytes", r.grad_bytes}}},
                      {"provenance", schedule["provenance"]}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << loop_summary(o, r, cluster ? cluster->name : "") << "schedule written to " << f.out;
    if (!tables_out.empty()) std::cout << ", tables to " << tables_out;
    std::cout << " (replayed " << units::format_bytes(r.grad_bytes) << " of gradients in " << units::format_seconds(r.replay_s)
              << ")\n";
    if (ranges) {
      char line[256];
      std::snprintf(line, sizeof line,
                    "speedup over uncompressed with the network times off by their class's 80 %% held-out factor, either way: "
                    "plan %.2f-%.2fx, uniform %.2f-%.2fx\n",
                    ranges->adaptive.first, ranges->adaptive.second, ranges->uniform.first, ranges->uniform.second);
      std::cout << line;
    }
    print_expected_error(cluster);
  }
  return 0;
}

int run_plan(const std::vector<std::string>& args) {
  Flags f;
  LoopArgs la;
  std::string tables_out;
  KernelTimeArgs kt;
  ArgParser p("lgreco plan",
              "Plan a compression setting for every layer and write a phased schedule (docs/schedule-format.md):\n"
              "  lgreco plan --trace T -o S   the main job: replay the trace window by window through the compression\n"
              "                               kernels, plan each window from the previous one's candidate tables and apply\n"
              "                               that plan in the next window (the closed loop);\n"
              "  lgreco plan --tables F -o S  plan from candidate tables measured earlier (docs/tables-format.md).\n"
              "Phases: warm-up uncompressed, the uniform default during the first window, then the plan made from window k\n"
              "during window k+1. Engines: reference (the L-GreCo DP), exact (Pareto fronts), time (least predicted step\n"
              "time, needs --topology or --bandwidth), dual (least error within a byte or time budget).");
  add_loop_options(p, la, false);
  p.option("--tables", &f.tables, "FILE", "candidate tables (JSON, or HDF5 for large models) instead of --trace")
      .option("--error-budget", &f.error_budget, "E", "explicit total error budget")
      .option("--bytes-budget", &f.bytes_budget, "SIZE", "byte budget per step (dual engine), e.g. 64MiB")
      .option("--time-budget", &f.time_budget, "DURATION", "communication time per step (dual; bytes = time x --bandwidth)")
      .option("--include", &f.include, "RE", "plan only parameters whose name matches (others stay at their default)")
      .option("--exclude", &f.exclude, "RE", "keep matching parameters at their default setting")
      .multi("--pin", &f.pins, "NAME=METHOD[:K=V,...]", "fix a parameter's setting (must be a candidate, or none)")
      .option("--min-compression-rate", &f.min_rate, "R", "drop PowerSGD candidates that do not compress at rate R")
      .option("--max-layer-error", &f.max_layer_error, "E", "drop candidates whose error exceeds E")
      .option("--buckets", &f.buckets, "B", "reference DP error buckets (default 10000)")
      .option("--grid", &f.grid, "G", "time engine error grid (default 1000)")
      .option("--max-front", &f.max_front, "N", "exact/dual front size before epsilon-trimming (default 20000)")
      .option("--bandwidth", &f.bandwidth, "BW", "network bandwidth for time predictions, e.g. 25Gbps (ring model; not with --topology)")
      .option("--latency", &f.latency, "DURATION", "per-hop latency of the ring model (default 5us)")
      .option("--topology", &f.topology, "NAME|FILE",
              "cluster for time predictions (the NCCL-shaped network model, e.g. 4x8xA100-1x25G)")
      .option("--network-fit", &f.network_fit, "FILE", "calibration of that topology from `lgreco net calibrate`")
      .option("--nccl-env", &f.nccl_env, "VARS", kNcclEnvHelp)
      .option("--forward-time", &f.forward, "DURATION", "forward pass time before backward starts (default: half the backward time)")
      .option("--tables-out", &tables_out, "FILE", "with --trace: also write the candidate tables (HDF5 when FILE ends in .h5)")
      .option("--output", &f.out, "FILE", "write the schedule here (required with --trace)", false, "-o")
      .flag("--force", &f.force, "overwrite existing outputs")
      .flag("--allow-infeasible", &f.allow_infeasible, "write the least-error plan (status infeasible) when no plan meets the budget");
  add_kernel_time_options(p, kt);
  p.format(&f.format);
  if (!p.parse(args)) return 0;

  // Every option is checked before any work.
  const bool trace = !la.trace.empty();
  if (trace == !f.tables.empty()) throw UsageError("lgreco plan: give one of --trace FILE (the closed loop) and --tables FILE");
  if (!trace) {
    for (const char* o : kTraceOnly)
      if (p.given(o)) throw UsageError(std::string("lgreco plan: ") + o + " only applies with --trace");
  }
  if (p.given("--output") && f.out.empty()) throw UsageError("--output: empty file name");
  if (trace && f.out.empty()) throw UsageError("lgreco plan --trace: needs --output FILE (-o)");
  if (!f.topology.empty() && p.given("--bandwidth"))
    throw UsageError("--bandwidth and --topology exclude each other (--bandwidth is the ring model used without a topology)");
  f.engine = la.engine;
  f.seed = la.seed;
  f.warmup = la.warmup;
  f.alpha = la.alpha;
  Json config;
  PlanOptions opt;
  opt = plan_options(f, p, config);
  LoopRequest req;
  if (trace) {
    req = resolve_loop_options(la);
    req.options.plan = opt;
  }
  const pipeline::KernelTime kernel_time = resolve_kernel_time(kt);
  std::optional<Json> fit_doc;
  const std::optional<pipeline::Cluster> cluster = resolve_cluster(f.topology, f.network_fit, &fit_doc, f.nccl_env);
  if (!kt.profile.empty() && !cluster) throw UsageError("--kernel-profile needs --topology (kernel time only enters step predictions)");
  if (opt.engine == planner::Engine::kTime && !cluster && !opt.bandwidth_Bps)
    throw UsageError("--engine time needs --topology or --bandwidth (it minimises the predicted step time)");
  const Overwrite policy = f.force ? Overwrite::kAllow : Overwrite::kRefuse;
  std::vector<std::filesystem::path> inputs{trace ? la.trace : f.tables};
  if (fit_doc) inputs.push_back(f.network_fit);
  // No output over any file the command reads (the topology and kernel profile too), nor both outputs in one file.
  for (const std::string& out : {f.out, tables_out}) refuse_output_over_inputs(out, {inputs[0], f.network_fit, f.topology, kt.profile});
  refuse_same_outputs(f.out, tables_out);
  if (!f.out.empty()) check_writable_destination(f.out, policy);
  if (!tables_out.empty()) check_writable_destination(tables_out, policy);
  if (cluster) {
    opt.kernel_time = pipeline::kernel_time_fn(kernel_time, *cluster);
    config["network"] = Json{{"model", "nccl"}, {"topology", cluster->description}};
  }
  config["kernel_time"] = pipeline::kernel_time_json(kernel_time, cluster ? &*cluster : nullptr);

  const double compute_scale = resolve_compute_scale(kt);
  if (trace) return run_trace_form(f, req, opt, config, compute_scale, cluster, tables_out, policy);

  Tables t = read_tables(f.tables);
  std::optional<net::RingCost> ring;
  if (!cluster && opt.bandwidth_Bps) ring.emplace(units::parse_seconds(f.latency), *opt.bandwidth_Bps, t.world_size);
  const net::CollectiveCost* cost = cluster ? cluster->cost.get() : ring ? &*ring : nullptr;
  // The compute side of the step predictions (pipeline/predict.hpp), then every window planned.
  pipeline::ComputeOptions co;
  if (p.given("--forward-time")) co.forward_s = opt.forward_s;
  co.recorded_scale = compute_scale;
  const pipeline::TablesPlan tp = pipeline::plan_all_windows(t, opt, cost, cluster ? &cluster->gpu : nullptr, co, f.tables);
  if (tp.compute) {
    config["compute"] = pipeline::compute_json(*tp.compute, compute_scale);
    config["forward_time_s"] = opt.forward_s;
    if (!tp.compute->note.empty()) std::cerr << "lgreco: note: " << tp.compute->note << "\n";
  }
  const std::vector<WindowPlan>& plans = tp.plans;
  refuse_infeasible(plans, f.tables, f.allow_infeasible);
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
    print_expected_error(cluster);
    if (!f.out.empty()) std::cout << "wrote " << f.out << "\n";
  }
  return 0;
}

LGRECO_COMMAND("plan", "plan per-layer compression from a trace (closed loop) or candidate tables; write a schedule", run_plan);

}  // namespace
}  // namespace lgreco::cli
