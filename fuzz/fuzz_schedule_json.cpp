// Fuzz target: a compression schedule (`lgreco schedule check`, what the DDP hook applies).
#include "core/json_util.hpp"
#include "fuzz/harness.hpp"
#include "planner/schedule.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = lgreco::fuzz::text(data, size);
  lgreco::fuzz::run([&] {
    (void)lgreco::planner::schedule_from_json(lgreco::parse_json_text(text, lgreco::fuzz::kOrigin), lgreco::fuzz::kOrigin);
  });
  return 0;
}
