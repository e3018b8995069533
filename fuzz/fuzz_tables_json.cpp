// Fuzz target: an error/bytes tables file in its JSON form (`lgreco plan --tables FILE`).
#include "fuzz/harness.hpp"
#include "planner/tables.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = lgreco::fuzz::text(data, size);
  lgreco::fuzz::run([&] { (void)lgreco::planner::tables_from_text(text, lgreco::fuzz::kOrigin); });
  return 0;
}
