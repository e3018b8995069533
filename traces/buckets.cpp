#include "traces/buckets.hpp"

#include "core/error.hpp"

namespace lgreco::traces {

BucketAssignment assign_ddp_buckets(const std::vector<std::uint64_t>& tensor_bytes, std::uint64_t bucket_cap_bytes,
                                    std::uint64_t first_bucket_bytes) {
  if (bucket_cap_bytes == 0 || first_bucket_bytes == 0) {
    throw ConfigError("DDP bucket caps must be positive (got cap " + std::to_string(bucket_cap_bytes) +
                      " bytes, first bucket " + std::to_string(first_bucket_bytes) + " bytes)");
  }
  const std::size_t n = tensor_bytes.size();
  BucketAssignment a;
  a.bucket.assign(n, 0);
  a.backward_order.assign(n, 0);
  int current = 0;
  std::uint64_t size = 0;
  bool open = false;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = n - 1 - k;  // backward order: last parameter first
    a.backward_order[i] = static_cast<int>(k);
    a.bucket[i] = current;
    size += tensor_bytes[i];
    open = true;
    const std::uint64_t limit = current == 0 ? first_bucket_bytes : bucket_cap_bytes;
    if (size >= limit) {
      a.bucket_bytes.push_back(size);
      ++current;
      size = 0;
      open = false;
    }
  }
  if (open) a.bucket_bytes.push_back(size);
  return a;
}

}  // namespace lgreco::traces
