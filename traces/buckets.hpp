#pragma once
/// DDP gradient buckets as PyTorch DistributedDataParallel forms them after its first iteration
/// (Reducer::rebuild_buckets → compute_bucket_assignment_by_size): tensors are taken in the order
/// their gradients become ready in backward, which for a feed-forward model is the reverse of
/// model.parameters(); a tensor is added to the open bucket and the bucket is closed as soon as its
/// size reaches its limit (so a bucket may exceed the limit by its last tensor). The first bucket's
/// limit is 1 MiB (DDP's _DEFAULT_FIRST_BUCKET_BYTES), every later one bucket_cap (25 MiB default).
/// Bucket 0 therefore holds the model's last layers and is the first to be reduced.
#include <cstdint>
#include <vector>

namespace lgreco::traces {

/// DDP's default bucket_cap_mb = 25.
constexpr std::uint64_t kDdpBucketCapBytes = 25ull << 20;
/// DDP's _DEFAULT_FIRST_BUCKET_BYTES = 1 MiB.
constexpr std::uint64_t kDdpFirstBucketBytes = 1ull << 20;

/// Bucket of each tensor and its position in backward (0 = gradient ready first).
struct BucketAssignment {
  std::vector<int> bucket;                 ///< per tensor, in model.parameters() order
  std::vector<int> backward_order;         ///< per tensor: N−1−i for tensor i
  std::vector<std::uint64_t> bucket_bytes; ///< per bucket: Σ tensor bytes
};

/// Assigns buckets to tensors of `tensor_bytes` (model.parameters() order, bytes of each gradient,
/// e.g. 4·numel for fp32). Throws ConfigError when a cap is zero.
BucketAssignment assign_ddp_buckets(const std::vector<std::uint64_t>& tensor_bytes,
                                    std::uint64_t bucket_cap_bytes = kDdpBucketCapBytes,
                                    std::uint64_t first_bucket_bytes = kDdpFirstBucketBytes);

}  // namespace lgreco::traces
