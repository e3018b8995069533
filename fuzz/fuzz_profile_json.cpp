// Fuzz target: a device profile (kernels/profiles/*.json, what `make gpu-check` measures and
// `--profile FILE` reads): per-method kernel timings of one GPU.
#include "core/json_util.hpp"
#include "fuzz/harness.hpp"
#include "kernels/method_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = lgreco::fuzz::text(data, size);
  lgreco::fuzz::run([&] {
    (void)lgreco::kernels::profile_from_json(lgreco::parse_json_text(text, lgreco::fuzz::kOrigin), lgreco::fuzz::kOrigin);
  });
  return 0;
}
