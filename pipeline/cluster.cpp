#include "pipeline/cluster.hpp"


#include "core/error.hpp"
#include "core/units.hpp"
#include "network_models/collectives.hpp"
#include "network_models/fit.hpp"
#include "network_models/presets.hpp"
#include "sim/step_builder.hpp"

namespace lgreco::pipeline {
Cluster make_cluster(const std::string& topology, std::optional<int> nodes, std::optional<int> gpus_per_node,
                     std::optional<double> inter_node_Bps, const Json* network_fit, const std::string& fit_origin,
                     const net::NcclEnv& nccl_env) {
  net::Topology base = net::resolve_topology(topology);
  const std::string base_name = base.name;
  std::string name = topology;
  if (nodes || gpus_per_node || inter_node_Bps) {
    // Rebuild as a cluster spec with the overrides (network_models/presets.hpp); the per-node
    // bandwidth is spread over the node's NICs.
    net::ClusterSpec spec = net::parse_cluster_spec(topology).value_or(net::ClusterSpec{});
    if (spec.gpu.empty()) {  // a named preset or a file: one NIC of 100 Gb/s per node unless overridden
      spec.nics = std::max(1, base.nics_per_host());
      spec.nic_gbps = 100;
    }
    spec.gpu = base.gpu.name;
    spec.hosts = nodes.value_or(base.hosts());
    spec.gpus_per_host = gpus_per_node.value_or(base.gpus_per_host());
    if (spec.hosts < 1 || spec.gpus_per_host < 1) throw ConfigError("topology " + topology + ": node and GPU counts must be >= 1");
    if (inter_node_Bps) spec.nic_gbps = units::Bps_to_gbps(*inter_node_Bps) / spec.nics;
    name = net::cluster_spec_name(spec);
    base = net::cluster_topology(spec, name);
  }
  Cluster c;
  c.name = name;
  c.gpu = base.gpu;
  c.nodes = base.hosts();
  c.gpus_per_node = base.gpus_per_host();
  const int ranks = base.gpus();
  double nic_Bps = 0;
  for (const auto& l : base.links) {
    if (l.cls == net::LinkClass::kNet) nic_Bps = l.bandwidth_Bps;
  }
  c.inter_node_Bps = c.nodes > 1 ? nic_Bps * base.nics_per_host() : 0.0;
  net::ModelParams params = network_fit ? net::params_from_fit(*network_fit, fit_origin, base, ranks, base_name)
                                        : net::default_params(base, ranks);
  params.nccl_env = nccl_env;
  net::CollectiveModel model(base, ranks, params);
  // One rank communicates nothing: no network time to qualify.
  if (!network_fit && ranks > 1) c.network_class = net::prediction_class(base, model.embedding());
  c.cost = std::make_shared<net::NetworkCost>(std::move(model));
  c.description = Json{{"name", name},       {"nodes", c.nodes}, {"gpu", base.gpu.name}, {"gpus_per_node", c.gpus_per_node},
                       {"ranks", ranks}, {"inter_node_bandwidth_Gbps", units::Bps_to_gbps(c.inter_node_Bps)},
                       {"network_fit", network_fit ? Json(fit_origin) : Json(nullptr)},
                       {"nccl_env", nccl_env.restricted() ? Json(nccl_env.text) : Json(nullptr)}};
  return c;
}

planner::KernelTimeFn kernel_time_fn(const KernelTime& k, const Cluster& cluster) {
  if (k.source == KernelTime::Source::kNone) return {};
  sim::DeviceModel dev;
  dev.dense_peak_flops = cluster.gpu.dense_peak_flops > 0 ? cluster.gpu.dense_peak_flops : dev.dense_peak_flops;
  if (cluster.gpu.memory_Bps > 0) dev.memory_Bps = cluster.gpu.memory_Bps;
  const int ranks = cluster.ranks();
  std::shared_ptr<const kernels::DeviceProfile> profile = k.source == KernelTime::Source::kProfile ? k.profile : nullptr;
  return [dev, ranks, profile](const planner::LayerTable& l, const planner::Candidate& c) -> std::array<double, 2> {
    sim::LayerSpec spec{l.name, l.shape, 1};
    const sim::LayerComm lc = sim::layer_comm(spec, c.spec, ranks, dev, profile.get());
    return {lc.compress_s, lc.decompress_s};
  };
}

Json kernel_time_json(const KernelTime& k, const Cluster* cluster) {
  if (k.source == KernelTime::Source::kNone || !cluster) return Json{{"source", "none"}};
  if (k.source == KernelTime::Source::kProfile) return Json{{"source", "profile"}, {"profile", k.profile_path}};
  const double mem = cluster->gpu.memory_Bps > 0 ? cluster->gpu.memory_Bps : sim::DeviceModel{}.memory_Bps;
  return Json{{"source", "memory-traffic estimate"}, {"gpu", cluster->gpu.name}, {"memory_bandwidth_GBps", mem / 1e9}};
}

}  // namespace lgreco::pipeline
