// Fuzz target: a topology JSON file (`--topology FILE.json`): read as the loader does (validated,
// routed, NICs assigned, embedded at every GPU), then embedded at one rank, the single-host path.
#include "core/json_util.hpp"
#include "fuzz/harness.hpp"
#include "network_models/topology.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace lgreco::net;
  const std::string text = lgreco::fuzz::text(data, size);
  lgreco::fuzz::run([&] {
    const Topology t = topology_from_json(lgreco::parse_json_text(text, lgreco::fuzz::kOrigin), lgreco::fuzz::kOrigin);
    (void)embed(t, 1);
  });
  return 0;
}
