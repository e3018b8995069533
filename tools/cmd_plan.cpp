// `lgreco plan`: per-layer compression schedule from candidate tables (--tables). The trace-driven
// path (--trace, replaying a trace into tables first) plugs in at plan_source() below.
#include <cstdio>
#include <iostream>
#include <optional>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "core/provenance.hpp"
#include "core/units.hpp"
#include "planner/plan.hpp"
#include "planner/schedule.hpp"
#include "planner/tables.hpp"
#include "tools/args.hpp"
#include "tools/command.hpp"
#include "tools/plan_trace.hpp"
#include "tools/trace_cluster.hpp"

namespace lgreco::cli {
namespace {

using namespace lgreco::planner;

// Ring collectives on a uniform network (--bandwidth without --topology):
// allreduce 2(p−1)·α + 2(p−1)/p · bytes/bw; allgather (p−1)·α + (p−1) · bytes/bw.
class RingCost : public sim::CollectiveCost {
 public:
  RingCost(double latency_s, double bandwidth_Bps, int world) : a_(latency_s), bw_(bandwidth_Bps), p_(world) {}
  double time_s(sim::Collective c, double bytes) const override {
    if (bytes <= 0 || p_ <= 1) return 0;
    if (c == sim::Collective::kAllreduce) return 2.0 * (p_ - 1) * a_ + 2.0 * (p_ - 1) / p_ * bytes / bw_;
    return (p_ - 1) * a_ + (p_ - 1) * bytes / bw_;
  }

 private:
  double a_, bw_;
  int p_;
};

struct Flags {
  std::string tables, trace, engine = "reference", alpha, error_budget, bytes_budget, time_budget, include, exclude;
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

void print_summary(std::ostream& os, const Tables& t, const std::vector<WindowPlan>& plans, const Schedule& s) {
  const Window& w = t.windows.back();
  const WindowPlan& p = plans.back();
  os << "plan for " << t.model << " (" << w.layers.size() << " parameters, world size " << t.world_size << ", engine "
     << s.engine << ", from window " << plans.size() - 1 << ": steps " << w.start_step << "-" << w.end_step << ")\n\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-36s %-9s %-28s %12s %12s  %s\n", "parameter", "role", "chosen", "bytes", "error", "default");
  os << line;
  for (std::size_t i = 0; i < w.layers.size(); ++i) {
    const auto& l = w.layers[i];
    std::snprintf(line, sizeof line, "%-36s %-9s %-28s %12s %12s  %s\n", l.name.c_str(), p.role[i].c_str(),
                  method_label(p.chosen[i].spec).c_str(), units::format_bytes(p.chosen[i].bytes).c_str(),
                  fmt_num(p.chosen[i].error).c_str(), method_label(l.candidates[l.default_index].spec).c_str());
    os << line;
  }
  const Json& pr = s.predicted;
  auto ratio = [](const Json& v) { return v.is_null() ? std::string("-") : fmt_num(v.get<double>(), "%.1fx"); };
  os << "\nstatus " << p.status << (p.detail.empty() ? "" : " (" + p.detail + ")");
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

PlanOptions plan_options(const Flags& f, const ArgParser& p, Json& config) {
  PlanOptions o;
  o.engine = parse_engine(f.engine);
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
    o.pins.emplace_back(pin.substr(0, eq), parse_method_text(pin.substr(eq + 1), "--pin " + pin.substr(0, eq)));
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
  for (const auto& [n, m] : o.pins) pins[n] = {{"method", m.method}, {"params", m.params}};
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

// Where the candidate tables come from. A trace-driven source (--trace) will replay the trace here.
Tables plan_source(const Flags& f, std::vector<std::filesystem::path>& inputs) {
  if (!f.trace.empty()) throw UsageError("lgreco plan: --trace is not available in this build; use --tables FILE");
  if (f.tables.empty()) throw UsageError("lgreco plan: needs --tables FILE (see --help)");
  inputs.push_back(f.tables);
  return read_tables(f.tables);
}

int run_plan(const std::vector<std::string>& args) {
  // The trace-driven path (closed-loop replay, tools/plan_trace.cpp) has its own options.
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
      .option("--trace", &f.trace, "FILE", "replay a trace instead (closed loop; see lgreco plan --trace T --help)")
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
  std::vector<std::filesystem::path> inputs;
  const Tables t = plan_source(f, inputs);
  std::optional<RingCost> ring;
  std::optional<Cluster> cluster;
  if (!f.network_fit.empty() && f.topology.empty()) throw UsageError("--network-fit needs --topology");
  if (!f.topology.empty()) {
    std::optional<Json> fit_doc;
    if (!f.network_fit.empty()) {
      fit_doc = read_json_file(f.network_fit);
      inputs.push_back(f.network_fit);
    }
    cluster = make_cluster(f.topology, std::nullopt, std::nullopt, std::nullopt, fit_doc ? &*fit_doc : nullptr, f.network_fit);
    config["network"] = Json{{"model", "nccl"}, {"topology", cluster->description}};
  } else if (opt.bandwidth_Bps) {
    ring.emplace(units::parse_seconds(f.latency), *opt.bandwidth_Bps, t.world_size);
  }
  const sim::CollectiveCost* cost = cluster ? cluster->cost.get() : ring ? &*ring : nullptr;
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
    if (pl.status != "infeasible" || f.allow_infeasible) continue;
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
    print_summary(std::cout, t, plans, s);
    if (!f.out.empty()) std::cout << "wrote " << f.out << "\n";
  }
  return 0;
}

LGRECO_COMMAND("plan", "choose per-layer compression from candidate tables and write a schedule", run_plan);

}  // namespace
}  // namespace lgreco::cli
