#pragma once
/// Device cost profiles: per method, the time to compress + decompress one layer, modelled as
///   time_s(method, numel) = overhead_s + bytes_moved_per_element · numel / effective_bandwidth_Bps
/// with effective_bandwidth_Bps = efficiency · peak memory bandwidth. Profiles are written as JSON
/// under kernels/profiles/<device>.json (estimated from HBM bandwidth, "estimate": true, or measured);
/// reading JSON lives in kernels/method_json.hpp (full build only); this header is std-only.
#include <cstdint>
#include <map>
#include <string>

#include "kernels/method.hpp"

namespace lgreco::kernels {

/// Cost of one method on one device.
struct MethodCost {
  double overhead_s = 0;                ///< fixed cost per layer (launches, small reductions)
  double bytes_per_element = 0;         ///< memory traffic per fp32 element, compress + decompress
  double effective_bandwidth_Bps = 0;   ///< achieved bandwidth for this kernel
  /// Throughput in fp32 input bytes per second: 4 · effective_bandwidth_Bps / bytes_per_element.
  double throughput_Bps() const { return bytes_per_element > 0 ? 4.0 * effective_bandwidth_Bps / bytes_per_element : 0.0; }
};

/// A device's cost profile.
struct DeviceProfile {
  std::string device;                     ///< "h100", ...
  bool estimate = true;                   ///< derived from datasheet bandwidth, not measured
  double peak_bandwidth_Bps = 0;          ///< HBM peak
  std::map<std::string, MethodCost> methods;  ///< keyed by method_name()

  /// Seconds to compress + decompress a layer of `numel` fp32 elements with `method`
  /// (overhead_s + 4·numel / throughput); ConfigError if the method is not in the profile.
  /// numel = 0 costs overhead_s (a launch still happens).
  double time_s(const std::string& method, std::uint64_t numel) const;
  /// Same, keyed by enum.
  double time_s(Method method, std::uint64_t numel) const { return time_s(method_name(method), numel); }
};

}  // namespace lgreco::kernels
