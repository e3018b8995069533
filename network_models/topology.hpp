#pragma once
/// Hardware topology as a graph: GPUs, NVSwitches, PCIe switches, host bridges (CPU root complexes),
/// NICs and network switches, joined by links with a per-direction bandwidth and a latency.
///
/// The graph answers the questions the collective model needs (docs/network-model.md):
/// - routes: between two endpoints, the lowest-latency path (ties: fewest hops), never through a
///   GPU; bandwidth does not steer routing, so widening a link never moves traffic onto a narrower
///   path; with `p2p == false` GPU-to-GPU traffic is staged through
///   the host bridge (PCIe switches do not forward it peer-to-peer);
/// - ring embeddings: the ranks' ring (and its channel copies, one per NIC across hosts) is routed
///   edge by edge; every link direction counts how many ring edges cross it (a channel carries
///   1/C of the stream); the ring's bus bandwidth is min over link directions of bandwidth / load;
/// - NIC sharing: each GPU's nearest NIC and which GPUs share it.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/json_util.hpp"

namespace lgreco::net {

/// Limits of the topologies lgreco models, so that every question about one is answered in
/// bounded time (routing runs one shortest-path search per ring edge): a 1024-node what-if with
/// 8 GPUs and 8 NICs per node (about 24,000 vertices) fits; 100,000 hosts do not.
inline constexpr int kMaxTopologyHosts = 1024;
/// Vertices (GPUs, switches, bridges, NICs) of the whole graph.
inline constexpr int kMaxTopologyNodes = 65536;
/// Links of the whole graph.
inline constexpr int kMaxTopologyLinks = 262144;
/// GPUs per host (the largest real systems have 8 to 72).
inline constexpr int kMaxGpusPerHost = 128;

/// What a graph vertex is.
enum class NodeKind { kGpu, kNvSwitch, kPcieSwitch, kHostBridge, kNic, kNetSwitch };
/// Link technology; selects NCCL's per-hop latency row (nvlink, pcie, net).
enum class LinkClass { kNvlink, kPcie, kHost, kNet };
/// Inter-node transport (efficiency and per-step latency in the presets, from the measurement corpus):
/// RDMA verbs (InfiniBand, RoCE), AWS EFA (NCCL's aws-ofi-nccl plugin over SRD; Topology::efa_generation),
/// GCP GPUDirect-TCPX (A3 High and Edge: Google's NCCL net plugin, TCP with the receive path on the host's
/// cores), GCP GPUDirect-TCPXO (A3 Mega: the same with the TCP work offloaded to the NICs), or TCP sockets.
/// The plugins have no LL128 across hosts.
enum class Transport { kRdma, kEfa, kTcpx, kTcpxo, kSocket };
/// EFA generations AWS has shipped (v1: p3dn, p4d, p4de; v2: p5, p5e; v3: p5en; v4: p6).
inline constexpr int kMaxEfaGeneration = 4;

/// A vertex. `host` is the machine index (network switches: -1).
struct TopoNode {
  std::string id;
  NodeKind kind = NodeKind::kGpu;
  int host = 0;
};

/// An undirected, full-duplex link: `bandwidth_Bps` in each direction.
struct TopoLink {
  int a = 0, b = 0;
  LinkClass cls = LinkClass::kPcie;
  double bandwidth_Bps = 0;
  double latency_s = 0;
};

/// GPU model: NCCL architecture class and dense peak used for FLOP-based compute estimates.
struct GpuSpec {
  std::string name;            ///< "A100", "H100", ...
  int compute_capability = 80; ///< 70, 75, 80, 86, 90, 100
  double dense_peak_flops = 0; ///< dense 16-bit tensor peak, FLOP/s
  int nvlinks = 0;             ///< NVLink links per GPU (0: none)
  double nvlink_Bps = 0;       ///< NCCL's per-link NVLink bandwidth assumption
  double memory_Bps = 0;       ///< device memory bandwidth (vendor figure), for kernel-time estimates
  bool p2p = true;             ///< peer-to-peer over PCIe allowed by the driver (GeForce: no)
};

/// The whole machine or cluster.
struct Topology {
  std::string name;
  GpuSpec gpu;
  Transport transport = Transport::kRdma;
  bool nvls = false;  ///< NVSwitch with in-switch reduction (NVLink SHARP): H100/H200/B200
  bool p2p = true;    ///< GPU peer-to-peer over PCIe/NVLink allowed
  /// GPUDirect RDMA: the NICs read and write GPU memory. Without it (AWS p3dn's EFA) NCCL stages every
  /// network transfer through host memory (lower efficiency: η_nogdr in the presets).
  bool gpudirect = true;
  /// EFA generation 1..kMaxEfaGeneration with Transport::kEfa, else 0.
  int efa_generation = 0;
  std::vector<TopoNode> nodes;
  std::vector<TopoLink> links;

  int hosts() const;          ///< number of machines: largest host index + 1 (saturates at INT_MAX)
  int gpus() const;           ///< all GPUs
  int gpus_per_host() const;  ///< GPUs on host 0 (validate() checks all hosts agree)
  int nics_per_host() const;  ///< NICs on host 0
};

/// Ring/tree embedding figures for `ranks` ranks placed on the first hosts (ranks/hosts per host).
struct Embedding {
  int ranks = 0, hosts = 0, ranks_per_host = 0, channels = 1;
  LinkClass intra_class = LinkClass::kNvlink;  ///< nvlink if every intra-host ring edge is NVLink-only
  double ring_Bps = 0;        ///< ring bus bandwidth (bottleneck over all link directions)
  double intra_ring_Bps = 0;  ///< ring over one host's ranks only
  double ring_local_Bps = 0;  ///< ring bottleneck over non-network links only
  double ring_net_Bps = 0;    ///< ring bottleneck over network links only (infinite on one host)
  double rail_Bps = 0;        ///< per-GPU bandwidth when every local rank runs its own inter-host ring
  double rail_local_Bps = 0;  ///< rail bottleneck over non-network links
  double rail_net_Bps = 0;    ///< rail bottleneck over network links
  std::string ring_bottleneck;  ///< "a->b" of the limiting link direction
  std::string rail_bottleneck;
};

/// One NIC and the GPUs for which it is the nearest NIC.
struct NicShare {
  std::string nic;
  std::vector<std::string> gpus;
  double path_Bps = 0;  ///< bottleneck bandwidth GPU→NIC (nearest = lowest latency, ties to the least shared)
};

/// Checks the graph: within the limits above (checked first, in time linear in the graph's size),
/// ids unique, endpoints exist, no self links, bandwidth finite and > 0, latency finite and ≥ 0,
/// connected, ≥ 1 GPU, every host has the same number of GPUs. `origin` names the source in
/// messages. Throws ConfigError. Long loops here and in embed() and nic_sharing() stop with
/// Cancelled when cancellation is requested (core/cancel.hpp).
void validate(const Topology& t, const std::string& origin);

/// Reads the JSON topology format (docs/network-model.md); unknown keys are errors.
Topology topology_from_json(const Json& j, const std::string& origin);
/// Reads a topology file.
Topology load_topology_file(const std::filesystem::path& path);
/// Writes the JSON topology format.
Json topology_to_json(const Topology& t);

/// Ring embedding for `ranks` ranks (1 ≤ ranks ≤ gpus; ranks ≤ gpus_per_host or a multiple of it).
Embedding embed(const Topology& t, int ranks);
/// Nearest NIC of every GPU on host 0, grouped by NIC.
std::vector<NicShare> nic_sharing(const Topology& t);

const char* to_string(NodeKind k);
const char* to_string(LinkClass c);
const char* to_string(Transport t);

}  // namespace lgreco::net
