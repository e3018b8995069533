// Corpus-derived preset constants (the model is stated in preset_constants.hpp).
#include "network_models/preset_constants.hpp"

#include <algorithm>

namespace lgreco::net {
namespace {

constexpr int kNvlink = 0, kPcie = 1, kNet = 2;
constexpr double kUs = 1e-6;

constexpr int kRdmaClass = 0, kPluginClass = 1, kSocketClass = 2;

int net_class(Transport t) {
  switch (t) {
    case Transport::kRdma: return kRdmaClass;
    case Transport::kEfa:
    case Transport::kTcpx:
    case Transport::kTcpxo: return kPluginClass;
    case Transport::kSocket: return kSocketClass;
  }
  return kRdmaClass;
}

// The plugin transports' factors (nullptr for RDMA and sockets).
const PluginFactors* plugin_factors(const CorpusConstants& k, const Topology& t) {
  if (t.transport == Transport::kTcpx) return &k.tcpx;
  if (t.transport == Transport::kTcpxo) return &k.tcpxo;
  if (t.transport == Transport::kEfa) return &k.efa.at(t.efa_generation - 1);
  return nullptr;
}

}  // namespace

const CorpusConstants& corpus_constants() {
  // Fitted on the whole corpus (corpus_fit.hpp: fit_corpus over every file, 4 chains of 12 basin hops; the test
  // "shipped constants are the corpus fit" refits and compares). The rows each round added for each value are
  // below; what pins each at these values is computed by constant_evidence (corpus_fit.hpp; `lgreco net validate
  // tests/data/network --evidence`, docs/network-model.md "What pins each constant"):
  static const CorpusConstants k = [] {
    CorpusConstants c;
    // Intra-host links at ≥ 256 MiB: a100-dgx and a100x8-galvatron rings (busbw 194-235 of 240 GB/s),
    // h200 allgather/reducescatter 16 GiB (361-363 of 370.8) and its NVLS-off rings at 4-8 ranks (363-367),
    // p6-b200 4-5 ranks 8 GiB and its NVLS-off rings at 4-8 ranks (674-682), together-b200's one-node Ring at
    // 8-32 GiB (690-696), v100 cube mesh ≥ 32 MiB; across hosts it also scales the GPU-NIC PCIe paths (h100 IB,
    // oci A100 RoCE ≥ 1 GiB, a3-ultra H200 RoCE all_gather ≥ 512 MiB: 319-326 GB/s busbw, the PCIe Gen5 path of
    // each GPU to its NIC; together-b200's Ring on 2-48 nodes at 373-391 GB/s busbw, at or above the 8 x 48 GB/s
    // that NCCL's Gen5 figure allows, pulls it from 0.901 to 0.940, and 0.946 since the eighth round:
    // docs/network-model.md "Measurement corpus").
    c.eta_nvlink = 0.946151;
    // The l40s RoCE pair's intra-host path (46 % of what pins it), rtx4090-pcie ≥ 64 MiB (2.2-3.9 GB/s without
    // P2P), rtx4090-8x-pcie (12-15 GB/s), rtx2080ti-2x-pcie ≥ 16 MiB (4.0 GB/s on PCIe Gen3 without P2P: 0.302 ->
    // 0.404 with it): against the ring path the model gives each box the three GeForce boxes reach 0.2-0.33, 1.25
    // and 0.67; the fit sits between them.
    c.eta_pcie = 0.403844;
    // rdma: at these values gcp-a4-b200 RoCE and lambda-b200 IB (2 hosts ≥ 256 MiB, 96 % of what pins it); the IB
    // clusters' large rows are bound by the GPU-NIC PCIe path (η_nvlink) or NVLS. As the rounds added them:
    // h100-ndr-8node 4 and 8 hosts ≥ 512 MiB (busbw 287-325 on 8 x 400 Gb/s), azure-ndv5 2-64 nodes at 8 GiB (its
    // congested 16-64-node rows, 224-253 GB/s, pull it from 0.917 to 0.897), together-b200 2-60 nodes at 8-32 GiB (Ring,
    // 273-391 GB/s busbw, mostly bound by the GPU-NIC PCIe path above), voltagepark-h100's 4 hosts ≥ 1 GiB (allreduce
    // 324-331, all_gather 321-324 GB/s busbw; with it 0.916 -> 0.870), the A100 HDR clusters of 2 and 3 hosts at 32
    // MiB-2 GiB (82-96 GB/s busbw on 4 x 200 Gb/s, up to 0.96 of the line rate; with them 0.870 -> 0.92), h100-xe9680
    // and h100-vm ≥ 1 GiB, nebius-h100 and lambda-b200 IB, gcp-a4-b200 RoCE ≥ 128 MiB (2 hosts, 331-696 GB/s busbw),
    // h20-ib, oci A100 RoCE. plugin: the shared value of EFA, TCPX and TCPXO, each scaled by its factor below (only the
    // products are well determined: 0.82 -> 1.00 in the eighth round while every factor fell by about as much, 0.90 in
    // the ninth). socket: l40s sockets ≥ 4 MiB.
    c.eta_net = {0.919385, 0.885113, 0.160569};
    // LL per network step. rdma: the slope from 2 to 4 and 8 hosts of the h100 IB runs ≤ 1 MiB (h100-xe9680 and
    // nebius 2 hosts 25-35 µs at ≤ 4 KiB, h100-vm 4 hosts 35-42 µs, h100-ndr 2/4/8 hosts at 1 MiB), b200 IB, l40s
    // RoCE ≤ 4 KiB; plugin (× factor): a3mega ≤ 512 KiB, p6-b200 32 ranks 256 KiB-4 MiB, p3dn/p4de/p5 ≤ 1 MiB,
    // a3high 8-16 MiB; socket: l40s sockets ≤ 4 KiB.
    c.hop_ll_s = {4.27598 * kUs, 74.161 * kUs, 2.20682 * kUs};
    // LL128/Simple per network step. rdma: h20-ib 1-16 MiB, h100 and b200 IB and a4 RoCE 2-64 MiB; plugin
    // (× factor): a3mega 32-256 MiB, p6-b200 32 ranks 16-256 MiB, p3dn 1-64 MiB; socket: l40s sockets 1-4 MiB.
    c.hop_pipe_s = {41.8794 * kUs, 195.07 * kUs, 16.4328 * kUs};
    // Once per collective across hosts. rdma: the 2-host intercept of the same IB rows (the per-step values above
    // give their slope with the host count); plugin: the EFA and TCPX/TCPXO rows want none (0.4 µs); socket: its
    // prior (l40s sockets has 2 hosts only, where the base and the steps cannot be told apart).
    c.net_base_s = {17.483 * kUs, 0.389432 * kUs, 4.17942 * kUs};
    // Time the pipelined protocols add to their transfer across hosts (T_net, not capped by the transfer). plugin
    // (× factor): both p5 sweeps' 16-64 MiB rows (283-298 µs at 16 MiB, 440-459 at 32, 601 at 64, about 100 µs above
    // S/algBw plus one fill), p6-b200 4 nodes 32-256 MiB, a3mega 32-128 MiB, a3high's 128 KiB-16 MiB; rdma: the
    // multi-host IB and RoCE rows at LL128/Simple sizes, taking over part of the fill T the single-host rows share
    // (T fell 116 -> 92 µs as T_net rose); socket: near its prior.
    c.net_fill_s = {37.1765 * kUs, 341.42 * kUs, 6.85481 * kUs};
    // Factors {η, LL step, LL128/Simple step, T_net} on the plugin values. EFA v1: p4dn 2-4 nodes at 1 GiB (2 nodes
    // 30.5 GB/s algbw, 4 nodes 29.6 GB/s busbw), p4de, and p3dn with η_nogdr; v2: p5 and p5-eks-2024-07 (two
    // sweeps within 5 % of each other from 2 MiB on, 1.4 % from 64 MiB; 16 GiB at 260 GB/s algbw on 32 x 100 Gb/s,
    // 8 B-16 MiB in 63-298 µs); v4: p6-b200 4 nodes ≥ 1 GiB (381 GB/s busbw on 8 x 400 Gb/s, 95 % of the line rate)
    // and 16-256 MiB; TCPXO: a3mega allreduce (≥ 1 GiB 159-181 of 200 GB/s algbw, LL to
    // 16 MiB) and a3mega-dstack all_gather (8 MiB-8 GiB, 50-201 GB/s algbw); TCPX: a3high all_gather (≥ 128 MiB
    // at 53 GB/s algbw on 4 x 200 Gb/s, 8-16 MiB in 785-1010 µs), a3high-skypilot's Ring/Simple allreduce
    // (≥ 256 MiB at 66-68 GB/s busbw, 128 KiB-16 MiB in 1.3-1.8 ms) and a3high-gke's Ring/Simple allreduce (12
    // channels: 1-16 MiB in 1.6-1.9 ms like skypilot's, but 84-90 GB/s busbw from 256 MiB on; the three disagree by
    // up to 1.8x at large sizes), whose slow LL step raises the shared step latency the others' factors scale
    // (docs/network-model.md "Presets").
    c.efa = {PluginFactors{0.802456, 0.955987, 2.92636, 1.37026}, PluginFactors{0.897274, 0.45581, 0.281799, 0.353542}, PluginFactors{1.07497, 0.265478, 0.994671, 0.99882},
             PluginFactors{1.14889, 1.21038, 0.422323, 1.00637}};
    c.tcpx = {0.95114, 7.62114, 1, 4.23754};
    c.tcpxo = {1.0701, 0.839995, 2.5882, 0.390551};
    // Without GPUDirect RDMA (p3dn, EFA v1): 2.5-8.8 GB/s busbw on one 100 Gb/s NIC across the three p3dn files
    // (p3dn-dlami's 8.8 is a ring: its run switched the tree off).
    c.nogdr_efficiency = 0.533185;
    // Single-host small rows: h200/p6-b200 pytorch ≤ 1 MiB, a100-dgx 32-128 KiB, v100 and rtx4090 ≤ 64 KiB; the
    // intra-host steps of p3dn-dlami's 16-rank ring ≤ 64 KiB (28 of its 30 steps).
    c.latency_scale = 0.652965;
    // LL slopes: h200/p6-b200 pytorch 512 KiB-2 MiB, rtx4090 16 KiB-16 MiB, v100 128 KiB-1 MiB, a3mega 1-4 MiB.
    c.ll_bandwidth = 1.10206;
    c.floor_s = 0;  // the pipelined protocols' own latency L is their floor in the presets
    // Mid sizes 4-512 MiB: the measured time exceeds S/algBw by about 50-150 µs on a100-dgx, a100x8-galvatron,
    // v100 (rings) and h100-node005, h200, p6-b200 one node (NVLS).
    c.fill_time_s = 76.2715 * kUs;
    // NVLS rows: h200 nccl-tests 5-8 ranks and 16 GiB (busbw 414-480), p6-b200 6-8 ranks 8 GiB
    // (778-838), h100-node005 ≥ 128 MiB, h200/p6-b200 pytorch ≥ 1 GiB, the GB200 NVL72 rack's 72 ranks
    // (297-425 GB/s algbw, below the 8-GPU hosts); across hosts the NVLS-tree rows of the 2-host IB and RoCE
    // runs ≥ 128 MiB.
    c.nvls_fraction = 0.677811;
    // Additive to the transfer (collectives.hpp): h200 pytorch 2-8 MiB above the PyTorch call cost.
    c.nvls_latency_s = 9.33546 * kUs;
    // h200/p6-b200 pytorch ≤ 512 KiB against the nccl-tests latencies of the other systems.
    c.pytorch_overhead_s = 33.24 * kUs;
    // a100-dgx 32-128 KiB (-g 8: 44-52 µs), v100 and rtx4090-8x (-g 8) and rtx4090 4 ranks ≤ 4 KiB (-g 4).
    c.launch_overhead_s = 4.97591 * kUs;
    return c;
  }();
  return k;
}

void apply_corpus_constants(ModelParams& p, const Topology& t, const Embedding& e, const CorpusConstants& k) {
  const int tr = net_class(t.transport);
  static const PluginFactors kNone{};
  const PluginFactors* pf = plugin_factors(k, t);
  const PluginFactors& f = pf ? *pf : kNone;
  p.intra_efficiency = e.intra_class == LinkClass::kNvlink ? k.eta_nvlink : k.eta_pcie;
  p.net_efficiency = k.eta_net[tr] * f.eta * (t.gpudirect ? 1.0 : k.nogdr_efficiency);
  p.net_extra_hop_s = 0;  // the transport's own per-step latency below
  p.net_base_s = k.net_base_s[tr];
  for (int q = 0; q < kNumProtocols; ++q) {
    ProtocolParams& pp = p.proto[q];
    pp.ring_base_s *= k.latency_scale;
    pp.tree_base_s *= k.latency_scale;
    const double net = q == static_cast<int>(Protocol::kLL) ? k.hop_ll_s[tr] * f.hop_ll : k.hop_pipe_s[tr] * f.hop_pipe;
    pp.ring_hop_s[kNet] = pp.tree_hop_s[kNet] = net;
  }
  p.hop_scale[kNvlink] = p.hop_scale[kPcie] = k.latency_scale;
  p.hop_scale[kNet] = 1;
  p.proto[static_cast<int>(Protocol::kLL)].bw_multiplier = k.ll_bandwidth;
  p.proto[static_cast<int>(Protocol::kLL128)].pipelined = true;
  p.proto[static_cast<int>(Protocol::kSimple)].pipelined = true;
  p.pipeline_floor_s = k.floor_s;
  p.fill_time_s = k.fill_time_s;
  p.net_fill_time_s = k.net_fill_s[tr] * f.fill;
  p.nvls_multiplier = k.nvls_fraction / (5.0 / 6.0);
  p.nvls_latency_s = k.nvls_latency_s;
  p.tree_nic_aware = true;
  p.nvls_tree = true;
  p.nvls_additive = true;
}

double benchmark_overhead_s(const CorpusConstants& k, Benchmark b, int gpus_per_process) {
  return (b == Benchmark::kPytorch ? k.pytorch_overhead_s : 0.0) + k.launch_overhead_s * std::max(0, gpus_per_process - 1);
}

const std::vector<ConstantDef>& corpus_constant_defs() {
  // Prior centres: NCCL 2.30.7's constants (reference-network.md) or the published fact named; σ is the
  // spread of ln(value) (1 = a factor e either way).
  static const std::vector<ConstantDef> defs = [] {
    std::vector<ConstantDef> d;
    auto add = [&d](std::string name, std::string unit, double factor, double centre, double sigma, double lo, double hi,
                    std::function<double&(CorpusConstants&)> ref) { d.push_back({std::move(name), std::move(unit), factor, centre, sigma, lo, hi, std::move(ref)}); };
    // NCCL's per-link rates are already achieved rates on 8-GPU NVSwitch hosts (busbw 234.9 of 240, 367 of 370.8).
    add("eta_nvlink", "", 1, 1.0, 0.2, 0.3, 1.3, [](CorpusConstants& c) -> double& { return c.eta_nvlink; });
    add("eta_pcie", "", 1, 1.0, 1.0, 0.02, 1.3, [](CorpusConstants& c) -> double& { return c.eta_pcie; });
    // NCCL's maintainer: ~12 GB/s per 100 Gb/s NIC, 24 per 200 Gb/s (0.96 of line rate); sockets 0.5 (the earlier
    // assumption). Per-step latencies: NCCL's network row, LL 2.7 µs and Simple 14 µs, for every transport.
    const char* tr[] = {"rdma", "plugin", "socket"};
    const double eta[] = {0.96, 0.96, 0.5}, sigma_eta[] = {0.1, 0.3, 1.0}, ll[] = {2.7, 2.7, 2.7}, pipe[] = {14, 14, 14};
    for (int i = 0; i < kNumNetClasses; ++i) {
      add(std::string("eta_") + tr[i], "", 1, eta[i], sigma_eta[i], 0.02, 1.3, [i](CorpusConstants& c) -> double& { return c.eta_net[i]; });
      add(std::string("hop_ll_") + tr[i], "us", 1e6, ll[i] * kUs, 2.0, 0.2 * kUs, 2e-3, [i](CorpusConstants& c) -> double& { return c.hop_ll_s[i]; });
      add(std::string("hop_pipe_") + tr[i], "us", 1e6, pipe[i] * kUs, 2.0, 0.2 * kUs, 5e-3, [i](CorpusConstants& c) -> double& { return c.hop_pipe_s[i]; });
      // Once across hosts: a few µs (the proxy's first post and the NIC's completion), wide.
      add(std::string("net_base_") + tr[i], "us", 1e6, 5 * kUs, 2.0, 0.05 * kUs, 1e-3, [i](CorpusConstants& c) -> double& { return c.net_base_s[i]; });
      // Time the pipelined protocols add to their transfer across hosts: a few of NCCL's ~10 µs steps (as
      // the fill's prior), wide; the corpus sets it.
      add(std::string("net_fill_") + tr[i], "us", 1e6, 50 * kUs, 2.0, 0.1 * kUs, 5e-3, [i](CorpusConstants& c) -> double& { return c.net_fill_s[i]; });
    }
    // EFA's (by generation) and TCPXO's factors on the plugin class: centred on 1 (σ 0.5, a factor 1.65
    // either way), so a plugin held out or barely measured is predicted by the others' constants.
    auto add_factors = [&add](const std::string& name, std::function<PluginFactors&(CorpusConstants&)> of) {
      add(name + "_eta_factor", "", 1, 1.0, 0.5, 0.2, 5, [of](CorpusConstants& c) -> double& { return of(c).eta; });
      add(name + "_hop_ll_factor", "", 1, 1.0, 0.5, 0.05, 20, [of](CorpusConstants& c) -> double& { return of(c).hop_ll; });
      add(name + "_hop_pipe_factor", "", 1, 1.0, 0.5, 0.05, 20, [of](CorpusConstants& c) -> double& { return of(c).hop_pipe; });
      add(name + "_fill_factor", "", 1, 1.0, 0.5, 0.01, 100, [of](CorpusConstants& c) -> double& { return of(c).fill; });
    };
    for (int g : kMeasuredEfaGenerations)
      add_factors("efa" + std::to_string(g), [g](CorpusConstants& c) -> PluginFactors& { return c.efa[g - 1]; });
    add_factors("tcpx", [](CorpusConstants& c) -> PluginFactors& { return c.tcpx; });
    add_factors("tcpxo", [](CorpusConstants& c) -> PluginFactors& { return c.tcpxo; });
    // Without GPUDirect RDMA NCCL copies through a host bounce buffer: an extra PCIe crossing per transfer
    // (prior: a third of the bandwidth lost; wide, the corpus sets it). An added per-step latency for it
    // came out 0.2 µs in the fit (the p3dn rows show none beyond EFA v1's) and is not a constant.
    add("nogdr_efficiency", "", 1, 0.67, 0.7, 0.05, 1.0, [](CorpusConstants& c) -> double& { return c.nogdr_efficiency; });
    add("latency_scale", "", 1, 1.0, 1.0, 0.1, 10, [](CorpusConstants& c) -> double& { return c.latency_scale; });
    add("ll_bandwidth", "", 1, 1.0, 1.0, 0.05, 3, [](CorpusConstants& c) -> double& { return c.ll_bandwidth; });
    // Fill: a few pipeline steps of NCCL's ~10 µs each (prior); the corpus sets it.
    add("fill", "us", 1e6, 50 * kUs, 2.0, 0.1 * kUs, 2e-3, [](CorpusConstants& c) -> double& { return c.fill_time_s; });
    add("nvls_fraction", "", 1, 5.0 / 6.0, 0.5, 0.1, 1.5, [](CorpusConstants& c) -> double& { return c.nvls_fraction; });
    add("nvls_latency", "us", 1e6, 25 * kUs, 1.5, 1 * kUs, 500 * kUs, [](CorpusConstants& c) -> double& { return c.nvls_latency_s; });
    // ml-engineering all_reduce_bench.py: "PyTorch's per-call host overhead of some 20-30us".
    add("pytorch_overhead", "us", 1e6, 25 * kUs, 1.0, 1 * kUs, 200 * kUs, [](CorpusConstants& c) -> double& { return c.pytorch_overhead_s; });
    // reference-network.md: 2 GPUs 10.1 µs, 8 GPUs in one process 40-100 µs: (40 − 10) / 7 ≈ 4 µs per GPU.
    add("launch_overhead", "us", 1e6, 4 * kUs, 1.0, 0.1 * kUs, 50 * kUs, [](CorpusConstants& c) -> double& { return c.launch_overhead_s; });
    return d;
  }();
  return defs;
}

}  // namespace lgreco::net
