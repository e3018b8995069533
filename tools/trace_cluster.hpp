#pragma once
/// The cluster a plan is predicted on: a named topology (network_models), optionally with another
/// node count or inter-node bandwidth (what-if points), as a collective cost for the step timeline.
#include <memory>
#include <optional>
#include <string>

#include "core/json_util.hpp"
#include "kernels/profile.hpp"
#include "network_models/topology.hpp"
#include "planner/plan.hpp"
#include "sim/timeline.hpp"
#include "tools/args.hpp"

namespace lgreco::cli {

/// A resolved cluster.
struct Cluster {
  std::string name;                          ///< topology name as given (or derived for what-if)
  int nodes = 1, gpus_per_node = 1;
  int ranks() const { return nodes * gpus_per_node; }
  double inter_node_Bps = 0;                 ///< per-node network bandwidth (0: single node)
  std::shared_ptr<const sim::CollectiveCost> cost;
  net::GpuSpec gpu;                          ///< the GPU of every rank
  Json description = Json::object();         ///< resolved configuration, for outputs
};

/// Resolves `topology` (a preset name like 4x8xA100-1x25G or a topology JSON file) with optional
/// overrides. Throws ConfigError naming the topology and the bad value.
/// With `network_fit` (a document from `lgreco net calibrate`, read from `fit_origin`), the
/// calibrated parameters replace NCCL's defaults; the fit must have been made for `topology`, and
/// carries over to the clusters built from it with overrides.
Cluster make_cluster(const std::string& topology, std::optional<int> nodes = std::nullopt,
                     std::optional<int> gpus_per_node = std::nullopt, std::optional<double> inter_node_Bps = std::nullopt,
                     const Json* network_fit = nullptr, const std::string& fit_origin = "");

/// How step predictions charge compression kernel time (plan --trace, whatif).
struct KernelTimeArgs {
  std::string profile;  ///< device cost profile (kernels/profiles/<gpu>.json); empty: estimate
  bool none = false;    ///< --no-kernel-time
};

/// Declares --kernel-profile and --no-kernel-time.
void add_kernel_time_options(ArgParser& p, KernelTimeArgs& a);

/// The kernel-time charge of the step predictions on `cluster` (its GPU and rank count): the
/// profile's compress + decompress time when `profile` is given, else the memory-traffic estimate
/// of sim::layer_comm on the cluster's GPU (sim/step_builder.hpp); empty with --no-kernel-time.
planner::KernelTimeFn kernel_time_fn(const KernelTimeArgs& a, const Cluster& cluster,
                                     std::shared_ptr<const kernels::DeviceProfile> profile);

/// The resolved choice for outputs: {"source": "profile"|"memory-traffic estimate"|"none", ...}.
Json kernel_time_json(const KernelTimeArgs& a, const Cluster* cluster);

}  // namespace lgreco::cli
