#pragma once
/// NCCL-shaped collective cost (reference-network.md; NCCL src/graph/tuning.cc, version 2.30.7).
///
/// For n ranks on N hosts (ppn = n/N ranks per host), a collective of S bytes (nccl-tests "size":
/// the buffer for allreduce/broadcast, the whole gathered/scattered buffer for allgather and
/// reduce-scatter) costs, for each available (algorithm a, protocol p):
///
///   transfer(a, p, S) = S · (1 + (H_p / S)^q_p) / algBw(a, p)
///   additive protocol:   t(a, p, S) = L(a, p) + transfer(a, p, S)
///   pipelined protocol:  t(a, p, S) = max(F, L(a, p), transfer(a, p, S))
///
/// L and algBw are NCCL's model. NCCL adds latency and transfer for every protocol, which is the
/// uncalibrated default (all protocols additive, H_p = 0 so transfer = S/algBw, F = 0). Calibration
/// (fit.hpp) makes LL128 and Simple pipelined: their kernels stream slices through the 2(n−1)
/// ring steps, so per-step latency overlaps the transfer and a small message costs a fixed
/// pipeline floor F (one per collective, shared by the pipelined protocols) instead of latency
/// plus a shrinking transfer. LL stays additive (it is latency-bound: 8-byte flag/data lines, no
/// slice pipelining to hide behind). (H_p / S)^q_p is a size-dependent efficiency loss (fewer
/// channels and a partly filled pipeline at mid sizes; vanishes for S ≫ H_p), fitted for Simple.
/// Selection (ModelParams::selection): NCCL picks the pair that is fastest by its OWN tuning model,
/// i.e. by the uncalibrated costs t₀(a, p, S) = L₀(a, p) + S / algBw₀(a, p) (NCCL's constants,
/// neutral shape, nccl_params), and the hardware then takes whatever that pick really costs:
///   kNcclTuning:          (a*, p*) = argmin t₀(a, p, S),  time = t(a*, p*, S)
///   kFastest (default):   time = min over (a, p) of t(a, p, S)
/// With uncalibrated parameters t = t₀, so both agree. A calibrated model can then show NCCL's
/// suboptimal picks (a slower protocol chosen past a switch point), so it is not monotone in S.
/// One rank or S = 0 costs zero.
///
/// Bus bandwidth B: ring B = min(B_local, η_net · B_net) from the ring embedding (topology.hpp),
/// η_net the transport efficiency (RDMA 1, sockets 0.5 by default). Protocol caps, then × m_p:
///   ring   LL  min(llMaxBw, 0.5·B)   LL128 min(0.92·B, C·perChMaxRingLL128Bw) (0.7·B when ppn = 1)
///          Simple B;  algBw = B_p · n / nsteps,  nsteps = 2(n−1) allreduce, n−1 allgather and
///          reduce-scatter, n broadcast
///   tree   (allreduce) B_t = min(0.92·B, C·perChMaxTreeBw); LL min(B_t/3.8, llMaxBw); LL128
///          min(B_t·(N = 1 ? 7/9 : 120/128), C·perChMaxTreeLL128Bw); Simple B_t;  algBw = 0.5·B_p
///   NVLS   (NVSwitch with in-switch reduction, one host, ppn ≥ 5, Simple only; allreduce,
///          allgather, reduce-scatter) algBw = 5/6 · B_local · m_nvls
///   hierarchical (allreduce over N > 1 hosts, only when allowed; not an NCCL algorithm):
///          intra-host ring reduce-scatter of S over ppn ranks + inter-host ring allreduce of S/ppn
///          over N ranks on the rail bandwidth + intra-host ring allgather of S
/// C = channels (NVLink hosts: links per GPU; PCIe: 2; several hosts: 2 per NIC).
/// Latency, with hop(class) = NCCL's per-hop constant × the calibrated scale of that class:
///   ring   base_p + (nsteps' − nInter)·hop(intra) + nInter·hop(net), nsteps' = 2(n−1) / n−1 / n−1,
///          nInter = 2(N−1) allreduce, N−1 otherwise
///   tree   base_p + 2·((ppn−1)·hop(intra) + ⌊log2 N⌋·hop(net))
///   (+ net_base once across hosts, a corpus extension below)
///   NVLS   nvls_latency (25 µs)
/// Protocol availability: LL128 only on NVLink hosts of compute capability 70/80/90/100, and across
/// hosts only with RDMA verbs (not over plugin transports or sockets).
///
/// Corpus extensions (ModelParams; the presets of preset_constants.hpp set them, NCCL's own model and
/// calibration leave them neutral):
///   B_local ×= intra_efficiency before the minimum with η_net·B_net;
///   fill (fill_time_s T > 0): the LL128/Simple transfer becomes S/algBw·(1 + loss) + min(S/algBw, T),
///          for every algorithm (ring, tree, NVLS, NVLS-tree): the mid-size loss of the corpus' sweeps is a
///          time, not a size (A100 and V100 rings, H100/H200/B200 NVLS: the measured time exceeds S/algBw
///          by 50-150 µs from a few MiB to GiBs); the min: a small message cannot lose more than its transfer
///   net_fill_time_s T_net > 0: across hosts (N > 1) the LL128/Simple transfer also gains T_net, not capped
///          by the transfer (the plugin networks' rows: p5 at 16-64 MiB about 100 µs above S/algBw + fill)
///   nvls_additive: NVLS and NVLS-tree latency adds to the transfer instead of flooring it (the H200/B200
///          NVLS rows grow by S/algBw from their latency on, without a plateau)
///   tree_nic_aware: tree bus B_t = min(B_local, 2·η_net·B_net/f), f = 1 on 2 hosts, 2 beyond (per host
///          and direction a double binary tree moves S through the NICs on 2 hosts, up to 2S on more)
///   nvls_tree (N > 1, NVLS GPUs, ppn ≥ 5, allreduce, Simple): algBw = min(5/6·B_local·m_nvls, η_net·B_net/f),
///          latency tree_base + 2⌊log2 N⌋·hop(net)
///   NVLS and NVLS-tree are not held to the floor F (their kernels do not run the slice pipeline)
///   net_base_s: a latency paid once by every algorithm whose collective crosses hosts (N > 1), on top of
///          the per-step network hops: a 2-host run alone cannot tell it from the steps, the 4- and 8-host
///          IB runs can (the LL tree's small messages grow by about 10 µs per doubling of hosts, from 25-35 µs)
///   host_overhead_s: added to every call (a benchmark's host-side cost; 0 for the presets).
///
/// NCCL's environment (ModelParams::nccl_env, nccl_env.hpp): a pair the job's NCCL_ALGO, NCCL_PROTO,
/// NCCL_NVLS_ENABLE or NCCL_TREE_THRESHOLD rules out is neither evaluated nor picked, by either
/// selection rule (NCCL removes it from its own tuning table the same way).
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "network_models/algorithms.hpp"
#include "network_models/cost.hpp"
#include "network_models/nccl_env.hpp"
#include "network_models/topology.hpp"

namespace lgreco::net {

inline constexpr int kNumClasses = 3;  ///< hop-latency classes: nvlink, pcie, net

/// How the (algorithm, protocol) pair is chosen (see above).
enum class Selection { kNcclTuning, kFastest };

/// Per-protocol constants (NCCL defaults) and calibrated shape parameters.
struct ProtocolParams {
  bool operator==(const ProtocolParams&) const = default;
  double ring_base_s = 0, tree_base_s = 0;         ///< NCCL baseLat
  std::array<double, kNumClasses> ring_hop_s{};    ///< NCCL hwLat, ring, by class
  std::array<double, kNumClasses> tree_hop_s{};    ///< NCCL hwLat, tree, by class
  double bw_multiplier = 1;   ///< m_p (calibrated; 1 = NCCL)
  bool pipelined = false;     ///< max(F, L, transfer) instead of L + transfer (calibrated; NCCL: false)
  double loss_bytes = 0;      ///< H_p of the efficiency loss (calibrated; 0 = none)
  double loss_exponent = 1;   ///< q_p of the efficiency loss, in (0, 1] so the transfer grows with S
};

/// Every constant of the model for one topology.
struct ModelParams {
  bool operator==(const ModelParams&) const = default;
  std::string nccl_version = "2.30.7";
  std::array<ProtocolParams, kNumProtocols> proto;
  std::array<double, kNumClasses> hop_scale{1, 1, 1};  ///< calibrated multipliers of hop latencies (net: with net_extra_hop_s)
  double ll_max_Bps = 0;             ///< NCCL llMaxBws
  double ll128_ring_per_channel_Bps = 0, ll128_tree_per_channel_Bps = 0, tree_per_channel_Bps = 0;
  int channels = 2;
  double net_efficiency = 1;         ///< η_net: achieved fraction of the NIC rate
  double net_extra_hop_s = 0;        ///< extra latency per network hop (sockets)
  double net_base_s = 0;             ///< once per collective that crosses hosts (corpus presets; 0 = none)
  double nvls_latency_s = 25e-6;
  double nvls_multiplier = 1;
  double pipeline_floor_s = 0;       ///< F: floor of the pipelined protocols (calibrated; 0 = none)
  bool allow_hierarchical = false;
  Selection selection = Selection::kFastest;
  // Corpus extensions (preset_constants.hpp); NCCL's own model (nccl_params) leaves them neutral.
  double intra_efficiency = 1;       ///< achieved fraction of the intra-host ring bandwidth (η_nvlink, η_pcie)
  double fill_time_s = 0;            ///< T of the LL128/Simple pipeline fill min(S/algBw, T) (0 = none)
  double net_fill_time_s = 0;        ///< T_net: LL128/Simple add it to their transfer across hosts (0 = none)
  bool nvls_additive = false;        ///< NVLS latency adds to its transfer (corpus presets) instead of flooring it
  bool tree_nic_aware = false;       ///< tree NIC traffic S per host and direction on 2 hosts, 2S beyond (else NCCL's ring bus)
  bool nvls_tree = false;            ///< offer NVLS-tree across hosts (NVLS GPUs, ≥ 5 per host, allreduce)
  double host_overhead_s = 0;        ///< added to every call: a benchmark's host-side cost (PyTorch, one process for many GPUs)
  NcclEnv nccl_env;                  ///< the job's NCCL_ALGO / NCCL_PROTO / ... restrictions (nccl_env.hpp); none by default
};

/// NCCL's own constants (2.30.7, reference-network.md) for this topology at this rank count: the prior
/// of calibration and the model behind `Selection::kNcclTuning`.
ModelParams nccl_params(const Topology& t, int ranks);
/// The same from a precomputed embedding of `t`.
ModelParams nccl_params(const Topology& t, const Embedding& e);
/// The preset: NCCL's structure with the constants derived from the measurement corpus
/// (preset_constants.hpp, docs/network-model.md "Presets"); what every command uses without a fit.
ModelParams default_params(const Topology& t, int ranks);
/// The same from a precomputed embedding of `t`.
ModelParams default_params(const Topology& t, const Embedding& e);

/// One evaluated (algorithm, protocol) pair.
struct Choice {
  Algorithm algorithm = Algorithm::kRing;
  Protocol protocol = Protocol::kSimple;
  double time_s = 0;
  double latency_s = 0;
  double algbw_Bps = 0;  ///< asymptotic algorithm bandwidth (before the size efficiency)
};

/// The cost model for one topology and rank count; cheap to query (tables precomputed).
class CollectiveModel {
 public:
  CollectiveModel(const Topology& t, int ranks, ModelParams p);
  /// With a precomputed embedding of `t` (calibration rebuilds the tables many times).
  CollectiveModel(Embedding e, const Topology& t, ModelParams p);
  /// With NCCL's own parameters for that embedding precomputed too (nccl_params(t, e); the corpus fit
  /// builds every model thousands of times with the same ones).
  CollectiveModel(Embedding e, const Topology& t, ModelParams p, ModelParams nccl);
  /// The pair NCCL runs for `size_bytes` (nccl-tests convention) and its calibrated cost, by the
  /// selection rule of the parameters. Zero time for 1 rank or 0 B.
  Choice best(Collective c, double size_bytes) const;
  /// The pair NCCL's own (uncalibrated) tuning model picks; its cost under these parameters.
  Choice nccl_pick(Collective c, double size_bytes) const;
  /// The fastest pair under these parameters.
  Choice fastest(Collective c, double size_bytes) const;
  /// One pair, or nullopt when unavailable for this collective/topology.
  std::optional<Choice> evaluate(Collective c, Algorithm a, Protocol p, double size_bytes) const;
  /// Allgather of unequal per-rank payloads: NCCL pads every rank to the largest.
  Choice allgather_padded(const std::vector<double>& per_rank_bytes) const;
  /// nccl-tests bus bandwidth factor: 2(n−1)/n allreduce, (n−1)/n allgather/reduce-scatter, 1 broadcast.
  double busbw_factor(Collective c) const;

  const Embedding& embedding() const { return emb_; }
  const ModelParams& params() const { return p_; }
  int ranks() const { return emb_.ranks; }

 private:
  struct Entry {
    bool ok = false;
    double latency_s = 0, algbw_Bps = 0;
    double fill_s = 0;      ///< T of the pipeline fill (0 for LL and without fill_time_s)
    double net_fill_s = 0;  ///< T_net across hosts (0 for LL, on one host and without net_fill_time_s)
    bool nvls = false;  ///< NVLS or NVLS-tree: no pipeline floor F
  };
  Entry& at(Collective c, Algorithm a, Protocol p) { return table_[static_cast<int>(c)][static_cast<int>(a)][static_cast<int>(p)]; }
  const Entry& at(Collective c, Algorithm a, Protocol p) const { return table_[static_cast<int>(c)][static_cast<int>(a)][static_cast<int>(p)]; }
  using Table = std::array<std::array<std::array<Entry, kNumProtocols>, kNumAlgorithms>, 4>;
  /// t(a, p, S) of the formula above for an entry (S > 0).
  double cost(Protocol p, const Entry& e, double size_bytes) const;
  std::string no_algorithm(Collective c) const;  ///< the error when nothing is available
  void build(const ModelParams& p, Table& table) const;

  Embedding emb_;
  ModelParams p_;
  bool nvls_ = false, nvls_tree_ = false;
  int cc_ = 80;
  Transport transport_ = Transport::kRdma;
  Table table_{};  ///< calibrated latencies and bandwidths
  Table tuning_{};  ///< NCCL's own (nccl_params) latencies and bandwidths, for the pick
};

/// CollectiveCost on top of a CollectiveModel: allreduce, reduce-scatter and broadcast of the
/// per-rank buffer; allgather of n × the per-rank payload (NCCL's total size).
class NetworkCost : public CollectiveCost {
 public:
  explicit NetworkCost(CollectiveModel model) : model_(std::move(model)) {}
  double time_s(Collective c, double bytes_per_rank) const override;
  const CollectiveModel& model() const { return model_; }

 private:
  CollectiveModel model_;
};

const char* to_string(Selection s);  ///< "fastest", "nccl-tuning"
/// "fastest" or "nccl-tuning"; otherwise a ConfigError prefixed with `where` (the file and field, or
/// the flag, it was read from; "" for none).
Selection parse_selection(const std::string& s, const std::string& where = "");

}  // namespace lgreco::net
