// DDP bucket assignment: hand-worked small case and properties on every preset.
#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "traces/buckets.hpp"
#include "traces/presets.hpp"

using namespace lgreco::traces;

TEST_CASE("small case worked by hand", "[buckets]") {
  // Tensors (parameters() order) of 3, 5, 2, 4, 6 bytes; first bucket limit 5, later limit 8.
  // Backward order visits 6 (≥ 5: bucket 0 closes), then 4 (4), 2 (6), 5 (11 ≥ 8: bucket 1 closes),
  // then 3 (bucket 2, left open).
  const auto a = assign_ddp_buckets({3, 5, 2, 4, 6}, 8, 5);
  CHECK(a.bucket == std::vector<int>{2, 1, 1, 1, 0});
  CHECK(a.backward_order == std::vector<int>{4, 3, 2, 1, 0});
  CHECK(a.bucket_bytes == std::vector<std::uint64_t>{6, 11, 3});
  CHECK(assign_ddp_buckets({}).bucket_bytes.empty());
  CHECK_THROWS_AS(assign_ddp_buckets({1}, 0, 1), lgreco::ConfigError);
}

TEST_CASE("bucket properties hold on every preset", "[buckets]") {
  for (const auto& m : model_presets()) {
    CAPTURE(m.name);
    std::vector<std::uint64_t> bytes;
    for (const auto& t : m.tensors) bytes.push_back(4ull * static_cast<std::uint64_t>(numel_of(t.shape)));
    const auto a = assign_ddp_buckets(bytes);
    const std::size_t n = bytes.size();
    REQUIRE(a.bucket.size() == n);
    CHECK(a.bucket[n - 1] == 0);  // the last parameter's gradient is ready first
    std::vector<std::uint64_t> sums(a.bucket_bytes.size(), 0);
    std::vector<std::uint64_t> last(a.bucket_bytes.size(), 0);
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t i = n - 1 - k;
      CHECK(a.backward_order[i] == static_cast<int>(k));
      if (k > 0) {
        const int prev = a.bucket[i + 1];
        CHECK((a.bucket[i] == prev || a.bucket[i] == prev + 1));  // contiguous in backward order
      }
      sums[a.bucket[i]] += bytes[i];
      last[a.bucket[i]] = bytes[i];
    }
    CHECK(sums == a.bucket_bytes);
    for (std::size_t b = 0; b + 1 < sums.size(); ++b) {
      const std::uint64_t limit = b == 0 ? kDdpFirstBucketBytes : kDdpBucketCapBytes;
      CAPTURE(b);
      CHECK(sums[b] >= limit);                // closed because it reached its limit
      CHECK(sums[b] - last[b] < limit);       // and not earlier
    }
  }
}
