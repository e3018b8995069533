#pragma once
/// The cost of one collective on a network: the interface the step timeline (sim/timeline.hpp)
/// charges, implemented by the NCCL-shaped model (network_models/collectives.hpp, presets and
/// calibrated fits) and by the closed-form ring below. It lives here, with the network model, so
/// that the simulator depends on the network model and never the reverse.
#include "core/collective.hpp"

namespace lgreco::net {

/// Seconds for one collective in which every rank contributes `bytes_per_rank`.
class CollectiveCost {
 public:
  virtual ~CollectiveCost() = default;
  /// Seconds for one collective in which every rank contributes `bytes_per_rank` (0 → 0 s).
  /// Allreduce: a buffer of that size on every rank; allgather: every rank's payload of that size.
  virtual double time_s(Collective c, double bytes_per_rank) const = 0;
};

/// Ring collectives on a uniform network of p ranks with per-hop latency α and link bandwidth β:
///   allreduce  2(p−1)·α + 2(p−1)/p · bytes/β
///   allgather   (p−1)·α +   (p−1)  · bytes/β   (every rank's payload passes every other rank)
///   reduce-scatter (p−1)·α + (p−1)/p · bytes/β; broadcast (pipelined) (p−1)·α + bytes/β
/// One rank or no bytes cost zero. (`lgreco plan --bandwidth` without a topology.)
class RingCost : public CollectiveCost {
 public:
  /// ConfigError unless latency ≥ 0, bandwidth > 0 and ranks ≥ 1 (all finite).
  RingCost(double latency_s, double bandwidth_Bps, int ranks);
  double time_s(Collective c, double bytes_per_rank) const override;

 private:
  double latency_s_, bandwidth_Bps_;
  int ranks_;
};

}  // namespace lgreco::net
