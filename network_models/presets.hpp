#pragma once
/// Built-in topologies and GPU specifications (constants and their sources: docs/network-model.md).
///
/// Single-host presets: dgx-a100, hgx-h100, hgx-h200, dgx-b200, pcie-8x-rtx3090 (no P2P: GPU-to-GPU
/// traffic staged through the host bridges), 2x-rtx2080ti-nvlink. Clusters are written
/// "K x G x GPU - N x RATE" without spaces: K hosts of G GPUs of model GPU, each host with N NICs of
/// RATE ("100G", "400G": RDMA verbs at RATE Gb/s, InfiniBand or RoCE; "25GbE": TCP sockets), optionally
/// followed by "-efa", "-tcpx" or "-tcpxo" for a provider's NCCL net plugin (AWS EFA, GCP GPUDirect-TCPX
/// on A3 High/Edge, GPUDirect-TCPXO on A3 Mega: 2x8xH100-4x200G-tcpx, 2x8xH100-8x200G-tcpxo) and
/// by "-nogdr" for NICs without GPUDirect RDMA (AWS p3dn: 8x8xV100-1x100G-efa-nogdr), e.g. 4x8xA100-4x100G,
/// 4x8xB200-8x400G-efa, 16x8xH100-8x400G, 8x8xV100-25GbE (N defaults to 1). "-efa" takes the EFA generation
/// of the AWS instances with that GPU (default_efa_generation); "-efa1" .. "-efa4" name it. Hosts of
/// a cluster use the intra-host layout of the matching single-host preset; all NICs join one
/// non-blocking switch; GPUs without PCIe peer-to-peer (GeForce) stage through the host bridges.
#include <optional>
#include <string>
#include <vector>

#include "network_models/topology.hpp"

namespace lgreco::net {

/// GPU by name: V100, A100, H100, H20, H200, B200, L40S, RTX3090, RTX4090, RTX2080Ti. ConfigError listing the names.
GpuSpec gpu_spec(const std::string& name);

/// A preset or cluster spec (see above). ConfigError listing the presets and the cluster syntax.
Topology preset_topology(const std::string& name);

/// `name` is a preset or cluster spec when it parses as one; otherwise it is read as a JSON file.
Topology resolve_topology(const std::string& name_or_path);

/// A cluster spec's fields (the syntax above).
struct ClusterSpec {
  int hosts = 1, gpus_per_host = 1, nics = 1;
  std::string gpu;             ///< GPU model name
  double nic_gbps = 0;         ///< rate of one NIC, Gb/s
  std::string unit = "G";      ///< "G" (RDMA) or "GbE" (TCP sockets)
  std::string plugin;          ///< "", "-efa", "-efa1" .. "-efa4", "-tcpx" or "-tcpxo"
  bool nogdr = false;          ///< "-nogdr": the NICs have no GPUDirect RDMA
};
/// The EFA generation of the AWS instances with GPU `gpu_name` (V100 p3dn and A100 p4d/p4de: 1, H100/H200 p5/p5e:
/// 2, B200 p6: 4); 0 for other GPUs (no default: the spec must name the generation).
int default_efa_generation(const std::string& gpu_name);
/// The EFA generations with their AWS instances, as error messages list them.
inline constexpr const char* kEfaGenerationChoices = "1 (p3dn, p4d), 2 (p5), 3 (p5en) or 4 (p6)";
/// Parses a cluster spec (nullopt when `name` is not one; the values are not yet validated).
std::optional<ClusterSpec> parse_cluster_spec(const std::string& name);
/// The spec's canonical name, e.g. "4x8xA100-4x100G" (the rate to six significant digits, without trailing zeros).
std::string cluster_spec_name(const ClusterSpec& c);
/// NIC rates a cluster may have, Gb/s per NIC (1 kb/s to 1 Pb/s: beyond any network, and every rate within keeps
/// six significant digits in the spec's name).
inline constexpr double kMinNicGbps = 1e-6, kMaxNicGbps = 1e6;
/// The topology of a cluster spec, built from its fields (not from a name: no rate is rounded), named `name`
/// (default: cluster_spec_name). ConfigError for counts or rates lgreco does not model, an unknown GPU, or a
/// transport that does not fit the unit.
Topology cluster_topology(const ClusterSpec& spec, const std::string& name = "");

/// The single-host preset names.
std::vector<std::string> preset_names();

}  // namespace lgreco::net
