// Device cost profiles: the shipped ones (estimated, and the H200 measured) load, are consistent, and
// time_s follows the model.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/error.hpp"
#include "kernels/method_json.hpp"

using namespace lgreco;
using namespace lgreco::kernels;

TEST_CASE("shipped device profiles load and evaluate the stated model", "[profile]") {
  const char* src = std::getenv("LGRECO_SOURCE_DIR");
  REQUIRE(src != nullptr);
  for (const char* dev : {"a100", "h100", "h200", "b200"}) {
    const auto path = std::filesystem::path(src) / "kernels" / "profiles" / (std::string(dev) + ".json");
    const DeviceProfile p = load_profile(path.string());
    CAPTURE(dev);
    CHECK(p.device == dev);
    // The H200 profile is measured (scripts/gpu-check.sh); the others are estimates from HBM peaks.
    CHECK(p.estimate == (std::string(dev) != "h200"));
    for (const char* m : {"none", "fp16", "bf16", "powersgd", "topk", "randomk", "qsgd", "maxmin", "sign", "terngrad", "nuqsgd"}) {
      CAPTURE(m);
      REQUIRE(p.methods.count(m) == 1);
      const MethodCost& c = p.methods.at(m);
      CHECK(c.effective_bandwidth_Bps <= p.peak_bandwidth_Bps);
      // time = overhead + 4n / throughput, throughput = 4·bw / bytes_per_element
      const std::uint64_t n = 1u << 24;
      const double expect = c.overhead_s + static_cast<double>(n) * c.bytes_per_element / c.effective_bandwidth_Bps;
      CHECK(p.time_s(m, n) == Approx(expect).epsilon(1e-12));
      CHECK(p.time_s(m, 0) == c.overhead_s);
    }
    CHECK_THROWS_AS(p.time_s("nosuch", 1), ConfigError);
  }
}
