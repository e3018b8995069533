// Graph algorithms on a Topology (Boost.Graph stays inside this file): validation, routing and
// ring embeddings. The model is stated in topology.hpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/connected_components.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/graph/filtered_graph.hpp>

#include "core/cancel.hpp"
#include "core/units.hpp"
#include "core/text.hpp"
#include "network_models/topology.hpp"

namespace lgreco::net {
namespace {

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, boost::no_property,
                                    boost::property<boost::edge_index_t, int, boost::property<boost::edge_weight_t, double>>>;
using Edge = boost::graph_traits<Graph>::edge_descriptor;
using units::kInf;

Graph build_graph(const Topology& t) {
  Graph g(t.nodes.size());
  for (std::size_t i = 0; i < t.links.size(); ++i) {
    // Latency plus a tiny per-hop term so that equal-latency routes prefer fewer hops.
    boost::add_edge(t.links[i].a, t.links[i].b, {static_cast<int>(i), t.links[i].latency_s + 1e-12}, g);
  }
  return g;
}

/// Ends a shortest-path search once the destination is settled: its distance and predecessors are
/// final then (the same as after a full search), and a route inside one host no longer explores
/// every host of a large cluster.
struct Settled {};
struct StopAtTarget : boost::default_dijkstra_visitor {
  std::size_t target;
  explicit StopAtTarget(std::size_t t) : target(t) {}
  template <class Vertex, class G>
  void examine_vertex(Vertex v, const G&) const {
    if (static_cast<std::size_t>(v) == target) throw Settled{};
  }
};

/// One traversed link and its direction (true: a → b).
struct Hop {
  int link;
  bool forward;
};

/// Routes with the rule in topology.hpp, cached per (src, dst).
class Router {
 public:
  explicit Router(const Topology& t) : t_(t), g_(build_graph(t)) {}

  const std::vector<Hop>& route(int src, int dst) {
    auto key = std::make_pair(src, dst);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    throw_if_cancelled();  // each new route is a shortest-path search over the whole graph
    std::vector<Hop> path;
    if (!t_.p2p && kind(src) == NodeKind::kGpu && kind(dst) == NodeKind::kGpu && src != dst) {
      // No peer-to-peer: staged through the source's host bridge (host memory).
      const int hb = nearest(src, NodeKind::kHostBridge, t_.nodes[src].host);
      path = direct(src, hb);
      auto second = direct(hb, dst);
      path.insert(path.end(), second.begin(), second.end());
    } else {
      path = direct(src, dst);
    }
    return cache_.emplace(key, std::move(path)).first->second;
  }

  /// Bottleneck bandwidth and latency of a route.
  std::pair<double, double> measure(const std::vector<Hop>& p) const {
    double bw = kInf, lat = 0;
    for (const auto& h : p) {
      bw = std::min(bw, t_.links[h.link].bandwidth_Bps);
      lat += t_.links[h.link].latency_s;
    }
    return {bw, lat};
  }

  /// The node of `k` on `host` with the widest, then lowest-latency route from `from`.
  int nearest(int from, NodeKind k, int host) {
    int best = -1;
    std::pair<double, double> best_m{-1, kInf};
    for (std::size_t i = 0; i < t_.nodes.size(); ++i) {
      if (t_.nodes[i].kind != k || t_.nodes[i].host != host) continue;
      auto m = measure(route(from, static_cast<int>(i)));
      if (best < 0 || m.second < best_m.second) {
        best_m = m;
        best = static_cast<int>(i);
      }
    }
    if (best < 0) throw ConfigError("topology " + printable(t_.name) + ": host " + std::to_string(host) + " has no " + to_string(k));
    return best;
  }

  NodeKind kind(int v) const { return t_.nodes[v].kind; }

 private:
  std::vector<Hop> direct(int src, int dst) {
    if (src == dst) return {};
    auto index = boost::get(boost::edge_index, g_);
    // GPUs other than the endpoints never forward. Routes depend on latency only (not on
    // bandwidth), so that widening a link never reroutes traffic onto a narrower path.
    auto keep_edge = [&](const Edge& e) {
      const auto& l = t_.links[index[e]];
      for (int v : {l.a, l.b}) {
        if (v != src && v != dst && kind(v) == NodeKind::kGpu) return false;
      }
      return true;
    };
    boost::filtered_graph<Graph, std::function<bool(const Edge&)>> fg(g_, keep_edge);
    std::vector<std::size_t> pred(t_.nodes.size());
    std::vector<double> dist(t_.nodes.size(), kInf);
    try {
      boost::dijkstra_shortest_paths(fg, src, boost::predecessor_map(pred.data()).distance_map(dist.data()).visitor(
                                                  StopAtTarget(static_cast<std::size_t>(dst))));
    } catch (const Settled&) {
    }
    if (dist[dst] < 1e300 && pred[dst] != static_cast<std::size_t>(dst)) {
      std::vector<Hop> path;
      for (std::size_t v = dst; v != static_cast<std::size_t>(src); v = pred[v]) {
        const std::size_t u = pred[v];
        int best = -1;  // the lowest-latency link u–v (parallel links allowed)
        for (std::size_t i = 0; i < t_.links.size(); ++i) {
          const auto& l = t_.links[i];
          const bool joins = (l.a == static_cast<int>(u) && l.b == static_cast<int>(v)) || (l.b == static_cast<int>(u) && l.a == static_cast<int>(v));
          if (joins && (best < 0 || l.latency_s < t_.links[best].latency_s)) best = static_cast<int>(i);
        }
        path.push_back({best, t_.links[best].a == static_cast<int>(u)});
      }
      std::reverse(path.begin(), path.end());
      return path;
    }
    throw ConfigError("topology " + printable(t_.name) + ": no route from " + printable(t_.nodes[src].id) + " to " + printable(t_.nodes[dst].id) +
                      " that avoids forwarding through other GPUs");
  }

  const Topology& t_;
  Graph g_;
  std::map<std::pair<int, int>, std::vector<Hop>> cache_;
};

std::vector<int> gpus_of(const Topology& t, int host) {
  std::vector<int> g;
  for (std::size_t i = 0; i < t.nodes.size(); ++i) {
    if (t.nodes[i].kind == NodeKind::kGpu && t.nodes[i].host == host) g.push_back(static_cast<int>(i));
  }
  return g;
}

std::vector<int> nics_of(const Topology& t, int host) {
  std::vector<int> n;
  for (std::size_t i = 0; i < t.nodes.size(); ++i) {
    if (t.nodes[i].kind == NodeKind::kNic && t.nodes[i].host == host) n.push_back(static_cast<int>(i));
  }
  return n;
}

/// Per-direction link loads of a set of routed flows.
class Loads {
 public:
  explicit Loads(const Topology& t) : t_(t) {}
  void add(const std::vector<Hop>& path, double weight) {
    for (const auto& h : path) load_[{h.link, h.forward}] += weight;
  }
  /// min over link directions of bandwidth / load, and the limiting direction.
  /// `net`: only network links (1), only other links (0), all (-1).
  std::pair<double, std::string> bottleneck(int net = -1) const {
    double best = kInf;
    std::string where = "none";
    for (const auto& [k, load] : load_) {
      const auto& l = t_.links[k.first];
      if (net >= 0 && (l.cls == LinkClass::kNet) != (net == 1)) continue;
      const double bw = l.bandwidth_Bps / load;
      if (bw < best) {
        best = bw;
        where = k.second ? t_.nodes[l.a].id + "->" + t_.nodes[l.b].id : t_.nodes[l.b].id + "->" + t_.nodes[l.a].id;
      }
    }
    return {best, where};
  }

 private:
  const Topology& t_;
  std::map<std::pair<int, bool>, double> load_;
};

/// Each GPU's NIC: the nearest one, ties going to the NIC with fewest GPUs so far.
std::vector<int> assign_nics(const Topology& t, Router& r, const std::vector<int>& gpus, const std::vector<int>& nics) {
  std::vector<int> out, count(nics.size(), 0);
  for (int g : gpus) {
    int best = -1;
    std::pair<double, double> bm{-1, kInf};
    for (std::size_t i = 0; i < nics.size(); ++i) {
      auto m = r.measure(r.route(g, nics[i]));
      const bool better = best >= 0 && (m.second < bm.second - 1e-12 || (std::abs(m.second - bm.second) <= 1e-12 && count[i] < count[best]));
      if (best < 0 || better) {
        bm = m;
        best = static_cast<int>(i);
      }
    }
    ++count[best];
    out.push_back(nics[best]);
  }
  (void)t;
  return out;
}

}  // namespace

int Topology::hosts() const {
  std::int64_t h = 0;
  for (const auto& n : nodes) h = std::max<std::int64_t>(h, std::int64_t{n.host} + 1);
  return static_cast<int>(std::min<std::int64_t>(h, std::numeric_limits<int>::max()));
}
int Topology::gpus() const {
  return static_cast<int>(std::count_if(nodes.begin(), nodes.end(), [](const TopoNode& n) { return n.kind == NodeKind::kGpu; }));
}
int Topology::gpus_per_host() const { return static_cast<int>(gpus_of(*this, 0).size()); }
int Topology::nics_per_host() const { return static_cast<int>(nics_of(*this, 0).size()); }

void validate(const Topology& t, const std::string& origin) {
  // Sizes first, in one pass each: the checks below and every later question cost more.
  if (t.nodes.size() > static_cast<std::size_t>(kMaxTopologyNodes)) {
    throw ConfigError(origin + ": " + std::to_string(t.nodes.size()) + " nodes, more than the " +
                      std::to_string(kMaxTopologyNodes) + " lgreco models");
  }
  if (t.links.size() > static_cast<std::size_t>(kMaxTopologyLinks)) {
    throw ConfigError(origin + ": " + std::to_string(t.links.size()) + " links, more than the " +
                      std::to_string(kMaxTopologyLinks) + " lgreco models");
  }
  const TopoNode* last_host = nullptr;  // the node with the largest host index
  for (const auto& n : t.nodes) {
    if (!last_host || n.host > last_host->host) last_host = &n;
  }
  if (last_host && last_host->host >= kMaxTopologyHosts) {
    throw ConfigError(origin + ": " + std::to_string(std::int64_t{last_host->host} + 1) + " hosts (node \"" +
                      printable(last_host->id) + "\" has host " + std::to_string(last_host->host) +
                      "), more than the " + std::to_string(kMaxTopologyHosts) + " hosts lgreco models");
  }
  std::set<std::string> ids;
  for (const auto& n : t.nodes) {
    if (!ids.insert(n.id).second) throw ConfigError(origin + ": duplicate node id \"" + printable(n.id) + "\"");
    if (n.host < 0 && n.kind != NodeKind::kNetSwitch) throw ConfigError(origin + ": node \"" + printable(n.id) + "\" has host " + std::to_string(n.host) + " (expected >= 0)");
  }
  for (std::size_t i = 0; i < t.links.size(); ++i) {
    const auto& l = t.links[i];
    const std::string where = origin + ": links[" + std::to_string(i) + "]";
    if (l.a < 0 || l.b < 0 || l.a >= static_cast<int>(t.nodes.size()) || l.b >= static_cast<int>(t.nodes.size())) throw ConfigError(where + ": endpoint out of range");
    if (l.a == l.b) throw ConfigError(where + ": links node \"" + printable(t.nodes[l.a].id) + "\" to itself");
    if (!std::isfinite(l.bandwidth_Bps) || l.bandwidth_Bps <= 0) throw ConfigError(where + ".bandwidth_GBps: " + std::to_string(l.bandwidth_Bps / 1e9) + " must be > 0");
    if (!std::isfinite(l.latency_s) || l.latency_s < 0) throw ConfigError(where + ".latency_us: " + std::to_string(l.latency_s * 1e6) + " must be >= 0");
  }
  if (t.gpus() == 0) throw ConfigError(origin + ": the topology has no GPU");
  Graph g = build_graph(t);
  std::vector<int> comp(t.nodes.size());
  const int ncomp = boost::connected_components(g, comp.data());
  if (ncomp > 1) {
    for (std::size_t i = 0; i < t.nodes.size(); ++i) {
      if (comp[i] != comp[0]) {
        throw ConfigError(origin + ": the graph is disconnected (" + std::to_string(ncomp) + " components): node \"" + printable(t.nodes[i].id) +
                          "\" cannot reach \"" + printable(t.nodes[0].id) + "\"");
      }
    }
  }
  // GPUs per host in one pass (hosts < kMaxTopologyHosts, checked above).
  std::vector<int> per_host(static_cast<std::size_t>(t.hosts()), 0);
  for (const auto& n : t.nodes) {
    if (n.kind == NodeKind::kGpu) ++per_host[static_cast<std::size_t>(n.host)];
  }
  const int per = per_host.empty() ? 0 : per_host[0];
  if (per > kMaxGpusPerHost) {
    throw ConfigError(origin + ": host 0 has " + std::to_string(per) + " GPUs, more than the " + std::to_string(kMaxGpusPerHost) +
                      " per host lgreco models");
  }
  for (std::size_t h = 1; h < per_host.size(); ++h) {
    const int n = per_host[h];
    if (n != per) throw ConfigError(origin + ": host " + std::to_string(h) + " has " + std::to_string(n) + " GPUs, host 0 has " + std::to_string(per));
  }
  if (t.hosts() > 1 && t.nics_per_host() == 0) throw ConfigError(origin + ": several hosts but host 0 has no NIC");
  // NICs per host, equal on every host as the GPUs are: the multi-host ring runs one channel per NIC
  // of host 0 through the same NIC index on every host.
  std::vector<int> nics_per(static_cast<std::size_t>(t.hosts()), 0);
  for (const auto& n : t.nodes) {
    if (n.kind == NodeKind::kNic) ++nics_per[static_cast<std::size_t>(n.host)];
  }
  for (std::size_t h = 1; h < nics_per.size(); ++h) {
    if (nics_per[h] != nics_per[0])
      throw ConfigError(origin + ": host " + std::to_string(h) + " has " + std::to_string(nics_per[h]) + " NICs, host 0 has " + std::to_string(nics_per[0]));
  }
}

Embedding embed(const Topology& t, int ranks) {
  const int per = t.gpus_per_host();
  if (ranks < 1 || ranks > t.gpus()) throw ConfigError("topology " + printable(t.name) + ": " + std::to_string(ranks) + " ranks, expected 1.." + std::to_string(t.gpus()));
  if (ranks > per && ranks % per != 0) {
    throw ConfigError("topology " + printable(t.name) + ": " + std::to_string(ranks) + " ranks is neither <= " + std::to_string(per) + " GPUs per host nor a multiple of it");
  }
  Embedding e;
  e.ranks = ranks;
  e.hosts = ranks > per ? ranks / per : 1;
  e.ranks_per_host = ranks > per ? per : ranks;
  Router r(t);
  std::vector<std::vector<int>> gpus(e.hosts);
  for (int h = 0; h < e.hosts; ++h) {
    auto all = gpus_of(t, h);
    gpus[h].assign(all.begin(), all.begin() + e.ranks_per_host);
  }
  // Intra-host ring.
  Loads intra(t);
  bool all_nvlink = true;
  const auto& g0 = gpus[0];
  for (std::size_t i = 0; g0.size() > 1 && i < g0.size(); ++i) {
    const auto& p = r.route(g0[i], g0[(i + 1) % g0.size()]);
    intra.add(p, 1.0);
    for (const auto& h : p) all_nvlink = all_nvlink && t.links[h.link].cls == LinkClass::kNvlink;
  }
  e.intra_class = all_nvlink ? LinkClass::kNvlink : LinkClass::kPcie;
  e.intra_ring_Bps = intra.bottleneck().first;
  if (e.hosts == 1) {
    e.ring_Bps = e.ring_local_Bps = e.intra_ring_Bps;
    e.ring_net_Bps = e.rail_local_Bps = e.rail_net_Bps = kInf;
    e.ring_bottleneck = intra.bottleneck().second;
    e.rail_Bps = kInf;
    e.rail_bottleneck = "none";
    return e;
  }
  // Multi-host ring: one channel per NIC; channel c enters and leaves each host through NIC c.
  std::vector<std::vector<int>> nics(e.hosts);
  for (int h = 0; h < e.hosts; ++h) nics[h] = nics_of(t, h);
  e.channels = static_cast<int>(nics[0].size());
  Loads ring(t);
  const double w = 1.0 / e.channels;
  std::vector<std::vector<int>> gpu_nic(e.hosts);  // each GPU's own NIC (also the rails' below)
  for (int h = 0; h < e.hosts; ++h) gpu_nic[h] = assign_nics(t, r, gpus[h], nics[h]);
  std::vector<std::vector<int>> entries(e.hosts);  // channels entering at each GPU of each host
  for (int h = 0; h < e.hosts; ++h) entries[h].assign(gpus[h].size(), 0);
  // The GPU of host h nearest NIC `nic` (lowest route latency), searched from index `from` on and
  // skipping `skip`; among equally near GPUs the first, or with `spread` the one entered least so far.
  auto nearest_gpu = [&](int h, int nic, std::size_t from, std::size_t skip, bool spread) {
    const std::size_t G = gpus[h].size();
    std::size_t best_i = G;
    double best = kInf;
    for (std::size_t k = 0; k < G; ++k) {
      const std::size_t i = (from + k) % G;
      if (i == skip) continue;
      const double lat = r.measure(r.route(gpus[h][i], nic)).second;
      if (lat < best - 1e-12 || (spread && std::abs(lat - best) <= 1e-12 && entries[h][i] < entries[h][best_i])) {
        best = lat;
        best_i = i;
      }
    }
    return best_i;
  };
  for (int c = 0; c < e.channels; ++c) {
    std::vector<std::vector<int>> order(e.hosts);
    for (int h = 0; h < e.hosts; ++h) {
      const std::size_t G = gpus[h].size();
      // Channel c enters at the GPU whose NIC is c; with more NICs than GPUs (16 RoCE ports or 32 EFA
      // NICs for 8 GPUs) no GPU claims NIC c and the channel enters at the nearest GPU, spreading the
      // extra NICs over the GPUs, never through another PCIe switch when one of its own GPUs is there.
      const auto first = std::find(gpu_nic[h].begin(), gpu_nic[h].end(), nics[h][c]);
      const std::size_t start = first != gpu_nic[h].end() ? static_cast<std::size_t>(first - gpu_nic[h].begin())
                                                          : nearest_gpu(h, nics[h][c], static_cast<std::size_t>(c) % G, G, true);
      ++entries[h][start];
      // The ring leaves through the same NIC, so NCCL ends it at a GPU near that NIC too (the other GPU
      // of the NIC's PCIe switch): the exit is the nearest GPU after the entry.
      const std::size_t exit = nearest_gpu(h, nics[h][c], start + 1, start, false);
      for (std::size_t k = 0; k < G; ++k) {
        const std::size_t i = (start + k) % G;
        if (i != exit) order[h].push_back(gpus[h][i]);
      }
      if (exit < G) order[h].push_back(gpus[h][exit]);
      for (std::size_t i = 0; i + 1 < order[h].size(); ++i) ring.add(r.route(order[h][i], order[h][i + 1]), w);
    }
    for (int h = 0; h < e.hosts; ++h) {
      const int nh = (h + 1) % e.hosts;
      ring.add(r.route(order[h].back(), nics[h][c]), w);
      ring.add(r.route(nics[h][c], nics[nh][c]), w);
      ring.add(r.route(nics[nh][c], order[nh].front()), w);
    }
  }
  std::tie(e.ring_Bps, e.ring_bottleneck) = ring.bottleneck();
  e.ring_local_Bps = ring.bottleneck(0).first;
  e.ring_net_Bps = ring.bottleneck(1).first;
  // Rails: local rank i of every host runs its own ring through its nearest NIC.
  Loads rail(t);
  for (int h = 0; h < e.hosts; ++h) {
    const int nh = (h + 1) % e.hosts;
    for (int i = 0; i < e.ranks_per_host; ++i) {
      rail.add(r.route(gpus[h][i], gpu_nic[h][i]), 1.0);
      rail.add(r.route(gpu_nic[h][i], gpu_nic[nh][i]), 1.0);
      rail.add(r.route(gpu_nic[nh][i], gpus[nh][i]), 1.0);
    }
  }
  std::tie(e.rail_Bps, e.rail_bottleneck) = rail.bottleneck();
  e.rail_local_Bps = rail.bottleneck(0).first;
  e.rail_net_Bps = rail.bottleneck(1).first;
  return e;
}

std::vector<NicShare> nic_sharing(const Topology& t) {
  Router r(t);
  const auto gpus = gpus_of(t, 0);
  const auto nics = nics_of(t, 0);
  std::vector<NicShare> out;
  if (nics.empty()) return out;
  const auto assigned = assign_nics(t, r, gpus, nics);
  for (int nic : nics) {
    NicShare s;
    s.nic = t.nodes[nic].id;
    s.path_Bps = kInf;
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      if (assigned[i] != nic) continue;
      s.gpus.push_back(t.nodes[gpus[i]].id);
      s.path_Bps = std::min(s.path_Bps, r.measure(r.route(gpus[i], nic)).first);
    }
    if (s.gpus.empty()) s.path_Bps = 0;
    out.push_back(s);
  }
  return out;
}

}  // namespace lgreco::net
