// Step-model construction (formulas in step_builder.hpp).
#include "sim/step_builder.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "kernels/wire.hpp"

namespace lgreco::sim {
std::uint64_t LayerSpec::numel() const { return kernels::wire_numel(shape); }

MethodSpec parse_method(const std::string& text) { return kernels::parse_method_text(text); }

std::vector<double> flop_backward_s(const std::vector<LayerSpec>& layers, std::int64_t batch, const DeviceModel& d) {
  if (batch < 1 || !(d.achieved_fraction > 0) || !(d.dense_peak_flops > 0)) throw ConfigError("compute estimate: batch, achieved fraction and peak must be > 0");
  std::vector<double> out;
  for (const auto& l : layers) out.push_back(4.0 * l.numel() * l.uses_per_sample * batch / (d.achieved_fraction * d.dense_peak_flops));
  return out;
}

LayerComm layer_comm(const LayerSpec& layer, const MethodSpec& m, int ranks, const DeviceModel& d, const kernels::DeviceProfile* profile) {
  const std::uint64_t n_el = layer.numel();
  const kernels::WirePlan plan = kernels::wire_plan(m, layer.shape);
  const kernels::WireSize& w = plan.size;
  LayerComm c;
  c.allreduce_bytes = {static_cast<double>(w.allreduce_round_bytes[0]), static_cast<double>(w.allreduce_round_bytes[1])};
  c.allgather_bytes = static_cast<double>(w.allgather_bytes);
  if (m.method == kernels::Method::kNone) return c;
  const std::string name = kernels::method_name(m.method);
  if (profile && profile->methods.count(name)) {
    const double t = profile->time_s(name, n_el);
    c.compress_s = t / 2;
    c.decompress_s = t / 2;
    return c;
  }
  const double mem = d.memory_Bps;
  c.compress_s = 16.0 * n_el / mem;
  if (m.method == kernels::Method::kPowerSgd) {
    const auto& v = plan.view;
    if (v.compressed) c.compress_s += 4.0 * n_el * v.r_eff * m.powersgd.power_iterations / (d.achieved_fraction * d.dense_peak_flops);
  }
  c.decompress_s = w.allgather_bytes > 0 ? (4.0 * n_el + ranks * c.allgather_bytes) / mem : 8.0 * n_el / mem;
  return c;
}

StepModel ddp_step_model(const std::vector<LayerSpec>& layers, const std::vector<double>& backward_s, double optimizer_s) {
  StepModel m;
  m.backward_s = backward_s;
  double total = 0;
  for (double b : backward_s) total += b;
  m.forward_s = total / 2;
  std::vector<double> bytes;
  for (std::size_t i = layers.size(); i-- > 0;) m.backward_order.push_back(static_cast<int>(i));
  for (const auto& l : layers) bytes.push_back(4.0 * l.numel());
  m.buckets = ddp_buckets(bytes);
  m.optimizer_s = optimizer_s;
  return m;
}

}  // namespace lgreco::sim
