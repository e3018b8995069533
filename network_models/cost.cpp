#include "network_models/cost.hpp"

#include <cmath>
#include <string>

#include "core/error.hpp"

namespace lgreco::net {

RingCost::RingCost(double latency_s, double bandwidth_Bps, int ranks)
    : latency_s_(latency_s), bandwidth_Bps_(bandwidth_Bps), ranks_(ranks) {
  if (!(latency_s >= 0) || !std::isfinite(latency_s)) throw ConfigError("ring network: latency " + std::to_string(latency_s) + " s: expected a finite value >= 0");
  if (!(bandwidth_Bps > 0) || !std::isfinite(bandwidth_Bps))
    throw ConfigError("ring network: bandwidth " + std::to_string(bandwidth_Bps) + " B/s: expected a finite value > 0");
  if (ranks < 1) throw ConfigError("ring network: " + std::to_string(ranks) + " ranks: expected >= 1");
}

double RingCost::time_s(Collective c, double bytes) const {
  if (bytes <= 0 || ranks_ <= 1) return 0;
  const double p = ranks_;
  switch (c) {
    case Collective::kAllgather: return (p - 1) * latency_s_ + (p - 1) * bytes / bandwidth_Bps_;
    case Collective::kReduceScatter: return (p - 1) * latency_s_ + (p - 1) / p * bytes / bandwidth_Bps_;
    case Collective::kBroadcast: return (p - 1) * latency_s_ + bytes / bandwidth_Bps_;  // pipelined ring
    case Collective::kAllreduce: break;
  }
  return 2.0 * (p - 1) * latency_s_ + 2.0 * (p - 1) / p * bytes / bandwidth_Bps_;
}

}  // namespace lgreco::net
