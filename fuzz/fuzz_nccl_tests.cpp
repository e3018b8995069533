// Fuzz target: nccl-tests output as `lgreco net validate FILE` reads it (table or TSV form).
#include "fuzz/harness.hpp"
#include "network_models/nccl_tests.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = lgreco::fuzz::text(data, size);
  lgreco::fuzz::run([&] { (void)lgreco::net::parse_nccl_tests(text, lgreco::fuzz::kOrigin); });
  return 0;
}
