#pragma once
/// Constants of the presets, derived from the measurement corpus (tests/data/network/, docs/network-model.md
/// "Presets"). A preset keeps NCCL's structure (collectives.hpp: algorithms, protocols, per-step latencies,
/// protocol bandwidth caps) and replaces NCCL's internal tuning values and peak link rates by what the
/// corpus shows machines achieve:
///   B_local = η_class · ring bottleneck over non-network links     (η_nvlink or η_pcie by intra class)
///   B_net   = η_net · ring bottleneck over network links, η_net by network class (η_rdma, η_plugin, η_socket);
///             EFA by generation, TCPX and TCPXO scale the shared plugin values by their own factors (f_efa1
///             .. f_efa4, f_tcpx, f_tcpxo on η, both step latencies and T_net; prior 1: partial pooling, so a
///             plugin with few measurements, as EFA v3's two rows, stays near what the others show);
///             × η_nogdr without GPUDirect RDMA
///   latency = s_lat · NCCL's base and intra-host hop latencies + per network step hop_LL or hop_pipe
///             of the network class (LL, resp. LL128/Simple; × the plugin's factors) + once across hosts
///             net_base of the network class
///   LL bandwidth × m_LL; LL128/Simple pipelined behind the floor F with the fill min(S/algBw, T); NVLS latency additive
///   across hosts LL128/Simple also pay T_net of the network class (× the plugin's fill factor), added to their
///             transfer without the fill's cap (collectives.hpp net_fill_time_s)
///   NVLS algBw = κ_nvls · per-GPU NVLink bandwidth, latency L_nvls; NVLS-tree across hosts
///   tree NIC traffic: S per host and direction on 2 hosts, 2S beyond (collectives.hpp)
/// Benchmark terms, added only to predictions of a benchmark's figures (net validate, the corpus test):
/// τ_pytorch per call for torch.distributed measurements, τ_launch per additional GPU when one process
/// drives all GPUs of a host (nccl-tests -g N).
#include <array>
#include <functional>
#include <string>
#include <vector>

#include "network_models/collectives.hpp"

namespace lgreco::net {

inline constexpr int kNumNetClasses = 3;  ///< rdma, plugin (EFA, TCPX, TCPXO), socket
/// The EFA generations the corpus has measurements of (every one AWS has shipped); one without would keep
/// factors of 1 (the shared values).
inline constexpr std::array<int, 4> kMeasuredEfaGenerations{1, 2, 3, 4};

/// A plugin transport's factors on the shared plugin constants.
struct PluginFactors {
  double eta = 1, hop_ll = 1, hop_pipe = 1, fill = 1;  ///< on η, both step latencies and T_net
};

/// Every corpus-derived constant (SI units).
struct CorpusConstants {
  double eta_nvlink = 1, eta_pcie = 1;                  ///< intra-host achieved fraction by class
  std::array<double, kNumNetClasses> eta_net{1, 1, 1};  ///< network achieved fraction by network class
  std::array<double, kNumNetClasses> hop_ll_s{};        ///< LL latency per network step by network class
  std::array<double, kNumNetClasses> hop_pipe_s{};      ///< LL128/Simple latency per network step by network class
  std::array<double, kNumNetClasses> net_base_s{};      ///< latency once per collective across hosts by network class
  std::array<double, kNumNetClasses> net_fill_s{};      ///< T_net: time LL128/Simple add to their transfer across hosts
  std::array<PluginFactors, kMaxEfaGeneration> efa{};  ///< EFA's factors on the plugin class, by generation − 1
  PluginFactors tcpx{};                                 ///< TCPX's factors on the plugin class
  PluginFactors tcpxo{};                                ///< TCPXO's factors on the plugin class
  double nogdr_efficiency = 1;  ///< η_nogdr: factor on η_transport when the NICs have no GPUDirect RDMA
  double latency_scale = 1;      ///< s_lat on NCCL's base and intra-host hop latencies
  double ll_bandwidth = 1;       ///< m_LL on NCCL's LL bandwidth
  double floor_s = 0;            ///< F of the pipelined protocols
  double fill_time_s = 0;        ///< T of the pipeline fill
  double nvls_fraction = 5.0 / 6.0;  ///< κ_nvls
  double nvls_latency_s = 25e-6;     ///< L_nvls
  double pytorch_overhead_s = 0;     ///< τ_pytorch (benchmark term)
  double launch_overhead_s = 0;      ///< τ_launch per extra GPU of one process (benchmark term)
};

/// The constants the presets ship with (fitted on the whole corpus; each one names its rows in the .cpp).
const CorpusConstants& corpus_constants();

/// Sets the corpus constants into NCCL's parameters `p` (from nccl_params) for topology `t`, embedding `e`.
void apply_corpus_constants(ModelParams& p, const Topology& t, const Embedding& e, const CorpusConstants& k);

/// How a measurement was taken (the corpus files' benchmark and gpus_per_process fields).
enum class Benchmark { kNcclTests, kPytorch };
/// Host-side cost a benchmark adds to every call: τ_pytorch for PyTorch, plus τ_launch·(G − 1) when one
/// process drives G GPUs (G = 1 for one process per GPU).
double benchmark_overhead_s(const CorpusConstants& k, Benchmark b, int gpus_per_process);

/// One fitted constant: its name, print factor (SI × factor = printed unit), prior centre and spread
/// (the prior is log-normal: the fit works on ln of the value), bounds, and access.
struct ConstantDef {
  std::string name, unit;
  double print_factor = 1;
  double centre = 1, sigma = 1, lo = 0, hi = 0;
  std::function<double&(CorpusConstants&)> ref;
};

/// The constants a corpus fit adjusts, with priors from NCCL's values and published facts
/// (docs/network-model.md "Presets").
const std::vector<ConstantDef>& corpus_constant_defs();

}  // namespace lgreco::net
