#pragma once
/// The cluster a plan is predicted on: a named topology (network_models), optionally with another
/// node count or inter-node bandwidth (what-if points), as a collective cost for the step timeline.
#include <memory>
#include <optional>
#include <string>

#include "core/json_util.hpp"
#include "sim/timeline.hpp"

namespace lgreco::cli {

/// A resolved cluster.
struct Cluster {
  std::string name;                          ///< topology name as given (or derived for what-if)
  int nodes = 1, gpus_per_node = 1;
  int ranks() const { return nodes * gpus_per_node; }
  double inter_node_Bps = 0;                 ///< per-node network bandwidth (0: single node)
  std::shared_ptr<const sim::CollectiveCost> cost;
  Json description = Json::object();         ///< resolved configuration, for outputs
};

/// Resolves `topology` (a preset name like 4x8xA100-1x25G or a topology JSON file) with optional
/// overrides. Throws ConfigError naming the topology and the bad value.
Cluster make_cluster(const std::string& topology, std::optional<int> nodes = std::nullopt,
                     std::optional<int> gpus_per_node = std::nullopt, std::optional<double> inter_node_Bps = std::nullopt);

}  // namespace lgreco::cli
