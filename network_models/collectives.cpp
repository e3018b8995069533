// NCCL-shaped collective cost; the formulas are stated in collectives.hpp.
#include "network_models/collectives.hpp"
#include "core/text.hpp"
#include "core/units.hpp"

#include "core/int_math.hpp"

#include "network_models/preset_constants.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace lgreco::net {
namespace {

using units::kGB;
using units::kInf;
constexpr double kUs = 1e-6;
constexpr int kNvlink = 0, kPcie = 1, kNet = 2;

/// NCCL's architecture row: 0 Volta/Turing, 1 Ampere, 2 Hopper, 3 Blackwell.
int arch_index(int cc) { return cc >= 100 ? 3 : cc >= 90 ? 2 : cc >= 80 ? 1 : 0; }

}  // namespace

ModelParams nccl_params(const Topology& t, int ranks) { return nccl_params(t, embed(t, ranks)); }

ModelParams default_params(const Topology& t, int ranks) { return default_params(t, embed(t, ranks)); }

ModelParams default_params(const Topology& t, const Embedding& e) {
  ModelParams p = nccl_params(t, e);
  apply_corpus_constants(p, t, e, corpus_constants());
  return p;
}

ModelParams nccl_params(const Topology& t, const Embedding& e) {
  ModelParams p;
  // baseLat (µs) and hwLat by class (nvlink, pcie, net), NCCL 2.30.7 (reference-network.md).
  const double ring_base[3] = {6.6, 14.0, 8.4}, tree_base[3] = {6.8, 14.0, 8.4};
  const double ring_hop[3][3] = {{0.6, 1.0, 2.7}, {1.9, 2.5, 4.0}, {3.4, 5.7, 14.0}};  // [proto][class]
  const double tree_hop[3][3] = {{0.6, 1.0, 5.0}, {1.25, 1.9, 8.5}, {4.0, 4.0, 14.0}};
  for (int q = 0; q < kNumProtocols; ++q) {
    p.proto[q].ring_base_s = ring_base[q] * kUs;
    p.proto[q].tree_base_s = tree_base[q] * kUs;
    for (int c = 0; c < kNumClasses; ++c) {
      p.proto[q].ring_hop_s[c] = ring_hop[q][c] * kUs;
      p.proto[q].tree_hop_s[c] = tree_hop[q][c] * kUs;
    }
  }
  // NCCL tuning tables (src/graph/tuning.cc): rows by architecture, columns 1 / 2 / >2 nodes.
  const int a = arch_index(t.gpu.compute_capability);
  const int col = e.hosts <= 2 ? e.hosts - 1 : 2;
  static const double ll_max[4][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}};
  static const double ll128_ring[4] = {20.0, 20.0, 36.7, 73.4};
  static const double ll128_tree[4][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {73.4, 73.4, 58.0}};
  static const double tree_bw[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {77.4, 82.8, 72.0}};
  // Across hosts NCCL indexes llMaxBws by CPU vendor; we assume Intel hosts (row 0).
  p.ll_max_Bps = (e.hosts == 1 ? ll_max[a][col] : ll_max[0][col]) * kGB;
  p.ll128_ring_per_channel_Bps = ll128_ring[a] * kGB;
  p.ll128_tree_per_channel_Bps = ll128_tree[a][col] * kGB;
  p.tree_per_channel_Bps = tree_bw[a][col] * kGB;
  p.channels = e.hosts > 1 ? std::max(2, 2 * t.nics_per_host()) : std::max(2, t.gpu.nvlinks);
  if (t.transport == Transport::kSocket) {
    // NCCL's model has no socket penalty; the uncalibrated prior of calibration keeps the earlier
    // assumptions: sockets reach about half the line rate and add per-hop
    // latency (docs/network-model.md); calibrate with `lgreco net calibrate`.
    p.net_efficiency = 0.5;
    p.net_extra_hop_s = 20 * kUs;
  }
  return p;
}

CollectiveModel::CollectiveModel(const Topology& t, int ranks, ModelParams p) : CollectiveModel(embed(t, ranks), t, std::move(p)) {}

CollectiveModel::CollectiveModel(Embedding e, const Topology& t, ModelParams p)
    : CollectiveModel(e, t, std::move(p), nccl_params(t, e)) {}

CollectiveModel::CollectiveModel(Embedding e, const Topology& t, ModelParams p, ModelParams nccl)
    : emb_(std::move(e)), p_(std::move(p)), cc_(t.gpu.compute_capability), transport_(t.transport) {
  nvls_ = t.nvls && emb_.hosts == 1 && emb_.ranks_per_host >= 5;
  nvls_tree_ = t.nvls && emb_.hosts > 1 && emb_.ranks_per_host >= 5;
  build(p_, table_);
  nccl.allow_hierarchical = p_.allow_hierarchical;
  build(nccl, tuning_);
}

void CollectiveModel::build(const ModelParams& p_, Table& table) const {
  auto at = [&table](Collective c, Algorithm a, Protocol p) -> Entry& {
    return table[static_cast<int>(c)][static_cast<int>(a)][static_cast<int>(p)];
  };
  const int n = emb_.ranks, N = emb_.hosts, ppn = emb_.ranks_per_host;
  if (n <= 1) return;
  const int intra = emb_.intra_class == LinkClass::kNvlink ? kNvlink : kPcie;
  const double B_local = emb_.ring_local_Bps * p_.intra_efficiency, B_net = p_.net_efficiency * emb_.ring_net_Bps;
  const double B = std::min(B_local, B_net);
  // Tree bus bandwidth. NCCL's model: the ring's. NIC-aware (corpus presets): a double binary tree moves
  // S per host and direction through the NICs on 2 hosts and up to 2S on more, against the ring's
  // 2(n-1)/n·S, and each host's chain carries 2S per GPU (algBw = 0.5·bus below).
  const double f_nic = N <= 2 ? 1.0 : 2.0;
  const double B_tree = p_.tree_nic_aware ? std::min(B_local, 2.0 * B_net / f_nic) : B;
  const double C = p_.channels;
  const bool ll128 = emb_.intra_class == LinkClass::kNvlink && (cc_ == 70 || cc_ == 80 || cc_ == 90 || cc_ == 100) &&
                     (N == 1 || transport_ == Transport::kRdma);
  // The calibrated scale multiplies the whole per-hop latency of its class, a socket's extra latency included,
  // so a calibration can bring a socket hop below the 20 µs assumed without one.
  auto hop = [&](const ProtocolParams& q, bool tree, int cls) {
    const double h = (tree ? q.tree_hop_s : q.ring_hop_s)[cls] + (cls == kNet ? p_.net_extra_hop_s : 0.0);
    return h * p_.hop_scale[cls];
  };
  auto ring_bus = [&](Protocol pr, double bus, int ppn_) {
    switch (pr) {
      case Protocol::kLL: return std::min(p_.ll_max_Bps, 0.5 * bus);
      case Protocol::kLL128: return std::min((ppn_ < 2 ? 0.7 : 0.92) * bus, C * p_.ll128_ring_per_channel_Bps);
      case Protocol::kSimple: return bus;
    }
    return bus;
  };
  for (int ci = 0; ci < 4; ++ci) {
    const auto c = static_cast<Collective>(ci);
    const bool ar = c == Collective::kAllreduce;
    const int nsteps = ar ? 2 * (n - 1) : c == Collective::kBroadcast ? n : n - 1;
    const int lat_steps = ar ? 2 * (n - 1) : n - 1;
    const int n_inter = N == 1 ? 0 : ar ? 2 * (N - 1) : N - 1;
    for (int pi = 0; pi < kNumProtocols; ++pi) {
      const auto pr = static_cast<Protocol>(pi);
      const ProtocolParams& q = p_.proto[pi];
      if (pr == Protocol::kLL128 && !ll128) continue;
      Entry& ring = at(c, Algorithm::kRing, pr);
      ring.ok = true;
      ring.algbw_Bps = ring_bus(pr, B, ppn) * q.bw_multiplier * n / nsteps;
      ring.latency_s = q.ring_base_s + (lat_steps - n_inter) * hop(q, false, intra) + n_inter * hop(q, false, kNet);
      ring.fill_s = pr == Protocol::kLL ? 0 : p_.fill_time_s;
      if (ar && N > 1) {
        Entry& tree = at(c, Algorithm::kTree, pr);
        const double bt = std::min(0.92 * B_tree, C * p_.tree_per_channel_Bps);
        double bp = bt;
        if (pr == Protocol::kLL) bp = std::min(bt / 3.8, p_.ll_max_Bps);
        if (pr == Protocol::kLL128) bp = std::min(bt * (N == 1 ? 7.0 / 9.0 : 120.0 / 128.0), C * p_.ll128_tree_per_channel_Bps);
        tree.ok = true;
        tree.algbw_Bps = 0.5 * bp * q.bw_multiplier;
        tree.latency_s = q.tree_base_s + 2 * ((ppn - 1) * hop(q, true, intra) + lgreco::floor_log2(static_cast<std::uint64_t>(N)) * hop(q, true, kNet));
        tree.fill_s = pr == Protocol::kLL ? 0 : p_.fill_time_s;
      }
      if (ar && N > 1 && p_.allow_hierarchical) {
        // Three ring phases with this protocol: intra RS, inter AR on the rails, intra AG.
        Entry& h = at(c, Algorithm::kHierarchical, pr);
        const double rail = std::min(emb_.rail_local_Bps, p_.net_efficiency * emb_.rail_net_Bps);
        const double intra_bw = ring_bus(pr, emb_.intra_ring_Bps, ppn) * q.bw_multiplier;
        const double inter_bw = ring_bus(pr, rail, 1) * q.bw_multiplier;
        // Time per byte of S: RS and AG each (ppn−1)/ppn / intra_bw, inter 2(N−1)/N / ppn / inter_bw.
        const double per_byte = (ppn > 1 ? 2.0 * (ppn - 1) / ppn / intra_bw : 0) + 2.0 * (N - 1) / N / ppn / inter_bw;
        h.ok = true;
        h.algbw_Bps = 1.0 / per_byte;
        h.latency_s = (ppn > 1 ? 2 * (q.ring_base_s + (ppn - 1) * hop(q, false, intra)) : 0) + q.ring_base_s + 2 * (N - 1) * hop(q, false, kNet);
      }
    }
    if (nvls_ && c != Collective::kBroadcast) {
      Entry& e = at(c, Algorithm::kNvls, Protocol::kSimple);
      e.ok = true;
      e.algbw_Bps = 5.0 / 6.0 * emb_.intra_ring_Bps * p_.nvls_multiplier;
      e.latency_s = p_.nvls_latency_s;
      e.fill_s = p_.fill_time_s;
      e.nvls = true;
    }
    if (nvls_tree_ && p_.nvls_tree && ar) {
      // NVLS inside each host, a tree of the hosts' shards across them (NCCL's NVLS-tree).
      Entry& e = at(c, Algorithm::kNvlsTree, Protocol::kSimple);
      const ProtocolParams& q = p_.proto[static_cast<int>(Protocol::kSimple)];
      e.ok = true;
      e.algbw_Bps = std::min(5.0 / 6.0 * emb_.intra_ring_Bps * p_.nvls_multiplier, B_net / f_nic);
      e.latency_s = q.tree_base_s + 2 * lgreco::floor_log2(static_cast<std::uint64_t>(N)) * hop(q, true, kNet);
      e.fill_s = p_.fill_time_s;
      e.nvls = true;
    }
  }
  // Across hosts every algorithm above crosses the network once per call: net_base_s, and the pipelined
  // protocols' transfer gains net_fill_time_s (corpus presets).
  if (N > 1 && (p_.net_base_s > 0 || p_.net_fill_time_s > 0)) {
    for (auto& by_algorithm : table) {
      for (auto& by_protocol : by_algorithm) {
        for (int pi = 0; pi < kNumProtocols; ++pi) {
          Entry& e = by_protocol[pi];
          if (!e.ok) continue;
          e.latency_s += p_.net_base_s;
          if (static_cast<Protocol>(pi) != Protocol::kLL) e.net_fill_s = p_.net_fill_time_s;
        }
      }
    }
  }
}

double CollectiveModel::cost(Protocol p, const Entry& e, double s) const {
  const ProtocolParams& q = p_.proto[static_cast<int>(p)];
  const double loss = q.loss_bytes > 0 ? std::pow(q.loss_bytes / s, q.loss_exponent) : 0.0;
  const double ideal = s / e.algbw_Bps;
  // A message shorter than the fill cannot lose more than its own transfer.
  const double transfer = ideal * (1.0 + loss) + std::min(ideal, e.fill_s) + e.net_fill_s;
  // NVLS kernels do not run the ring/tree slice pipeline whose floor F is; in the presets their latency adds.
  const double floor = e.nvls ? 0.0 : p_.pipeline_floor_s;
  const double t = q.pipelined && !(e.nvls && p_.nvls_additive) ? std::max({floor, e.latency_s, transfer}) : e.latency_s + transfer;
  return t + p_.host_overhead_s;
}

std::optional<Choice> CollectiveModel::evaluate(Collective c, Algorithm a, Protocol p, double size_bytes) const {
  if (!(size_bytes >= 0) || !std::isfinite(size_bytes)) throw InputError("collective size " + std::to_string(size_bytes) + " bytes is not a finite number >= 0");
  if (emb_.ranks <= 1) return Choice{a, p, 0, 0, kInf};
  const Entry& e = at(c, a, p);
  if (!e.ok || !p_.nccl_env.allows(c, a, p, size_bytes)) return std::nullopt;
  Choice ch{a, p, 0, e.latency_s, e.algbw_Bps};
  ch.time_s = size_bytes == 0 ? 0 : cost(p, e, size_bytes);
  return ch;
}

std::string CollectiveModel::no_algorithm(Collective c) const {
  std::string m = std::string("no algorithm available for ") + to_string(c) + " on " + std::to_string(emb_.ranks) + " ranks";
  return p_.nccl_env.restricted() ? m + " under " + p_.nccl_env.text : m;
}

Choice CollectiveModel::best(Collective c, double size_bytes) const {
  return p_.selection == Selection::kNcclTuning ? nccl_pick(c, size_bytes) : fastest(c, size_bytes);
}

Choice CollectiveModel::nccl_pick(Collective c, double size_bytes) const {
  if (emb_.ranks <= 1 || !(size_bytes > 0) || !std::isfinite(size_bytes)) return fastest(c, size_bytes);
  int best_a = -1, best_p = -1;
  double best_t = kInf;
  for (int a = 0; a < kNumAlgorithms; ++a) {
    for (int p = 0; p < kNumProtocols; ++p) {
      const Entry& e = tuning_[static_cast<int>(c)][a][p];
      if (!e.ok || !at(c, static_cast<Algorithm>(a), static_cast<Protocol>(p)).ok) continue;
      if (!p_.nccl_env.allows(c, static_cast<Algorithm>(a), static_cast<Protocol>(p), size_bytes)) continue;
      const double t0 = e.latency_s + size_bytes / e.algbw_Bps;
      if (t0 < best_t) best_t = t0, best_a = a, best_p = p;
    }
  }
  if (best_a < 0) throw ConfigError(no_algorithm(c));
  return *evaluate(c, static_cast<Algorithm>(best_a), static_cast<Protocol>(best_p), size_bytes);
}

Choice CollectiveModel::fastest(Collective c, double size_bytes) const {
  std::optional<Choice> best;
  for (int a = 0; a < kNumAlgorithms; ++a) {
    for (int p = 0; p < kNumProtocols; ++p) {
      auto ch = evaluate(c, static_cast<Algorithm>(a), static_cast<Protocol>(p), size_bytes);
      if (ch && (!best || ch->time_s < best->time_s)) best = ch;
      if (ch && emb_.ranks <= 1) return *ch;
    }
  }
  if (!best) throw ConfigError(no_algorithm(c));
  return *best;
}

Choice CollectiveModel::allgather_padded(const std::vector<double>& per_rank_bytes) const {
  if (static_cast<int>(per_rank_bytes.size()) != emb_.ranks) {
    throw InputError("allgather: " + std::to_string(per_rank_bytes.size()) + " payloads for " + std::to_string(emb_.ranks) + " ranks");
  }
  double largest = 0;
  for (double b : per_rank_bytes) largest = std::max(largest, b);
  return this->best(Collective::kAllgather, largest * emb_.ranks);
}

double CollectiveModel::busbw_factor(Collective c) const {
  const double n = emb_.ranks;
  if (n <= 1) return 1;
  if (c == Collective::kAllreduce) return 2 * (n - 1) / n;
  if (c == Collective::kBroadcast) return 1;
  return (n - 1) / n;
}

double NetworkCost::time_s(Collective c, double bytes_per_rank) const {
  // nccl-tests sizes: the per-rank buffer, except allgather's whole gathered buffer.
  switch (c) {
    case Collective::kAllgather: return model_.best(Collective::kAllgather, bytes_per_rank * model_.ranks()).time_s;
    case Collective::kReduceScatter: return model_.best(Collective::kReduceScatter, bytes_per_rank).time_s;
    case Collective::kBroadcast: return model_.best(Collective::kBroadcast, bytes_per_rank).time_s;
    case Collective::kAllreduce: break;
  }
  return model_.best(Collective::kAllreduce, bytes_per_rank).time_s;
}

const char* to_string(Algorithm a) {
  switch (a) {
    case Algorithm::kRing: return "ring";
    case Algorithm::kTree: return "tree";
    case Algorithm::kNvls: return "nvls";
    case Algorithm::kHierarchical: return "hierarchical";
    case Algorithm::kNvlsTree: return "nvls-tree";
  }
  return "?";
}
const char* to_string(Protocol p) {
  switch (p) {
    case Protocol::kLL: return "LL";
    case Protocol::kLL128: return "LL128";
    case Protocol::kSimple: return "Simple";
  }
  return "?";
}

const char* to_string(Selection s) { return s == Selection::kFastest ? "fastest" : "nccl-tuning"; }

Selection parse_selection(const std::string& s, const std::string& where) {
  if (s == "fastest") return Selection::kFastest;
  if (s == "nccl-tuning") return Selection::kNcclTuning;
  throw ConfigError((where.empty() ? "" : where + ": ") + "unknown selection \"" + printable(s) + "\" (expected fastest, nccl-tuning)");
}

}  // namespace lgreco::net
