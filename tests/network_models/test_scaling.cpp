// Node-count scaling of the presets (issue 13): at a fixed per-node NIC bandwidth, the large-message bus
// bandwidth stays within what the corpus' multi-node NVLink clusters show, and small messages get slower
// with more network hops, as the corpus' 1- and 4-node P6-B200 rows do.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <string>

#include "network_models/corpus_fit.hpp"
#include "network_models/presets.hpp"
#include "tests/network_models/support.hpp"

using namespace lgreco;
using namespace lgreco::net;

namespace {

constexpr double kLarge = 8.0 * 1073741824, kSmall = 1024;

/// Sum of a host's network link bandwidths (its NICs' line rate).
double nic_Bps_per_host(const Topology& t) {
  double sum = 0;
  for (const auto& l : t.links)
    if (l.cls == LinkClass::kNet && (t.nodes[l.a].host == 0 || t.nodes[l.b].host == 0)) sum += l.bandwidth_Bps;
  return sum;
}

double busbw_per_nic(const Topology& t, int ranks, double size) {
  const CollectiveModel m(t, ranks, default_params(t, ranks));
  return size / m.best(Collective::kAllreduce, size).time_s * m.busbw_factor(Collective::kAllreduce) / nic_Bps_per_host(t);
}

}  // namespace

TEST_CASE("large-message bus bandwidth per NIC stays within the corpus range as nodes grow", "[scaling]") {
  // The observed range: allreduce rows >= 1 GiB of multi-node corpus systems with full 8-GPU NVLink hosts
  // (like the clusters below; a row with one GPU per host measures one NIC path, not a host), busbw
  // divided by the host's NIC line rate.
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const auto& f : prepare_corpus(load_corpus_dir(testing::corpus_dir()))) {
    if (f.topology.gpu.nvlinks == 0) continue;
    for (const auto& r : f.file.rows) {
      const Embedding& e = f.embeddings.at(r.ranks);
      if (e.hosts < 2 || e.ranks_per_host < 8 || r.size_bytes < 1073741824 || r.collective != Collective::kAllreduce) continue;
      const double ratio = r.size_bytes / r.time_s * busbw_factor(r.collective, r.ranks) / nic_Bps_per_host(f.topology);
      lo = std::min(lo, ratio);
      hi = std::max(hi, ratio);
    }
  }
  REQUIRE(hi > 0);
  std::printf("\ncorpus busbw / NIC line rate per host (>= 1 GiB, multi-node): %.2f .. %.2f\n", lo, hi);
  // Points above the observed range, with the reason (docs/network-model.md "Scaling properties"); the test
  // fails if one comes back inside the range or another leaves it.
  const std::map<std::string, std::string> known_above{
      {"2x8xB200-8x400G-efa",
       "EFA v4's efficiency comes from p6-b200's 4-node rows alone (busbw 0.95 of the line rate; beyond 2 hosts "
       "only together-b200-ib's InfiniBand Ring rows, 0.93-0.98, are higher); on 2 hosts the NVLS tree halves the "
       "NIC traffic and the model gives 1.85x the line rate, above "
       "the 1.74x of the 2-host B200 InfiniBand run (lambda-b200-ib); no 2-host p6-b200 table at >= 1 GiB was found"},
  };
  for (const char* spec : {"x8xA100-4x200G", "x8xH100-8x400G", "x8xB200-8x400G-efa", "x8xH100-8x200G-tcpxo", "x8xH100-4x200G-tcpx"}) {
    for (int nodes : {2, 3, 4, 8, 16, 32}) {
      const std::string name = std::to_string(nodes) + spec;
      const Topology t = preset_topology(name);
      const double ratio = busbw_per_nic(t, t.gpus(), kLarge);
      CAPTURE(name, ratio);
      CHECK(ratio >= lo);
      const auto known = known_above.find(name);
      if (known == known_above.end()) {
        CHECK(ratio <= hi);
      } else {
        INFO("listed as above the range: " << known->second);
        CHECK(ratio > hi);
      }
    }
  }
}

TEST_CASE("small messages get slower with more network hops, as measured", "[scaling]") {
  // Measured: every P6-B200 row up to 4 MiB is slower on 4 nodes than on 1.
  for (const auto& f : load_corpus_dir(testing::corpus_dir())) {
    if (f.system != "p6-b200" || f.benchmark != Benchmark::kPytorch) continue;
    for (const auto& r4 : f.rows) {
      if (r4.ranks != 32 || r4.size_bytes > 4194304) continue;
      for (const auto& r1 : f.rows)
        if (r1.ranks == 8 && r1.size_bytes == r4.size_bytes) CHECK(r4.time_s > r1.time_s);
    }
  }
  for (const char* spec : {"x8xA100-4x200G", "x8xH100-8x400G", "x8xB200-8x400G-efa", "x8xH100-8x200G-tcpxo", "x8xH100-4x200G-tcpx", "x8xV100-25GbE"}) {
    double prev = 0;
    for (int nodes : {1, 2, 4, 8, 16, 32}) {
      const Topology t = preset_topology(std::to_string(nodes) + spec);
      const CollectiveModel m(t, t.gpus(), default_params(t, t.gpus()));
      const double now = m.best(Collective::kAllreduce, kSmall).time_s;
      CAPTURE(spec, nodes, now, prev);
      CHECK(now > prev);
      prev = now;
    }
  }
}
