#include "kernels/profile.hpp"

#include "core/error.hpp"
#include "core/text.hpp"

namespace lgreco::kernels {

double DeviceProfile::time_s(const std::string& method, std::uint64_t numel) const {
  const auto it = methods.find(method);
  if (it == methods.end()) throw ConfigError("device profile '" + printable(device) + "' has no entry for method '" + printable(method) + "'");
  const MethodCost& c = it->second;
  const double tput = c.throughput_Bps();
  if (!(tput > 0)) throw ConfigError("device profile '" + printable(device) + "': method '" + printable(method) + "' has no positive throughput");
  return c.overhead_s + 4.0 * static_cast<double>(numel) / tput;
}

}  // namespace lgreco::kernels
