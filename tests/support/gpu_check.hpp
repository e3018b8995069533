#pragma once
// Minimal check harness for GPU test executables (no third-party framework, so they build on the
// GPU machine with only the CUDA toolkit). A test binary:
//   int main() { return lgreco::testing::run_gpu_tests(device_count(), {{"name", fn}, ...}); }
// Exit codes: 0 pass, 1 failure, 77 skipped (no device and LGRECO_REQUIRE_GPU unset).
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace lgreco::testing {

struct GpuCase {
  std::string name;
  std::function<void()> fn;
};

/// Thrown by LGRECO_EXPECT; carries the message with the case parameters.
struct CheckFailure : std::exception {
  std::string msg;
  explicit CheckFailure(std::string m) : msg(std::move(m)) {}
  const char* what() const noexcept override { return msg.c_str(); }
};

inline int run_gpu_tests(int device_count, const std::vector<GpuCase>& cases) {
  const char* req = std::getenv("LGRECO_REQUIRE_GPU");
  const bool require = req && std::string(req) == "1";
  if (device_count <= 0) {
    if (require) {
      std::fprintf(stderr, "FAIL: LGRECO_REQUIRE_GPU=1 but no CUDA device is available\n");
      return 1;
    }
    std::printf("SKIP: no CUDA device (set LGRECO_REQUIRE_GPU=1 to make this a failure)\n");
    return 77;
  }
  int failed = 0;
  for (const auto& c : cases) {
    try {
      c.fn();
      std::printf("ok    %s\n", c.name.c_str());
    } catch (const std::exception& e) {
      ++failed;
      std::printf("FAIL  %s: %s\n", c.name.c_str(), e.what());
    }
  }
  std::printf("%d passed, %d failed\n", static_cast<int>(cases.size()) - failed, failed);
  return failed ? 1 : 0;
}

}  // namespace lgreco::testing

/// Fails the current case with a message built from stream arguments: LGRECO_EXPECT(a == b, "n=" << n).
#define LGRECO_EXPECT(cond, msg)                                                                  \
  do {                                                                                            \
    if (!(cond)) {                                                                                \
      std::ostringstream lgreco_os_;                                                              \
      lgreco_os_ << __FILE__ << ":" << __LINE__ << ": " << #cond << " failed: " << msg;           \
      throw ::lgreco::testing::CheckFailure(lgreco_os_.str());                                    \
    }                                                                                             \
  } while (0)
