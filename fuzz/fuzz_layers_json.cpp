// Fuzz target: a layers file (`lgreco simulate --layers FILE`: tensor names, shapes, uses per
// sample), read into the step's inputs with DDP's bucket layout.
#include "core/json_util.hpp"
#include "fuzz/harness.hpp"
#include "pipeline/step_inputs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = lgreco::fuzz::text(data, size);
  lgreco::fuzz::run([&] {
    (void)lgreco::pipeline::inputs_from_layers_json(lgreco::parse_json_text(text, lgreco::fuzz::kOrigin), lgreco::fuzz::kOrigin);
  });
  return 0;
}
