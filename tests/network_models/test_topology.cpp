// Topology graph: JSON strictness, validation errors, ring embeddings and NIC sharing.
#include <catch2/catch.hpp>

#include "network_models/presets.hpp"

using namespace lgreco;
using namespace lgreco::net;

namespace {
lgreco::Json two_gpu_doc(double bw) {
  return {{"schema_version", 1}, {"kind", "lgreco-topology"}, {"name", "pair"}, {"gpu", "A100"},
          {"nodes", {{{"id", "g0"}, {"kind", "gpu"}}, {{"id", "g1"}, {"kind", "gpu"}}}},
          {"links", {{{"a", "g0"}, {"b", "g1"}, {"class", "nvlink"}, {"bandwidth_GBps", bw}, {"latency_us", 1}}}}};
}
}  // namespace

TEST_CASE("topology JSON: a valid file loads and round-trips", "[topology]") {
  const Topology t = topology_from_json(two_gpu_doc(50), "pair.json");
  CHECK(t.gpus() == 2);
  const Embedding e = embed(t, 2);
  // Ring of two GPUs over one 50 GB/s full-duplex link: each direction carries one ring edge.
  CHECK(e.ring_Bps == Approx(50e9));
  const Topology back = topology_from_json(topology_to_json(t), "again");
  CHECK(back.links.size() == 1);
}

TEST_CASE("topology JSON: bad input names file, field and value", "[topology]") {
  auto doc = two_gpu_doc(50);
  doc["links"][0]["bandwidth_GBps"] = 0;
  CHECK_THROWS_WITH(topology_from_json(doc, "bad.json"), Catch::Contains("bad.json") && Catch::Contains("bandwidth_GBps"));
  doc = two_gpu_doc(-3);
  CHECK_THROWS_WITH(topology_from_json(doc, "bad.json"), Catch::Contains("-3"));
  doc = two_gpu_doc(50);
  doc["links"][0]["colour"] = "red";
  CHECK_THROWS_WITH(topology_from_json(doc, "bad.json"), Catch::Contains("colour"));
  doc = two_gpu_doc(50);
  doc["nodes"].push_back({{"id", "g2"}, {"kind", "gpu"}});
  CHECK_THROWS_WITH(topology_from_json(doc, "bad.json"), Catch::Contains("disconnected") && Catch::Contains("g2"));
  doc = two_gpu_doc(50);
  doc["links"][0]["b"] = "nowhere";
  CHECK_THROWS_WITH(topology_from_json(doc, "bad.json"), Catch::Contains("nowhere"));
}

TEST_CASE("presets: ring bottlenecks follow from the links", "[topology]") {
  // NVSwitch host: every GPU has one 12 × 20 GB/s link to the switch, one ring edge per direction.
  CHECK(embed(preset_topology("dgx-a100"), 8).ring_Bps == Approx(240e9));
  CHECK(embed(preset_topology("hgx-h200"), 8).ring_Bps == Approx(18 * 20.6e9));
  // No P2P: every edge goes GPU → switch → host bridge → switch → GPU; a switch uplink carries the
  // outgoing edges of its two GPUs, so 24 GB/s / 2.
  const Embedding pcie = embed(preset_topology("pcie-8x-rtx3090"), 8);
  CHECK(pcie.ring_Bps == Approx(12e9));
  CHECK(pcie.intra_class == LinkClass::kPcie);
  // Cluster: 4 NICs of 100 Gb/s per host; the node egress is the bottleneck (4 × 12.5 GB/s).
  const Embedding c = embed(preset_topology("4x8xA100-4x100G"), 32);
  CHECK(c.hosts == 4);
  CHECK(c.ring_net_Bps == Approx(50e9));
  CHECK(c.ring_Bps == Approx(50e9));
  // Rails: 8 GPUs share 4 NICs, two per NIC → 6.25 GB/s per GPU.
  CHECK(c.rail_Bps == Approx(6.25e9));
  CHECK_THROWS_WITH(embed(preset_topology("4x8xA100-4x100G"), 12), Catch::Contains("multiple"));
}

TEST_CASE("NIC sharing: GPUs behind one PCIe switch share its NIC", "[topology]") {
  const auto shares = nic_sharing(preset_topology("4x8xA100-4x100G"));
  REQUIRE(shares.size() == 4);
  for (const auto& s : shares) {
    CAPTURE(s.nic);
    CHECK(s.gpus.size() == 2);
  }
  CHECK_THROWS_WITH(preset_topology("4x8xQ100-4x100G"), Catch::Contains("Q100"));
  CHECK_THROWS_WITH(preset_topology("nonsense"), Catch::Contains("dgx-a100"));
  CHECK(preset_topology("8x8xV100-25GbE").transport == Transport::kSocket);
}

TEST_CASE("plugin transports: EFA generation, TCPXO, GPUDirect; cluster suffix, JSON round trip and bad values", "[topology]") {
  const Topology efa = preset_topology("4x8xB200-8x400G-efa");
  CHECK(efa.transport == Transport::kEfa);
  CHECK(efa.efa_generation == 4);  // p6-b200
  CHECK(efa.gpudirect);
  CHECK(preset_topology("2x8xA100-4x100G-efa").efa_generation == 1);  // p4d
  CHECK(preset_topology("2x8xH100-32x100G-efa").efa_generation == 2);  // p5
  CHECK(preset_topology("2x8xH200-16x200G-efa3").efa_generation == 3);  // p5en, named
  const Topology p3dn = preset_topology("8x8xV100-1x100G-efa-nogdr");
  CHECK(p3dn.efa_generation == 1);
  CHECK_FALSE(p3dn.gpudirect);
  CHECK(preset_topology("2x8xH100-8x200G-tcpxo").transport == Transport::kTcpxo);
  CHECK(preset_topology("2x8xH100-8x200G-tcpxo").efa_generation == 0);
  CHECK(preset_topology("2x8xH100-4x200G-tcpx").transport == Transport::kTcpx);  // A3 High: -tcpx is not read as -tcpxo
  CHECK(cluster_spec_name(*parse_cluster_spec("2x8xH100-4x200G-tcpx")) == "2x8xH100-4x200G-tcpx");
  CHECK_FALSE(parse_cluster_spec("2x8xH100-4x200G-tcpxoo"));
  CHECK(preset_topology("2x8xH100-8x200G").transport == Transport::kRdma);
  CHECK_FALSE(preset_topology("2x8xH100-8x200G-nogdr").gpudirect);
  CHECK_THROWS_WITH(preset_topology("2x8xH100-1x25GbE-efa"), Catch::Contains("sockets"));
  CHECK_THROWS_WITH(preset_topology("2x8xH100-1x25GbE-nogdr"), Catch::Contains("-nogdr") && Catch::Contains("GbE"));
  CHECK_THROWS_WITH(preset_topology("2x2xL40S-1x100G-efa"), Catch::Contains("L40S") && Catch::Contains("-efa1"));
  CHECK(cluster_spec_name(*parse_cluster_spec("8x8xV100-1x100G-efa-nogdr")) == "8x8xV100-1x100G-efa-nogdr");
  CHECK_FALSE(parse_cluster_spec("2x8xH100-8x200G-efa5"));
  // Built from its fields, a cluster keeps its rate exactly; its name carries six significant digits and reads back.
  ClusterSpec third = *parse_cluster_spec("2x8xA100-3x25G");
  third.nic_gbps = 10.0 / 3;
  const Topology thirds = cluster_topology(third);
  CHECK(thirds.name == "2x8xA100-3x3.33333G");
  for (const auto& l : thirds.links)
    if (l.cls == LinkClass::kNet) CHECK(l.bandwidth_Bps == 10.0 / 3 * 1e9 / 8);
  CHECK(parse_cluster_spec(thirds.name)->nic_gbps == Approx(10.0 / 3).epsilon(1e-6));
  third.nic_gbps = 1.25e-4;
  CHECK(cluster_spec_name(third) == "2x8xA100-3x0.000125G");
  CHECK(preset_topology(cluster_spec_name(third)).hosts() == 2);
  third.nic_gbps = kMinNicGbps / 2;
  CHECK_THROWS_WITH(cluster_topology(third), Catch::Contains("5e-07 Gb/s per NIC") && Catch::Contains("1e-06"));
  third.nic_gbps = kMaxNicGbps * 2;
  CHECK_THROWS_WITH(cluster_topology(third), Catch::Contains("2e+06 Gb/s per NIC"));
  CHECK_THROWS_WITH(preset_topology("2x8xA100-1x0G"), Catch::Contains("0 Gb/s per NIC"));
  for (const Topology& t : {efa, p3dn, preset_topology("2x8xH100-8x200G-tcpxo"), preset_topology("2x8xH100-4x200G-tcpx")}) {
    const Topology back = topology_from_json(topology_to_json(t), "again");
    CHECK(back.transport == t.transport);
    CHECK(back.efa_generation == t.efa_generation);
    CHECK(back.gpudirect == t.gpudirect);
  }
  auto doc = two_gpu_doc(50);
  doc["transport"] = "carrier-pigeon";
  CHECK_THROWS_WITH(topology_from_json(doc, "bad.json"), Catch::Contains("carrier-pigeon") && Catch::Contains("efa"));
  doc["transport"] = "plugin";  // the transport before EFA and TCPXO were told apart
  CHECK_THROWS_WITH(topology_from_json(doc, "bad.json"), Catch::Contains("plugin") && Catch::Contains("tcpxo") && Catch::Contains("\"tcpx\""));
  doc["transport"] = "efa";
  doc["efa_generation"] = 7;
  CHECK_THROWS_WITH(topology_from_json(doc, "bad.json"), Catch::Contains("efa_generation") && Catch::Contains("7"));
  doc["transport"] = "rdma";
  CHECK_THROWS_WITH(topology_from_json(doc, "bad.json"), Catch::Contains("efa_generation") && Catch::Contains("efa"));
  doc.erase("efa_generation");
  doc["transport"] = "socket";
  doc["gpudirect"] = false;
  CHECK_THROWS_WITH(topology_from_json(doc, "bad.json"), Catch::Contains("gpudirect"));
  // GeForce GPUs have no PCIe peer-to-peer: their cluster hosts stage GPU-to-GPU traffic through a host bridge.
  CHECK_FALSE(preset_topology("1x4xRTX4090-1x100G").p2p);
  CHECK(preset_topology("2x2xL40S-1x400G").p2p);
  CHECK(embed(preset_topology("1x4xRTX4090-1x100G"), 4).intra_class == LinkClass::kPcie);
}
