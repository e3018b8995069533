// Replays stored inputs through a fuzz target without libFuzzer: `fuzz_X_replay PATH...` runs
// LLVMFuzzerTestOneInput once per file (directories: every regular file in them, sorted, recursively).
// The CTest test fuzz_replay runs every target over its seeds (fuzz/corpus/<target>/, the reproducers
// of the defects found so far among them) in every build, so a regression fails `make test` even
// where clang's libFuzzer is not used. LGRECO_FUZZ_VERBOSE=1 prints each rejection's message.
// Exit 0 after the last input; 1 when no input was found.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const fs::path p = argv[i];
    if (fs::is_directory(p)) {
      for (const auto& e : fs::recursive_directory_iterator(p))
        if (e.is_regular_file()) inputs.push_back(e.path());
    } else if (fs::is_regular_file(p)) {
      inputs.push_back(p);
    } else {
      std::fprintf(stderr, "%s: not a file or directory\n", argv[i]);
      return 1;
    }
  }
  std::sort(inputs.begin(), inputs.end());
  for (const fs::path& p : inputs) {
    std::ifstream in(p, std::ios::binary);
    const std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("replayed %zu inputs: %zu accepted, %zu rejected with a one-line error\n", inputs.size(), lgreco::fuzz::accepted,
              lgreco::fuzz::rejected);
  return inputs.empty() ? 1 : 0;
}
