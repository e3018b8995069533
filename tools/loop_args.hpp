#pragma once
// Flags of the commands that run the closed loop (`plan --trace`, `whatif --trace`) and of the
// commands that predict step times on a cluster: text in, library options out. Every value is
// checked here, before any work, and errors name the flag.
#include <optional>
#include <string>

#include "core/json_util.hpp"
#include "pipeline/cluster.hpp"
#include "pipeline/loop.hpp"
#include "tools/args.hpp"

namespace lgreco::cli {

/// The closed loop's options as text from the command line.
struct LoopArgs {
  std::string trace, family = "powersgd", defaults, engine = "reference", error_mode = "trajectory";
  std::string backend = "auto", threads, seed = "0", warmup, period = "1000", acc = "10", memory_limit;
  std::string alpha = "1", rank_low = "0.5", rank_high = "2", min_numel = "1024";
};

/// Declares the closed loop's options on a parser (--trace required unless `trace_required` is false).
void add_loop_options(ArgParser& p, LoopArgs& a, bool trace_required = true);

/// The resolved options and what the user asked for (recorded in outputs).
struct LoopRequest {
  std::string trace;          ///< --trace
  pipeline::LoopOptions options;
  int threads_requested = 0;  ///< --threads as given (0: all cores)
};

/// Parses and checks every option; UsageError naming the flag and value.
LoopRequest resolve_loop_options(const LoopArgs& a);

/// Default replay memory limit: half the machine's physical memory (0 when unknown).
double default_memory_limit_bytes();

/// How step predictions charge compression kernel time, as text from the command line.
struct KernelTimeArgs {
  std::string profile;  ///< device cost profile (kernels/profiles/<gpu>.json); empty: estimate
  bool none = false;    ///< --no-kernel-time
  std::string compute_scale;  ///< --compute-scale (recorded compute times × this)
};

/// --compute-scale as a factor (1 when not given); UsageError naming the flag.
double resolve_compute_scale(const KernelTimeArgs& a);

/// Declares --kernel-profile, --no-kernel-time and --compute-scale (the step predictions' options).
void add_kernel_time_options(ArgParser& p, KernelTimeArgs& a);

/// Resolves them (loads the profile); UsageError when both are given.
pipeline::KernelTime resolve_kernel_time(const KernelTimeArgs& a);

/// The cluster of --topology [--network-fit] [--nccl-env]; UsageError for a fit or an NCCL environment without a topology.
std::optional<pipeline::Cluster> resolve_cluster(const std::string& topology, const std::string& network_fit,
                                                 std::optional<Json>* fit_doc = nullptr, const std::string& nccl_env = {});

}  // namespace lgreco::cli
