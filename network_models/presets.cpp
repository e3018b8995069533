// Built-in topologies. Every constant is listed with its source in docs/network-model.md.
#include "network_models/presets.hpp"
#include "core/units.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <cstdio>
#include <regex>

#include "core/text.hpp"

namespace lgreco::net {
namespace {

// The transport a cluster spec's plugin suffix names ("-efa", "-efa2", "-tcpx", "-tcpxo"): the suffix
// without its dash and EFA generation is the transport's name as topology files write it (to_string).
Transport plugin_transport(const std::string& suffix) {
  std::string name = suffix.substr(1);
  while (!name.empty() && name.back() >= '0' && name.back() <= '9') name.pop_back();
  for (Transport t : {Transport::kEfa, Transport::kTcpx, Transport::kTcpxo})
    if (name == to_string(t)) return t;
  throw ConfigError("cluster suffix \"" + suffix + "\" names no plugin transport");
}

using units::kGB;

/// PCIe x16 bandwidth NCCL assumes per generation (reference-network.md): Gen3 12, Gen4 24, Gen5 48 GB/s.
double pcie_Bps(const GpuSpec& g) {
  if (g.compute_capability >= 90) return 48 * kGB;
  if (g.compute_capability >= 80) return 24 * kGB;
  return 12 * kGB;
}

struct Builder {
  Topology& t;
  int node(const std::string& id, NodeKind k, int host) {
    t.nodes.push_back({id, k, host});
    return static_cast<int>(t.nodes.size()) - 1;
  }
  void link(int a, int b, LinkClass c, double bw, double lat_us) { t.links.push_back({a, b, c, bw, lat_us * 1e-6}); }
};

/// One host: GPUs on an NVLink fabric (when the GPU has NVLinks and `fabric`), PCIe switches with
/// two GPUs each, two host bridges, NICs spread round-robin over the PCIe switches.
void add_host(Topology& t, int h, int gpus, int nics, double nic_Bps, bool fabric, int net_switch) {
  Builder b{t};
  const std::string p = "h" + std::to_string(h) + ".";
  const double pcie = pcie_Bps(t.gpu);
  const int nsw = std::max(1, gpus / 2);
  const int hb0 = b.node(p + "cpu0", NodeKind::kHostBridge, h);
  const int hb1 = gpus > 2 ? b.node(p + "cpu1", NodeKind::kHostBridge, h) : -1;
  if (hb1 >= 0) b.link(hb0, hb1, LinkClass::kHost, 40 * kGB, 0.5);
  std::vector<int> sw;
  for (int s = 0; s < nsw; ++s) {
    sw.push_back(b.node(p + "pcie" + std::to_string(s), NodeKind::kPcieSwitch, h));
    b.link(sw.back(), (hb1 >= 0 && s >= nsw / 2) ? hb1 : hb0, LinkClass::kPcie, pcie, 0.5);
  }
  const int nvs = fabric ? b.node(p + "nvswitch", NodeKind::kNvSwitch, h) : -1;
  std::vector<int> gpu;
  for (int i = 0; i < gpus; ++i) {
    gpu.push_back(b.node(p + "gpu" + std::to_string(i), NodeKind::kGpu, h));
    b.link(gpu.back(), sw[i / 2 % nsw], LinkClass::kPcie, pcie, 0.5);
    if (nvs >= 0) b.link(gpu.back(), nvs, LinkClass::kNvlink, t.gpu.nvlinks * t.gpu.nvlink_Bps, 0.3);
  }
  for (int j = 0; j < nics; ++j) {
    const int nic = b.node(p + "nic" + std::to_string(j), NodeKind::kNic, h);
    b.link(nic, sw[j % nsw], LinkClass::kPcie, pcie, 0.5);
    if (net_switch >= 0) b.link(nic, net_switch, LinkClass::kNet, nic_Bps, 1.0);
  }
}

Topology single(const std::string& name, const std::string& gpu, int nics, double nic_gbps, bool nvls) {
  Topology t;
  t.name = name;
  t.gpu = gpu_spec(gpu);
  t.nvls = nvls;
  add_host(t, 0, 8, nics, nic_gbps * kGB / 8, true, -1);
  return t;
}

}  // namespace

GpuSpec gpu_spec(const std::string& name) {
  // {name, compute capability, dense 16-bit tensor peak FLOP/s, NVLinks, NCCL per-link NVLink GB/s,
  //  memory bandwidth, peer-to-peer} (vendor datasheets: V100 SXM2 900 GB/s, A100 SXM 40 GB 1555, H100 SXM
  //  3350, H20 148 TFLOP/s and 4000 GB/s with 900 GB/s NVLink like H100, H200 4800, B200 8000, L40S 362
  //  TFLOP/s and 864 GB/s, RTX 3090 936, RTX 4090 165 TFLOP/s with FP32 accumulate and 1008 GB/s, RTX 2080
  //  Ti 616). GeForce boards have no PCIe peer-to-peer (RTX 2080 Ti's pair talks over its NVLink bridge).
  static const std::vector<GpuSpec> specs{
      {"V100", 70, 125e12, 6, 20 * kGB, 900 * kGB, true},          {"A100", 80, 312e12, 12, 20 * kGB, 1555 * kGB, true},
      {"H100", 90, 989e12, 18, 20.6 * kGB, 3350 * kGB, true},      {"H20", 90, 148e12, 18, 20.6 * kGB, 4000 * kGB, true},
      {"H200", 90, 989e12, 18, 20.6 * kGB, 4800 * kGB, true},      {"B200", 100, 2250e12, 18, 40.1 * kGB, 8000 * kGB, true},
      {"L40S", 89, 362e12, 0, 0, 864 * kGB, true},                 {"RTX3090", 86, 35.6e12, 0, 0, 936 * kGB, false},
      {"RTX4090", 89, 165e12, 0, 0, 1008 * kGB, false},            {"RTX2080Ti", 75, 53.8e12, 2, 20 * kGB, 616 * kGB, true}};
  std::string known;
  for (const auto& s : specs) {
    if (s.name == name) return s;
    known += (known.empty() ? "" : ", ") + s.name;
  }
  throw ConfigError("unknown GPU \"" + name + "\" (known: " + known + ")");
}

std::vector<std::string> preset_names() {
  return {"dgx-a100", "hgx-h100", "hgx-h200", "dgx-b200", "pcie-8x-rtx3090", "2x-rtx2080ti-nvlink"};
}

Topology preset_topology(const std::string& name) {
  Topology t;
  if (name == "dgx-a100") {
    t = single(name, "A100", 8, 200, false);
  } else if (name == "hgx-h100") {
    t = single(name, "H100", 8, 400, true);
  } else if (name == "hgx-h200") {
    t = single(name, "H200", 8, 400, true);
  } else if (name == "dgx-b200") {
    t = single(name, "B200", 8, 400, true);
  } else if (name == "pcie-8x-rtx3090") {
    t.name = name;
    t.gpu = gpu_spec("RTX3090");
    t.p2p = false;
    add_host(t, 0, 8, 1, 100 * kGB / 8, false, -1);
  } else if (name == "2x-rtx2080ti-nvlink") {
    t.name = name;
    t.gpu = gpu_spec("RTX2080Ti");
    Builder b{t};
    const int hb = b.node("h0.cpu0", NodeKind::kHostBridge, 0);
    const int g0 = b.node("h0.gpu0", NodeKind::kGpu, 0), g1 = b.node("h0.gpu1", NodeKind::kGpu, 0);
    b.link(g0, hb, LinkClass::kPcie, 12 * kGB, 0.5);
    b.link(g1, hb, LinkClass::kPcie, 12 * kGB, 0.5);
    b.link(g0, g1, LinkClass::kNvlink, 2 * 20 * kGB, 0.3);
  } else {
    const std::optional<ClusterSpec> spec = parse_cluster_spec(name);
    if (!spec) {
      std::string known;
      for (const auto& n : preset_names()) known += (known.empty() ? "" : ", ") + n;
      const std::string shown = printable(name.size() > 80 ? name.substr(0, 80) + "..." : name);
      throw ConfigError("unknown topology \"" + shown + "\" (presets: " + known +
                        "; clusters: KxGxGPU-NxRATE[-efa|-efa1..4|-tcpx|-tcpxo][-nogdr] such as 4x8xA100-4x100G, 4x8xB200-8x400G-efa or 8x8xV100-25GbE; or a topology JSON file)");
    }
    return cluster_topology(*spec, name);
  }
  validate(t, "preset " + name);
  return t;
}

Topology cluster_topology(const ClusterSpec& spec, const std::string& shown_name) {
  const std::string name = shown_name.empty() ? cluster_spec_name(spec) : shown_name;
  Topology t;
  const int hosts = spec.hosts, gpus = spec.gpus_per_host, nics = spec.nics;
  const double gbps = spec.nic_gbps;
  if (hosts < 1 || gpus < 1 || nics < 1) throw ConfigError("topology \"" + printable(name) + "\": counts must be positive");
  if (!(gbps >= kMinNicGbps && gbps <= kMaxNicGbps)) {
    char rate[64];
    std::snprintf(rate, sizeof rate, "%g Gb/s per NIC is outside what lgreco models (%g to %g)", gbps, kMinNicGbps, kMaxNicGbps);
    throw ConfigError("topology \"" + printable(name) + "\": " + rate);
  }
  // Each count within validate()'s limits before the graph is built, so that a spec such as
  // 4x8xH100-4000000x400G is refused at once instead of building millions of nodes first; the
  // graph then stays small enough for validate() to check the rest (its node and link totals).
  if (hosts > kMaxTopologyHosts || gpus > kMaxGpusPerHost || nics > kMaxGpusPerHost) {
    throw ConfigError("topology \"" + printable(name) + "\": " + std::to_string(hosts) + " hosts of " + std::to_string(gpus) + " GPUs and " +
                      std::to_string(nics) + " NICs is beyond what lgreco models (at most " + std::to_string(kMaxTopologyHosts) +
                      " hosts, " + std::to_string(kMaxGpusPerHost) + " GPUs and NICs per host, " +
                      std::to_string(kMaxTopologyNodes) + " nodes in all)");
  }
  t.name = name;
  try {
    t.gpu = gpu_spec(spec.gpu);
  } catch (const ConfigError& e) {
    throw ConfigError("topology \"" + printable(name) + "\": " + e.what());
  }
  if (!spec.plugin.empty() && spec.unit == "GbE")
    throw ConfigError("topology \"" + printable(name) + "\": " + spec.plugin.substr(1) + " is a plugin transport, not TCP sockets (GbE)");
  if (spec.nogdr && spec.unit == "GbE")
    throw ConfigError("topology \"" + printable(name) + "\": -nogdr applies to NIC transports; TCP sockets (GbE) always stage through host memory");
  t.transport = spec.unit == "GbE"   ? Transport::kSocket
                : spec.plugin.empty() ? Transport::kRdma
                                       : plugin_transport(spec.plugin);
  t.gpudirect = !spec.nogdr;
  if (t.transport == Transport::kEfa) {
    t.efa_generation = spec.plugin.size() > 4 ? spec.plugin[4] - '0' : default_efa_generation(t.gpu.name);
    if (t.efa_generation == 0)
      throw ConfigError("topology \"" + printable(name) + "\": no default EFA generation for " + t.gpu.name +
                        " (only for the GPUs of AWS P instances); name it with -efa1 .. -efa4, generation " + kEfaGenerationChoices);
  }
  t.nvls = t.gpu.compute_capability >= 90 && t.gpu.nvlinks > 0;
  t.p2p = t.gpu.p2p;
  Builder b{t};
  const int sw = hosts > 1 ? b.node("fabric", NodeKind::kNetSwitch, -1) : -1;
  for (int h = 0; h < hosts; ++h) add_host(t, h, gpus, nics, gbps * kGB / 8, t.gpu.nvlinks > 0, sw);
  validate(t, "preset " + name);
  return t;
}

std::optional<ClusterSpec> parse_cluster_spec(const std::string& name) {
  static const std::regex cluster(R"(^(\d+)x(\d+)x([A-Za-z0-9]+)-(?:(\d+)x)?(\d+(?:\.\d+)?)(G|GbE)(-efa[1-4]?|-tcpxo|-tcpx)?(-nogdr)?$)");
  // Real specs are short; std::regex recurses per character, so a huge argument is no spec.
  if (name.size() > 128) return std::nullopt;
  std::smatch m;
  if (!std::regex_match(name, m, cluster)) return std::nullopt;
  ClusterSpec c;
  try {
    c.hosts = std::stoi(m[1]);
    c.gpus_per_host = std::stoi(m[2]);
    c.nics = m[4].matched ? std::stoi(m[4]) : 1;
    c.nic_gbps = std::stod(m[5]);
  } catch (const std::exception&) {
    throw ConfigError("topology \"" + printable(name) + "\": a count or rate is out of range");
  }
  c.gpu = m[3];
  c.unit = m[6];
  c.plugin = m[7].matched ? std::string(m[7]) : "";
  c.nogdr = m[8].matched;
  return c;
}

int default_efa_generation(const std::string& gpu_name) {
  // AWS instance families: p3dn (V100, EFA v1, no GPUDirect RDMA), p4d/p4de (A100, v1), p5/p5e (H100/H200, v2;
  // p5en: v3), p6-b200 (B200, v4).
  if (gpu_name == "V100" || gpu_name == "A100") return 1;
  if (gpu_name == "H100" || gpu_name == "H200") return 2;
  if (gpu_name == "B200") return 4;
  return 0;
}

std::string cluster_spec_name(const ClusterSpec& c) {
  // Six significant digits in fixed notation (the spec's syntax has no exponent): 26.3, 3.33333, 0.000125.
  const int magnitude = c.nic_gbps > 0 ? static_cast<int>(std::floor(std::log10(c.nic_gbps))) : 0;
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", std::clamp(5 - magnitude, 0, 12), c.nic_gbps);
  std::string rate = b;
  while (!rate.empty() && rate.back() == '0') rate.pop_back();
  if (!rate.empty() && rate.back() == '.') rate.pop_back();
  return std::to_string(c.hosts) + "x" + std::to_string(c.gpus_per_host) + "x" + c.gpu + "-" + std::to_string(c.nics) + "x" + rate +
         c.unit + c.plugin + (c.nogdr ? "-nogdr" : "");
}

Topology resolve_topology(const std::string& name_or_path) {
  // error_code forms: a name no file can have (too long, ...) is not an error here but a preset name.
  std::error_code ec;
  if (std::filesystem::is_regular_file(name_or_path, ec)) return load_topology_file(name_or_path);
  return preset_topology(name_or_path);
}

}  // namespace lgreco::net
