#pragma once
/// The step timeline of one data-parallel training step (PyTorch DDP semantics).
///
/// Model (reference-network.md, "PyTorch DDP, what a timeline must mirror"):
/// - backward runs layer by layer in backward order on the compute stream; layer l's gradient is
///   ready at forward_s + Σ_{j ≤ l in backward order} backward_s[j];
/// - a bucket is ready when its last layer is ready; its compression kernels then run on the
///   compute stream (they delay later compute and later buckets' readiness);
/// - collectives run one after another, in bucket order, on one communication stream:
///   start_b = max(ready_b, end_{b−1}); end_b = start_b + comm_b;
/// - a bucket's communication: round 0 allreduce of Σ allreduce_bytes[0] of its layers (uncompressed,
///   fp16/bf16 and PowerSGD's P, fused as the hook fuses them), round 1 allreduce of
///   Σ allreduce_bytes[1] (PowerSGD's Q) when non-zero, and one allgather of Σ allgather_bytes when
///   non-zero; then decompression (charged on the communication stream's critical path);
/// - the step ends when the last collective has finished (and its decompression) and the optimizer ran:
///   step_s = max(compute_end, comm_end) + optimizer_s.
#include <array>
#include <vector>

#include "network_models/cost.hpp"

namespace lgreco::sim {

/// One layer's communication and kernel work in one step. Bytes are per rank (what one worker sends).
struct LayerComm {
  std::array<double, 2> allreduce_bytes{0, 0};  ///< round 0 and round 1 allreduce payload
  double allgather_bytes = 0;                   ///< allgather payload (sparse / quantised methods)
  double compress_s = 0;                        ///< compression kernel time (compute stream)
  double decompress_s = 0;                      ///< decompression time after the collective
};

/// The fixed part of a step: compute times and the bucket plan.
struct StepModel {
  double forward_s = 0;                        ///< forward pass before backward starts
  std::vector<double> backward_s;              ///< per layer, indexed by layer id
  std::vector<int> backward_order;             ///< layer ids in the order their gradients become ready
  std::vector<std::vector<int>> buckets;       ///< layer ids per bucket, in communication order
  double optimizer_s = 0;                      ///< optimizer step after the last collective
};

/// When a bucket's communication ran.
struct BucketTiming {
  int bucket = 0;
  double ready_s = 0, start_s = 0, end_s = 0, comm_s = 0;
};

/// Result of simulating one step.
struct StepResult {
  double step_s = 0;          ///< whole step
  double compute_s = 0;       ///< forward + backward + compression kernels (compute stream busy time)
  double exposed_comm_s = 0;  ///< step_s − compute_s − optimizer_s: communication not hidden by compute
  std::vector<BucketTiming> buckets;
};

/// Simulates one step. `comm` has one entry per layer id. Throws InputError on inconsistent input
/// (a layer in no bucket or two, negative or non-finite times, sizes that do not match).
StepResult simulate_step(const StepModel& model, const std::vector<LayerComm>& comm, const net::CollectiveCost& cost);

/// The same simulation with everything that does not depend on the per-layer backward times
/// precomputed (validation, bucket membership, each bucket's collective and kernel times, the
/// order in which buckets become ready): one step then costs O(layers + buckets) and no
/// collective-cost query. Not thread-safe (one scratch buffer per simulator).
class StepSimulator {
 public:
  StepSimulator(const StepModel& model, const std::vector<LayerComm>& comm, const net::CollectiveCost& cost);
  /// With the model's backward times.
  StepResult run() const { return run(model_.backward_s); }
  /// With other backward times (e.g. one recorded step of a trace); same layer count.
  StepResult run(const std::vector<double>& backward_s) const;
  /// Step time only, without allocating.
  double step_s(const std::vector<double>& backward_s) const;
  /// Communication time of bucket b (collectives + decompression).
  double bucket_comm_s(std::size_t b) const { return comm_s_[b]; }

 private:
  double fill(const std::vector<double>& backward_s, double* compute_end) const;
  StepModel model_;
  std::vector<int> bucket_at_pos_;     // bucket whose last layer is at this backward position, or -1
  std::vector<double> compress_s_, comm_s_;
  std::vector<int> ready_order_;       // buckets by readiness (empty buckets first)
  mutable std::vector<double> ready_;  // scratch: shifted ready time per bucket
};

/// PyTorch DDP's bucket assignment: parameters in reverse order of `param_bytes` (model.parameters()
/// order), a bucket closes once it holds ≥ cap bytes; the first bucket's cap is `first_cap_bytes`.
/// Returns layer ids per bucket in communication order. Defaults: 25 MiB and 1 MiB.
std::vector<std::vector<int>> ddp_buckets(const std::vector<double>& param_bytes, double cap_bytes = 25.0 * 1048576,
                                          double first_cap_bytes = 1048576);

}  // namespace lgreco::sim
