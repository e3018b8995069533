// Streaming memory check (ctest label "slow"): writes a float16 trace of 16 layers × 2 Mi elements
// × 2 steps (256 MiB as float32, 128 MiB stored) and reads every value back, checking each one.
// Passes when the peak resident set stays under the limit, far below the data size: the writer
// and the reader hold one layer-step of caller buffer plus one chunk, never the file.
//
// The limit is 64 MiB (a quarter of the data volume), or `--limit-mib N`: CTest passes
// LGRECO_STREAM_CHECK_LIMIT_MIB (tests/traces/CMakeLists.txt), which is larger in a build with
// AddressSanitizer, whose shadow memory, redzones and quarantine of freed blocks count in the
// resident set too. ASan keeps up to 256 MiB of freed blocks in quarantine by default, as much as
// the data volume, which would hide any leak of it; this test alone lowers that to 16 MiB (below),
// so that under ASan it still fails when memory grows with the file.
#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <vector>

#include "traces/half.hpp"
#include "traces/reader.hpp"
#include "traces/writer.hpp"

using namespace lgreco;
using namespace lgreco::traces;

#if defined(__SANITIZE_ADDRESS__)
#define LGRECO_STREAM_CHECK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LGRECO_STREAM_CHECK_ASAN 1
#endif
#endif
#ifdef LGRECO_STREAM_CHECK_ASAN
// ASan reads these defaults before ASAN_OPTIONS, which overrides them key by key.
extern "C" __attribute__((used, visibility("default"))) const char* __asan_default_options() { return "quarantine_size_mb=16"; }
#endif

namespace {
constexpr std::int64_t kLayers = 16, kNumel = 2 << 20, kSteps = 2;
constexpr long kDefaultLimitMib = 64;  // a quarter of the data volume

// Cheap deterministic values with a realistic spread of exponents (xorshift, scaled).
float value(std::uint64_t i) {
  std::uint64_t x = i * 0x9E3779B97F4A7C15ull + 1;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<float>(static_cast<std::int64_t>(x >> 40) - (1ll << 23)) * 1e-10f;
}

long peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss * 1024l;
}
}  // namespace

int main(int argc, char** argv) {
  long limit_mib = kDefaultLimitMib;
  if (argc == 3 && std::strcmp(argv[1], "--limit-mib") == 0) {
    const char* end = argv[2] + std::strlen(argv[2]);
    const auto [ptr, ec] = std::from_chars(argv[2], end, limit_mib);
    if (ec != std::errc() || ptr != end || limit_mib < 1 || limit_mib > (1l << 20)) {
      std::fprintf(stderr, "stream check: --limit-mib: expected an integer in [1, 1048576], got '%s'\n", argv[2]);
      return 2;
    }
  } else if (argc != 1) {
    std::fprintf(stderr, "usage: %s [--limit-mib N]\n", argv[0]);
    return 2;
  }
  const long limit_bytes = limit_mib << 20;
  const auto file = std::filesystem::temp_directory_path() / ("lgreco-stream-check-" + std::to_string(::getpid()) + ".h5");
  try {
    std::vector<TraceLayer> layers;
    for (std::int64_t i = 0; i < kLayers; ++i) {
      layers.push_back({"layer" + std::to_string(i), {kNumel}, kNumel, LayerKind::kWeight, 0, i, StorageDtype::kFloat16});
    }
    std::vector<float> buf(static_cast<std::size_t>(kNumel));
    {
      TraceWriter w(file, {"stream-check", 1, StorageDtype::kFloat16, "stream_memory_check", "", "", {}}, layers, Overwrite::kRefuse);
      for (std::int64_t t = 0; t < kSteps; ++t) w.add_step(t);
      for (std::int64_t i = 0; i < kLayers; ++i) {
        for (std::int64_t t = 0; t < kSteps; ++t) {
          for (std::int64_t k = 0; k < kNumel; ++k) buf[k] = value(static_cast<std::uint64_t>((i * kSteps + t) * kNumel + k));
          w.write(static_cast<std::size_t>(i), static_cast<std::size_t>(t), buf);
        }
      }
      w.finish();
    }
    const TraceReader r(file);
    std::int64_t mismatches = 0;
    for (std::int64_t i = 0; i < kLayers; ++i) {
      for (std::int64_t t = 0; t < kSteps; ++t) {
        r.read(static_cast<std::size_t>(i), static_cast<std::size_t>(t), buf);
        for (std::int64_t k = 0; k < kNumel; ++k) {
          const float expect = half_to_float(float_to_half(value(static_cast<std::uint64_t>((i * kSteps + t) * kNumel + k))));
          mismatches += float_bits(buf[k]) != float_bits(expect);
        }
      }
    }
    const double data_mib = static_cast<double>(kLayers * kSteps * kNumel * 4) / (1 << 20);
    const long peak = peak_rss_bytes();
    std::printf("stream check: %.0f MiB (fp32) written and read, file %.0f MiB, peak RSS %.1f MiB (limit %.0f MiB), %lld mismatches\n",
                data_mib, static_cast<double>(std::filesystem::file_size(file)) / (1 << 20),
                static_cast<double>(peak) / (1 << 20), static_cast<double>(limit_mib),
                static_cast<long long>(mismatches));
    std::filesystem::remove(file);
    return (mismatches == 0 && peak < limit_bytes) ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stream check failed: %s\n", e.what());
    std::error_code ec;
    std::filesystem::remove(file, ec);
    return 1;
  }
}
