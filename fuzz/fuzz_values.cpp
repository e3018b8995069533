// Fuzz target: the command line's value strings. The first byte picks the reader, the rest is the
// value: a byte size ("64MiB"), a duration ("5ms"), a compression method ("powersgd:rank=4"), a
// topology name (preset or cluster spec "4x8xH100-8x400G-efa", built and embedded), a collective,
// a bandwidth ("100Gbps").
// These readers do not know the flag they serve (the command adds it), so rejections are held to one
// line only.
#include "core/collective.hpp"
#include "core/units.hpp"
#include "fuzz/harness.hpp"
#include "network_models/presets.hpp"
#include "network_models/topology.hpp"
#include "sim/step_builder.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string value = lgreco::fuzz::text(data + 1, size - 1);
  lgreco::fuzz::run(
      [&] {
        switch (data[0] % 6) {
          case 0: (void)lgreco::units::parse_bytes(value); break;
          case 1: (void)lgreco::units::parse_seconds(value); break;
          case 2: (void)lgreco::sim::parse_method(value); break;
          case 3: {
            const lgreco::net::Topology t = lgreco::net::preset_topology(value);
            (void)lgreco::net::embed(t, 1);
            break;
          }
          case 4: (void)lgreco::parse_collective(value); break;
          default: (void)lgreco::units::parse_bandwidth_Bps(value); break;
        }
      },
      "");
  return 0;
}
