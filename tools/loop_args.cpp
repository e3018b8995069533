#include "tools/loop_args.hpp"

#include <algorithm>
#include <cmath>

#include <unistd.h>

#include "core/error.hpp"
#include "core/units.hpp"
#include "kernels/method_json.hpp"
#include "sim/replay_pool.hpp"
#include "tools/net_common.hpp"
#include "tools/ranks.hpp"

namespace lgreco::cli {

void add_loop_options(ArgParser& p, LoopArgs& a, bool trace_required) {
  std::string families;
  for (const auto& m : kernels::methods())
    if (m.method != kernels::Method::kNone) families += std::string(families.empty() ? "" : ", ") + m.name;
  p.option("--trace", &a.trace, "FILE", "trace to replay (HDF5, docs/trace-format.md)", trace_required);
  p.option("--family", &a.family, "NAME",
           "method family: " + families + ", mixed (PowerSGD + max-min) or all (PowerSGD + top-k + max-min); default powersgd");
  p.option("--default", &a.defaults, "K=V[,K=V]",
           "the uniform default setting, e.g. rank=4 (powersgd), density=0.01 (topk), bits=4 (qsgd, maxmin), "
           "rank=4,bits=4 (mixed); unspecified parameters take their defaults (lgreco methods lists them)");
  p.option("--engine", &a.engine, "NAME", "planning engine: reference, exact, time or dual (default reference)");
  p.option("--error-mode", &a.error_mode, "MODE",
           "candidate error: trajectory (each candidate run over the window's steps with its own residual: the "
           "per-step error it delivers; default), power (L-GreCo's: 5 seeded subspace iterations on the window's "
           "mean matrix A), exact (singular values of A)");
  p.option("--backend", &a.backend, "NAME", "kernels: auto (CUDA when a device is there), cpu or cuda (default auto)");
  p.option("--threads", &a.threads, "N", "worker threads (default: all cores; under MPI, each rank its share of its machine's)");
  p.option("--memory-limit", &a.memory_limit, "SIZE",
           "run layers in parallel only while their buffers (estimated at 32 bytes per element) fit in SIZE, "
           "e.g. 8GiB; 0 = no limit (default: half the physical memory; under MPI, per rank)");
  p.option("--seed", &a.seed, "N", "run seed: random streams and the measurement start (default 0)");
  p.option("--warmup-steps", &a.warmup, "N", "uncompressed warm-up steps of the schedule (default: the trace's first step)");
  p.option("--period", &a.period, "N", "longest window, in steps (default 1000); bursts are cut into windows of this length");
  p.option("--acc-steps", &a.acc, "N", "steps averaged into the measurement matrix A (default 10)");
  p.option("--alpha", &a.alpha, "X", "error budget as a multiple of the uniform plan's total error, 0 < X <= 1e6 (default 1)");
  p.option("--rank-low", &a.rank_low, "LOW", "lowest candidate rank as a fraction of the default (default 0.5)");
  p.option("--rank-high", &a.rank_high, "HIGH", "highest candidate rank as a multiple of the default (default 2)");
  p.option("--min-numel", &a.min_numel, "N", "smallest tensor planned by non-PowerSGD families (default 1024)");
}

double default_memory_limit_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? 0.5 * static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}

namespace {

// Runs a library parse and reports its ConfigError as a usage error of `flag`.
template <class F>
auto as_usage(const std::string& flag, F&& f) {
  try {
    return f();
  } catch (const ConfigError& e) {
    throw UsageError(flag + ": " + e.what());
  }
}

}  // namespace

LoopRequest resolve_loop_options(const LoopArgs& a) {
  LoopRequest req;
  req.trace = a.trace;
  pipeline::LoopOptions& o = req.options;
  o.family = as_usage("--family", [&] { return sim::family_from_name(a.family); });
  if (!a.defaults.empty()) {
    for (const auto& kv : split_list(a.defaults)) {
      const auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) throw UsageError("--default: expected KEY=VALUE, got '" + kv + "'");
      o.default_params.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    }
  }
  o.defaults = as_usage("--default", [&] { return sim::parse_family_defaults(o.family, o.default_params); });
  o.ranges.rank_low = parse_double("--rank-low", a.rank_low);
  o.ranges.rank_high = parse_double("--rank-high", a.rank_high);
  if (!(o.ranges.rank_low >= 0 && o.ranges.rank_low <= 1 && o.ranges.rank_high >= 1)) {
    throw UsageError("rank range must satisfy 0 <= --rank-low <= 1 <= --rank-high");
  }
  const long long min_numel = parse_int("--min-numel", a.min_numel);
  if (min_numel < 0) throw UsageError("--min-numel: expected an integer >= 0, got '" + a.min_numel + "'");
  o.ranges.min_numel = static_cast<std::uint64_t>(min_numel);
  o.windows.warmup_steps = 0;
  if (!a.warmup.empty()) {
    o.schedule_warmup = parse_int("--warmup-steps", a.warmup);
    if (*o.schedule_warmup < 0) throw UsageError("--warmup-steps: expected an integer >= 0, got '" + a.warmup + "'");
    o.windows.warmup_steps = *o.schedule_warmup;
  }
  o.windows.period_steps = parse_int("--period", a.period);
  if (o.windows.period_steps < 1) throw UsageError("--period: expected an integer >= 1, got '" + a.period + "'");
  const long long acc = parse_int("--acc-steps", a.acc);
  if (acc < 1 || acc > 1000000) throw UsageError("--acc-steps: expected an integer in [1, 1000000], got '" + a.acc + "'");
  o.windows.acc_steps = static_cast<int>(acc);
  o.error_mode = as_usage("--error-mode", [&] { return sim::error_mode_from_name(a.error_mode); });
  o.backend = as_usage("--backend", [&] { return sim::resolve_backend(a.backend); });
  if (!a.threads.empty()) {
    const long long t = parse_int("--threads", a.threads);
    if (t < 1 || t > 4096) throw UsageError("--threads: expected an integer in [1, 4096], got '" + a.threads + "'");
    req.threads_requested = static_cast<int>(t);
  }
  // Ranks on one machine share its cores: by default each takes its share (tools/ranks.hpp).
  o.threads = req.threads_requested > 0 ? sim::resolve_threads(req.threads_requested)
                                        : std::max(1u, sim::resolve_threads(0) / static_cast<unsigned>(std::max(1, ranks().on_node)));
  if (a.memory_limit.empty()) {
    o.memory_limit_bytes = default_memory_limit_bytes();
  } else {
    o.memory_limit_bytes = as_usage("--memory-limit", [&] { return static_cast<double>(units::parse_bytes(a.memory_limit)); });
  }
  const long long seed = parse_int("--seed", a.seed);
  if (seed < 0) throw UsageError("--seed: expected an integer >= 0, got '" + a.seed + "'");
  o.seed = static_cast<std::uint64_t>(seed);
  o.plan.engine = as_usage("--engine", [&] { return planner::parse_engine(a.engine); });
  o.plan.budget.kind = planner::Budget::Kind::kAlpha;
  o.plan.budget.value = parse_double("--alpha", a.alpha);
  if (const std::string why = planner::budget_value_problem(o.plan.budget); !why.empty()) throw UsageError("--alpha " + a.alpha + ": " + why);
  return req;
}

void add_kernel_time_options(ArgParser& p, KernelTimeArgs& a) {
  p.option("--kernel-profile", &a.profile, "FILE",
           "device cost profile (kernels/profiles/<gpu>.json) for compression kernel time in step predictions "
           "(default: memory-traffic estimate on the topology's GPU)");
  p.flag("--no-kernel-time", &a.none, "charge no compression kernel time in step predictions");
  p.option("--compute-scale", &a.compute_scale, "X",
           "multiply recorded compute times by X in step predictions (a trace recorded on slower hardware than the "
           "cluster predicted: the ratio of the two throughputs; default 1)");
}

double resolve_compute_scale(const KernelTimeArgs& a) {
  if (a.compute_scale.empty()) return 1.0;
  const double x = parse_double("--compute-scale", a.compute_scale);
  if (!(x > 0)) throw UsageError("--compute-scale " + a.compute_scale + ": expected a factor > 0");
  return x;
}

pipeline::KernelTime resolve_kernel_time(const KernelTimeArgs& a) {
  if (a.none && !a.profile.empty()) throw UsageError("--kernel-profile and --no-kernel-time exclude each other");
  pipeline::KernelTime k;
  if (a.none) {
    k.source = pipeline::KernelTime::Source::kNone;
  } else if (!a.profile.empty()) {
    k.source = pipeline::KernelTime::Source::kProfile;
    k.profile = std::make_shared<const kernels::DeviceProfile>(kernels::load_profile(a.profile));
    k.profile_path = a.profile;
  }
  return k;
}

std::optional<pipeline::Cluster> resolve_cluster(const std::string& topology, const std::string& network_fit,
                                                 std::optional<Json>* fit_doc, const std::string& nccl_env) {
  if (!network_fit.empty() && topology.empty()) throw UsageError("--network-fit needs --topology");
  if (!nccl_env.empty() && topology.empty()) throw UsageError("--nccl-env needs --topology");
  if (topology.empty()) return std::nullopt;
  std::optional<Json> doc;
  if (!network_fit.empty()) doc = read_json_file(network_fit);
  pipeline::Cluster c = pipeline::make_cluster(topology, std::nullopt, std::nullopt, std::nullopt, doc ? &*doc : nullptr, network_fit,
                                               nccl_env_option(nccl_env));
  if (fit_doc) *fit_doc = std::move(doc);
  return c;
}

}  // namespace lgreco::cli
