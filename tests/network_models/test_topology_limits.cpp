// Topology limits: what lgreco refuses before any expensive question, and the host count's
// arithmetic at the edge of int.
#include <catch2/catch.hpp>

#include <climits>
#include <thread>

#include "core/cancel.hpp"
#include "core/error.hpp"
#include "network_models/presets.hpp"

using namespace lgreco::net;

namespace {
// One GPU on each of `hosts` hosts (host indices 0..hosts-1), each with a NIC on one switch.
Topology star(int hosts) {
  Topology t;
  t.name = "star";
  t.gpu = gpu_spec("A100");
  t.nodes.push_back({"fabric", NodeKind::kNetSwitch, -1});
  for (int h = 0; h < hosts; ++h) {
    const int g = static_cast<int>(t.nodes.size());
    t.nodes.push_back({"h" + std::to_string(h) + ".gpu", NodeKind::kGpu, h});
    t.nodes.push_back({"h" + std::to_string(h) + ".nic", NodeKind::kNic, h});
    t.links.push_back({g, g + 1, LinkClass::kPcie, 24e9, 0.5e-6});
    t.links.push_back({g + 1, 0, LinkClass::kNet, 12.5e9, 1e-6});
  }
  return t;
}
}  // namespace

TEST_CASE("hosts() saturates instead of overflowing at host INT_MAX", "[topology]") {
  Topology t = star(1);
  t.nodes[1].host = INT_MAX;
  CHECK(t.hosts() == INT_MAX);
  CHECK_THROWS_WITH(validate(t, "t.json"), Catch::Contains("has host 2147483647") && Catch::Contains("1024 hosts"));
}

TEST_CASE("the host limit is inclusive of exactly kMaxTopologyHosts hosts", "[topology]") {
  CHECK_NOTHROW(validate(star(kMaxTopologyHosts), "max"));
  CHECK_THROWS_WITH(validate(star(kMaxTopologyHosts + 1), "over"),
                    Catch::Contains(std::to_string(kMaxTopologyHosts + 1) + " hosts"));
}

TEST_CASE("presets beyond the limits are refused before the graph is searched", "[topology]") {
  CHECK_THROWS_WITH(preset_topology("2000x8xA100-1x25G"), Catch::Contains("2000 hosts"));
  CHECK_THROWS_WITH(preset_topology("100000x8xA100-1x25G"), Catch::Contains("nodes"));
}

TEST_CASE("a ring embedding stops at a cancellation request", "[topology]") {
  const Topology t = star(64);
  lgreco::request_cancel();
  CHECK_THROWS_AS(embed(t, 64), lgreco::Cancelled);
  lgreco::reset_cancel();
  // The same embedding without the request: every ring edge crosses the 12.5 GB/s NIC links.
  CHECK(embed(t, 64).ring_Bps == Approx(12.5e9));
}
