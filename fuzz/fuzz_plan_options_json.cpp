// Fuzz target: planner options in their JSON form (a schedule's "config", the online loop's options).
#include "core/json_util.hpp"
#include "fuzz/harness.hpp"
#include "planner/plan_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = lgreco::fuzz::text(data, size);
  lgreco::fuzz::run([&] {
    lgreco::planner::NetworkSpec network;
    (void)lgreco::planner::plan_options_from_json(lgreco::parse_json_text(text, lgreco::fuzz::kOrigin),
                                                  lgreco::fuzz::kOrigin, &network);
  });
  return 0;
}
