// Fuzz target: NCCL variable assignments (`--nccl-env`, a corpus file's nccl_env), then the
// restriction asked about every (algorithm, protocol) pair.
#include "fuzz/harness.hpp"
#include "network_models/nccl_env.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace lgreco::net;
  const std::string text = lgreco::fuzz::text(data, size);
  lgreco::fuzz::run([&] {
    const NcclEnv env = parse_nccl_env(text, lgreco::fuzz::kOrigin);
    for (int a = 0; a < kNumAlgorithms; ++a)
      for (int p = 0; p < kNumProtocols; ++p)
        (void)env.allows(lgreco::Collective::kAllreduce, static_cast<Algorithm>(a), static_cast<Protocol>(p), 1 << 20);
  });
  return 0;
}
