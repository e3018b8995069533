#pragma once
/// The cluster a plan is predicted on: a named topology (network_models), optionally with another
/// node count, GPUs per node or inter-node bandwidth (what-if points), as a collective cost for the
/// step timeline; and how compression kernel time is charged on its GPUs.
#include <memory>
#include <optional>
#include <string>

#include "core/json_util.hpp"
#include "kernels/profile.hpp"
#include "network_models/cost.hpp"
#include "network_models/error_bands.hpp"
#include "network_models/nccl_env.hpp"
#include "network_models/topology.hpp"
#include "planner/plan.hpp"

namespace lgreco::pipeline {

/// A resolved cluster.
struct Cluster {
  std::string name;                          ///< topology name as given (or derived for what-if)
  int nodes = 1, gpus_per_node = 1;
  int ranks() const { return nodes * gpus_per_node; }
  double inter_node_Bps = 0;                 ///< per-node network bandwidth (0: single node)
  std::shared_ptr<const net::CollectiveCost> cost;
  net::GpuSpec gpu;                          ///< the GPU of every rank
  Json description = Json::object();         ///< resolved configuration, for outputs
  /// With the presets (no calibration): the class whose held-out errors say how far its network times may be off
  /// (network_models/error_bands.hpp).
  std::optional<net::PredictionClass> network_class;
};

/// Resolves `topology` (a preset name like 4x8xA100-1x25G or a topology JSON file) with optional
/// overrides. Throws ConfigError naming the topology and the bad value.
/// With `network_fit` (a document from `lgreco net calibrate`, read from `fit_origin`), the
/// calibrated parameters replace NCCL's defaults; the fit must have been made for `topology`, and
/// carries over to the clusters built from it with overrides. `nccl_env`: the job's NCCL_ALGO /
/// NCCL_PROTO / ... restrictions (network_models/nccl_env.hpp), honoured by every collective cost.
Cluster make_cluster(const std::string& topology, std::optional<int> nodes = std::nullopt,
                     std::optional<int> gpus_per_node = std::nullopt, std::optional<double> inter_node_Bps = std::nullopt,
                     const Json* network_fit = nullptr, const std::string& fit_origin = "", const net::NcclEnv& nccl_env = {});

/// How step predictions charge compression kernel time.
struct KernelTime {
  enum class Source { kEstimate, kProfile, kNone } source = Source::kEstimate;
  std::shared_ptr<const kernels::DeviceProfile> profile;  ///< kProfile
  std::string profile_path;                               ///< kProfile, for outputs
};

/// The kernel-time charge of the step predictions on `cluster` (its GPU and rank count): the
/// profile's compress + decompress time, or the memory-traffic estimate of sim::layer_comm on the
/// cluster's GPU (sim/step_builder.hpp); empty for Source::kNone.
planner::KernelTimeFn kernel_time_fn(const KernelTime& k, const Cluster& cluster);

/// The resolved choice for outputs: {"source": "profile"|"memory-traffic estimate"|"none", ...}.
Json kernel_time_json(const KernelTime& k, const Cluster* cluster);

}  // namespace lgreco::pipeline
