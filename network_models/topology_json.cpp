// JSON form of a topology (docs/network-model.md, "Topology file").
#include <cmath>
#include <map>

#include "network_models/presets.hpp"
#include "network_models/topology.hpp"

namespace lgreco::net {
namespace {

NodeKind parse_kind(const std::string& s, const std::string& where) {
  static const std::map<std::string, NodeKind> k{{"gpu", NodeKind::kGpu},          {"nvswitch", NodeKind::kNvSwitch},
                                                 {"pcie_switch", NodeKind::kPcieSwitch}, {"host_bridge", NodeKind::kHostBridge},
                                                 {"nic", NodeKind::kNic},          {"net_switch", NodeKind::kNetSwitch}};
  auto it = k.find(s);
  if (it == k.end()) {
    throw ConfigError(where + ": unknown node kind \"" + s + "\" (expected gpu, nvswitch, pcie_switch, host_bridge, nic, net_switch)");
  }
  return it->second;
}

LinkClass parse_class(const std::string& s, const std::string& where) {
  static const std::map<std::string, LinkClass> k{
      {"nvlink", LinkClass::kNvlink}, {"pcie", LinkClass::kPcie}, {"host", LinkClass::kHost}, {"net", LinkClass::kNet}};
  auto it = k.find(s);
  if (it == k.end()) throw ConfigError(where + ": unknown link class \"" + s + "\" (expected nvlink, pcie, host, net)");
  return it->second;
}

Transport parse_transport(const std::string& s, const std::string& where) {
  if (s == "rdma") return Transport::kRdma;
  if (s == "efa") return Transport::kEfa;
  if (s == "tcpx") return Transport::kTcpx;
  if (s == "tcpxo") return Transport::kTcpxo;
  if (s == "socket") return Transport::kSocket;
  if (s == "plugin") throw ConfigError(where + ": \"plugin\" is now \"efa\" (AWS), \"tcpx\" or \"tcpxo\" (GCP GPUDirect-TCPX, -TCPXO)");
  throw ConfigError(where + ": \"" + s + "\" (expected rdma, efa, tcpx, tcpxo or socket)");
}

double positive(double v, const std::string& where) {
  if (!std::isfinite(v) || v <= 0) throw ConfigError(where + ": " + std::to_string(v) + " must be a finite number > 0");
  return v;
}

GpuSpec parse_gpu(const Json& j, const std::string& where) {
  if (j.is_string()) {
    try {
      return gpu_spec(j.get<std::string>());
    } catch (const ConfigError& e) {
      throw ConfigError(where + ": " + e.what());
    }
  }
  JsonObject o(j, where);
  GpuSpec g;
  g.name = o.get<std::string>("name");
  g.compute_capability = o.get<int>("compute_capability");
  g.dense_peak_flops = positive(o.get<double>("dense_peak_tflops"), o.child("dense_peak_tflops")) * 1e12;
  g.nvlinks = o.get_or<int>("nvlinks", 0);
  g.nvlink_Bps = o.get_or<double>("nvlink_bandwidth_GBps", 0.0) * 1e9;
  g.memory_Bps = positive(o.get_or<double>("memory_bandwidth_GBps", 1555.0), o.child("memory_bandwidth_GBps")) * 1e9;
  if (g.nvlinks < 0) throw ConfigError(o.child("nvlinks") + ": " + std::to_string(g.nvlinks) + " must be >= 0");
  o.finish();
  return g;
}

}  // namespace

Topology topology_from_json(const Json& j, const std::string& origin) {
  JsonObject o(j, origin);
  const int version = o.get<int>("schema_version");
  if (version != 1) throw ConfigError(origin + ": schema_version " + std::to_string(version) + " is not supported (expected 1)");
  const std::string kind = o.get<std::string>("kind");
  if (kind != "lgreco-topology") throw ConfigError(origin + ": kind \"" + kind + "\", expected \"lgreco-topology\"");
  Topology t;
  t.name = o.get<std::string>("name");
  t.gpu = parse_gpu(o.require("gpu"), o.child("gpu"));
  const std::string transport = o.get_or<std::string>("transport", "rdma");
  t.transport = parse_transport(transport, o.child("transport"));
  t.nvls = o.get_or<bool>("nvls", false);
  t.p2p = o.get_or<bool>("p2p", true);
  t.gpudirect = o.get_or<bool>("gpudirect", true);
  if (t.transport == Transport::kEfa) {
    const int gen = o.get_or<int>("efa_generation", default_efa_generation(t.gpu.name));
    if (gen < 1 || gen > kMaxEfaGeneration)
      throw ConfigError(o.child("efa_generation") + ": " +
                        (o.has("efa_generation") ? std::to_string(gen) : "no default for " + t.gpu.name + " (only for the GPUs of AWS P instances)") +
                        "; expected " + kEfaGenerationChoices);
    t.efa_generation = gen;
  } else if (o.has("efa_generation")) {
    throw ConfigError(o.child("efa_generation") + ": applies to transport \"efa\" only");
  }
  if (!t.gpudirect && t.transport == Transport::kSocket)
    throw ConfigError(o.child("gpudirect") + ": false applies to NIC transports (rdma, efa, tcpx, tcpxo); sockets always stage through host memory");
  std::map<std::string, int> index;
  const Json& nodes = o.require("nodes");
  if (!nodes.is_array()) throw ConfigError(o.child("nodes") + ": expected an array");
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const std::string where = o.child("nodes") + "[" + std::to_string(i) + "]";
    JsonObject n(nodes[i], where);
    TopoNode node;
    node.id = n.get<std::string>("id");
    node.kind = parse_kind(n.get<std::string>("kind"), n.child("kind"));
    node.host = n.get_or<int>("host", node.kind == NodeKind::kNetSwitch ? -1 : 0);
    n.finish();
    if (!index.emplace(node.id, static_cast<int>(t.nodes.size())).second) {
      throw ConfigError(where + ".id: duplicate node id \"" + node.id + "\"");
    }
    t.nodes.push_back(node);
  }
  const Json& links = o.require("links");
  if (!links.is_array()) throw ConfigError(o.child("links") + ": expected an array");
  for (std::size_t i = 0; i < links.size(); ++i) {
    const std::string where = o.child("links") + "[" + std::to_string(i) + "]";
    JsonObject l(links[i], where);
    TopoLink link;
    for (const char* end : {"a", "b"}) {
      const std::string id = l.get<std::string>(end);
      auto it = index.find(id);
      if (it == index.end()) throw ConfigError(l.child(end) + ": unknown node \"" + id + "\"");
      (end[0] == 'a' ? link.a : link.b) = it->second;
    }
    link.cls = parse_class(l.get<std::string>("class"), l.child("class"));
    link.bandwidth_Bps = positive(l.get<double>("bandwidth_GBps"), l.child("bandwidth_GBps")) * 1e9;
    const double lat_us = l.get_or<double>("latency_us", 0.0);
    if (!std::isfinite(lat_us) || lat_us < 0) throw ConfigError(l.child("latency_us") + ": " + std::to_string(lat_us) + " must be >= 0");
    link.latency_s = lat_us * 1e-6;
    l.finish();
    t.links.push_back(link);
  }
  o.finish();
  validate(t, origin);
  // Routes are found when the topology is first used (embed, nic_sharing): find them now, so that a
  // file whose GPUs cannot reach a NIC or each other without forwarding through another GPU is
  // rejected naming the file, not later naming only the topology's "name".
  try {
    (void)nic_sharing(t);
    (void)embed(t, t.gpus());
  } catch (const ConfigError& e) {
    throw ConfigError(origin + ": " + e.what());
  }
  return t;
}

Topology load_topology_file(const std::filesystem::path& path) {
  return topology_from_json(read_json_file(path), path.string());
}

Json topology_to_json(const Topology& t) {
  Json nodes = Json::array(), links = Json::array();
  for (const auto& n : t.nodes) nodes.push_back({{"id", n.id}, {"kind", to_string(n.kind)}, {"host", n.host}});
  for (const auto& l : t.links) {
    links.push_back({{"a", t.nodes[l.a].id}, {"b", t.nodes[l.b].id}, {"class", to_string(l.cls)},
                     {"bandwidth_GBps", l.bandwidth_Bps / 1e9}, {"latency_us", l.latency_s * 1e6}});
  }
  Json j = {{"schema_version", 1},
            {"kind", "lgreco-topology"},
            {"name", t.name},
            {"gpu",
             {{"name", t.gpu.name},
              {"compute_capability", t.gpu.compute_capability},
              {"dense_peak_tflops", t.gpu.dense_peak_flops / 1e12},
              {"nvlinks", t.gpu.nvlinks},
              {"nvlink_bandwidth_GBps", t.gpu.nvlink_Bps / 1e9},
              {"memory_bandwidth_GBps", t.gpu.memory_Bps / 1e9}}},
            {"transport", to_string(t.transport)},
            {"nvls", t.nvls},
            {"p2p", t.p2p},
            {"gpudirect", t.gpudirect},
            {"nodes", nodes},
            {"links", links}};
  if (t.transport == Transport::kEfa) j["efa_generation"] = t.efa_generation;
  return j;
}

const char* to_string(NodeKind k) {
  switch (k) {
    case NodeKind::kGpu: return "gpu";
    case NodeKind::kNvSwitch: return "nvswitch";
    case NodeKind::kPcieSwitch: return "pcie_switch";
    case NodeKind::kHostBridge: return "host_bridge";
    case NodeKind::kNic: return "nic";
    case NodeKind::kNetSwitch: return "net_switch";
  }
  return "?";
}

const char* to_string(LinkClass c) {
  switch (c) {
    case LinkClass::kNvlink: return "nvlink";
    case LinkClass::kPcie: return "pcie";
    case LinkClass::kHost: return "host";
    case LinkClass::kNet: return "net";
  }
  return "?";
}

const char* to_string(Transport t) {
  switch (t) {
    case Transport::kRdma: return "rdma";
    case Transport::kEfa: return "efa";
    case Transport::kTcpx: return "tcpx";
    case Transport::kTcpxo: return "tcpxo";
    case Transport::kSocket: return "socket";
  }
  return "?";
}

}  // namespace lgreco::net
