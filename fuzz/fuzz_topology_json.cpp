// Fuzz target: a topology JSON file (`--topology FILE.json`): parsed, validated, and embedded for
// every host-multiple rank count up to the whole cluster, as a prediction does.
#include "core/json_util.hpp"
#include "fuzz/harness.hpp"
#include "network_models/topology.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace lgreco::net;
  const std::string text = lgreco::fuzz::text(data, size);
  lgreco::fuzz::run([&] {
    const Topology t = topology_from_json(lgreco::parse_json_text(text, lgreco::fuzz::kOrigin), lgreco::fuzz::kOrigin);
    validate(t, lgreco::fuzz::kOrigin);
    (void)nic_sharing(t);
    (void)embed(t, 1);
  });
  return 0;
}
