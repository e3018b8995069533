// Properties of the collective model.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "network_models/collectives.hpp"
#include "network_models/presets.hpp"

using namespace lgreco;
using namespace lgreco::net;

namespace {
Topology uniform_ring(int n, double bw_GBps) {
  Topology t;
  t.name = "ring" + std::to_string(n);
  t.gpu = gpu_spec("A100");
  for (int i = 0; i < n; ++i) t.nodes.push_back({"g" + std::to_string(i), NodeKind::kGpu, 0});
  t.nodes.push_back({"sw", NodeKind::kNvSwitch, 0});
  for (int i = 0; i < n; ++i) t.links.push_back({i, n, LinkClass::kNvlink, bw_GBps * 1e9, 0});
  validate(t, "test");
  return t;
}
}  // namespace

TEST_CASE("one rank and zero bytes cost nothing", "[collectives]") {
  const Topology t = preset_topology("dgx-a100");
  const CollectiveModel one(t, 1, default_params(t, 1));
  CHECK(one.best(Collective::kAllreduce, 1e9).time_s == 0);
  const CollectiveModel eight(t, 8, default_params(t, 8));
  CHECK(eight.best(Collective::kAllgather, 0).time_s == 0);
}

TEST_CASE("ring Simple time matches the closed form on a uniform ring", "[collectives]") {
  for (int n : {2, 3, 8}) {
    const Topology t = uniform_ring(n, 100);
    const ModelParams p = nccl_params(t, n);
    const CollectiveModel m(t, n, p);
    const double s = 1e8;
    // t = base + 2(n−1)·hop + S / (B · n / (2(n−1))), B = 100 GB/s, NVLink Simple constants.
    const double expect = 8.4e-6 + 2 * (n - 1) * 3.4e-6 + s / (100e9 * n / (2.0 * (n - 1)));
    CAPTURE(n);
    CHECK(m.evaluate(Collective::kAllreduce, Algorithm::kRing, Protocol::kSimple, s)->time_s == Approx(expect).epsilon(1e-12));
  }
}

TEST_CASE("time is monotone in size and more bandwidth never slows a collective", "[collectives]") {
  std::mt19937_64 rng(7);
  for (const char* name : {"dgx-a100", "hgx-h200", "pcie-8x-rtx3090", "4x8xA100-4x100G", "8x8xV100-25GbE", "4x8xB200-8x400G-efa",
                           "2x8xH20-8x400G", "1x4xRTX4090-1x100G"}) {
    const Topology t = preset_topology(name);
    const int n = t.gpus();
    const CollectiveModel m(t, n, default_params(t, n));
    for (int ci = 0; ci < 4; ++ci) {
      const auto c = static_cast<Collective>(ci);
      double prev = 0;
      for (double s = 1; s < 4e10; s *= 1.7) {
        const double now = m.best(c, s).time_s;
        CAPTURE(name, ci, s);
        CHECK(now >= prev);
        prev = now;
      }
    }
    // Scale every link's bandwidth by a random factor ≥ 1.
    Topology faster = t;
    for (auto& l : faster.links) l.bandwidth_Bps *= 1.0 + std::uniform_real_distribution<double>(0, 3)(rng);
    const CollectiveModel f(faster, n, default_params(faster, n));
    for (double s : {1e3, 1e6, 1e8, 1e10}) {
      CAPTURE(name, s);
      CHECK(f.best(Collective::kAllreduce, s).time_s <= m.best(Collective::kAllreduce, s).time_s * (1 + 1e-12));
    }
  }
}

TEST_CASE("allgather with unequal payloads is padded to the largest", "[collectives]") {
  const Topology t = preset_topology("dgx-a100");
  const CollectiveModel m(t, 8, default_params(t, 8));
  std::vector<double> payload{10, 2000, 5, 0, 7, 1000, 3, 9};
  CHECK(m.allgather_padded(payload).time_s == m.best(Collective::kAllgather, 8 * 2000).time_s);
  CHECK_THROWS(m.allgather_padded({1, 2}));
}

TEST_CASE("NetworkCost: allgather of per-rank payloads is n times the per-rank size", "[collectives]") {
  const Topology t = preset_topology("hgx-h100");
  NetworkCost cost(CollectiveModel(t, 8, default_params(t, 8)));
  CHECK(cost.time_s(lgreco::Collective::kAllgather, 1e6) == cost.model().best(Collective::kAllgather, 8e6).time_s);
  CHECK(cost.time_s(lgreco::Collective::kAllreduce, 1e6) == cost.model().best(Collective::kAllreduce, 1e6).time_s);
  CHECK(cost.time_s(lgreco::Collective::kReduceScatter, 1e6) == cost.model().best(Collective::kReduceScatter, 1e6).time_s);
}

TEST_CASE("RingCost: the closed-form ring of its header", "[collectives]") {
  // α = 5 µs, β = 1 GB/s, p = 4, 1 MB per rank: allreduce 2·3·α + 2·3/4·S/β, allgather 3·α + 3·S/β.
  const lgreco::net::RingCost ring(5e-6, 1e9, 4);
  CHECK(ring.time_s(lgreco::Collective::kAllreduce, 1e6) == Approx(6 * 5e-6 + 1.5 * 1e-3).epsilon(1e-12));
  CHECK(ring.time_s(lgreco::Collective::kAllgather, 1e6) == Approx(3 * 5e-6 + 3 * 1e-3).epsilon(1e-12));
  CHECK(ring.time_s(lgreco::Collective::kReduceScatter, 1e6) == Approx(3 * 5e-6 + 0.75 * 1e-3).epsilon(1e-12));
  CHECK(ring.time_s(lgreco::Collective::kAllreduce, 0) == 0);
  CHECK(lgreco::net::RingCost(5e-6, 1e9, 1).time_s(lgreco::Collective::kAllreduce, 1e6) == 0);
  CHECK_THROWS_AS(lgreco::net::RingCost(5e-6, 0, 4), lgreco::ConfigError);
  CHECK_THROWS_AS(lgreco::net::RingCost(-1, 1e9, 4), lgreco::ConfigError);
}

TEST_CASE("net_fill_time_s: pipelined protocols across hosts add T_net to their transfer, uncapped", "[collectives]") {
  // Across hosts LL128 and Simple gain T_net on top of S/algBw (+ the fill, capped by S/algBw); LL and a
  // collective on one host do not.
  const Topology t = preset_topology("2x8xH100-8x400G");
  ModelParams base = default_params(t, 16);
  base.net_fill_time_s = 0;
  ModelParams with = base;
  with.net_fill_time_s = 300e-6;
  const CollectiveModel m0(t, 16, base), m1(t, 16, with);
  for (double s : {4096.0, 1048576.0, 67108864.0, 4294967296.0}) {
    for (auto a : {Algorithm::kRing, Algorithm::kTree}) {
      CAPTURE(s, static_cast<int>(a));
      const auto simple0 = m0.evaluate(Collective::kAllreduce, a, Protocol::kSimple, s);
      const auto simple1 = m1.evaluate(Collective::kAllreduce, a, Protocol::kSimple, s);
      REQUIRE(simple0);
      REQUIRE(simple1);
      // t = max(L, transfer): T_net shows in full once the transfer is above the latency floor, else in part.
      CHECK(simple1->time_s >= simple0->time_s);
      CHECK(simple1->time_s <= simple0->time_s + 300e-6 * (1 + 1e-9));
      const auto ll0 = m0.evaluate(Collective::kAllreduce, a, Protocol::kLL, s);
      const auto ll1 = m1.evaluate(Collective::kAllreduce, a, Protocol::kLL, s);
      REQUIRE(ll0);
      CHECK(ll1->time_s == ll0->time_s);
    }
  }
  // At 4 GiB the transfer dominates: exactly T_net more.
  CHECK(m1.evaluate(Collective::kAllreduce, Algorithm::kRing, Protocol::kSimple, 4294967296.0)->time_s ==
        Approx(m0.evaluate(Collective::kAllreduce, Algorithm::kRing, Protocol::kSimple, 4294967296.0)->time_s + 300e-6).epsilon(1e-12));
  // One host (8 ranks): nothing crosses hosts, nothing added.
  ModelParams one0 = default_params(t, 8), one1 = one0;
  one0.net_fill_time_s = 0, one1.net_fill_time_s = 300e-6;
  CHECK(CollectiveModel(t, 8, one1).best(Collective::kAllreduce, 67108864.0).time_s ==
        CollectiveModel(t, 8, one0).best(Collective::kAllreduce, 67108864.0).time_s);
}
