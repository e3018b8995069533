// Step-model construction (formulas in step_builder.hpp).
#include "sim/step_builder.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace lgreco::sim {
namespace {

const std::map<std::string, std::map<std::string, double>>& method_defaults() {
  static const std::map<std::string, std::map<std::string, double>> d{
      {"none", {}},
      {"fp16", {}},
      {"bf16", {}},
      {"powersgd", {{"rank", 4}, {"power_iterations", 1}, {"min_compression_rate", 2}}},
      {"topk", {{"density", 0.01}}},
      {"randomk", {{"density", 0.01}}},
      {"qsgd", {{"bits", 4}, {"bucket_size", 512}}},
      {"maxmin", {{"bits", 4}, {"bucket_size", 1024}}},
      {"sign", {{"bucket_size", 1024}}},
      {"terngrad", {}},
      {"nuqsgd", {{"levels", 4}, {"bucket_size", 512}}}};
  return d;
}

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }
int ceil_log2(double x) { return static_cast<int>(std::ceil(std::log2(x) - 1e-12)); }

}  // namespace

std::uint64_t LayerSpec::numel() const {
  std::uint64_t n = 1;
  for (auto d : shape) n *= static_cast<std::uint64_t>(d);
  return n;
}

MethodSpec parse_method(const std::string& text) {
  MethodSpec m;
  const auto colon = text.find(':');
  m.method = text.substr(0, colon);
  auto it = method_defaults().find(m.method);
  if (it == method_defaults().end()) throw ConfigError("unknown method \"" + m.method + "\" in \"" + text + "\"");
  m.params = it->second;
  if (colon == std::string::npos) return m;
  std::string rest = text.substr(colon + 1);
  std::size_t start = 0;
  while (start <= rest.size()) {
    const auto comma = rest.find(',', start);
    const std::string kv = rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const auto eq = kv.find('=');
    if (eq == std::string::npos) throw ConfigError("method \"" + text + "\": expected key=value, got \"" + kv + "\"");
    const std::string key = kv.substr(0, eq);
    if (!m.params.count(key)) throw ConfigError("method " + m.method + ": unknown parameter \"" + key + "\"");
    try {
      m.params[key] = std::stod(kv.substr(eq + 1));
    } catch (const std::exception&) {
      throw ConfigError("method " + m.method + ": parameter " + key + " has non-numeric value \"" + kv.substr(eq + 1) + "\"");
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return m;
}

std::vector<double> flop_backward_s(const std::vector<LayerSpec>& layers, std::int64_t batch, const DeviceModel& d) {
  if (batch < 1 || !(d.achieved_fraction > 0) || !(d.dense_peak_flops > 0)) throw ConfigError("compute estimate: batch, achieved fraction and peak must be > 0");
  std::vector<double> out;
  for (const auto& l : layers) out.push_back(4.0 * l.numel() * l.uses_per_sample * batch / (d.achieved_fraction * d.dense_peak_flops));
  return out;
}

LayerComm layer_comm(const LayerSpec& layer, const MethodSpec& m, int ranks, const DeviceModel& d) {
  const std::uint64_t n_el = layer.numel();
  const auto& p = m.params;
  LayerComm c;
  const double mem = d.memory_Bps;
  if (m.method == "none") {
    c.allreduce_bytes[0] = 4.0 * n_el;
    return c;
  }
  c.compress_s = 16.0 * n_el / mem;
  if (m.method == "fp16" || m.method == "bf16") {
    c.allreduce_bytes[0] = 2.0 * n_el;
  } else if (m.method == "powersgd") {
    const std::int64_t n = layer.shape.empty() ? static_cast<std::int64_t>(n_el) : layer.shape[0];
    const std::int64_t mm = n > 0 ? static_cast<std::int64_t>(n_el) / n : 0;
    const std::int64_t r = std::min({n, mm, static_cast<std::int64_t>(p.at("rank"))});
    if (r >= 1 && static_cast<double>(n + mm) * r * p.at("min_compression_rate") < static_cast<double>(n) * mm) {
      c.allreduce_bytes[0] = p.at("power_iterations") * 4.0 * r * n;
      c.allreduce_bytes[1] = p.at("power_iterations") * 4.0 * r * mm;
      c.compress_s += 4.0 * n_el * r * p.at("power_iterations") / (d.achieved_fraction * d.dense_peak_flops);
    } else {
      c.allreduce_bytes[0] = 4.0 * n_el;
    }
  } else if (m.method == "randomk") {
    const std::uint64_t k = n_el == 0 ? 0 : std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(p.at("density") * n_el)));
    c.allreduce_bytes[0] = 4.0 * k;
  } else {
    double wire = 0;
    if (m.method == "topk") {
      const std::uint64_t k = n_el == 0 ? 0 : std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(p.at("density") * n_el)));
      wire = std::min(8.0 * k, static_cast<double>(ceil_div(n_el, 8) + 4 * k));
    } else if (m.method == "qsgd") {
      const double s = std::pow(2.0, p.at("bits") - 1) - 1;
      wire = std::ceil(n_el * ceil_log2(2 * s + 1) / 8.0) + 4.0 * ceil_div(n_el, static_cast<std::uint64_t>(p.at("bucket_size")));
    } else if (m.method == "maxmin") {
      wire = n_el < 16 ? 4.0 * n_el : std::ceil(p.at("bits") * n_el / 8.0) + 8.0 * ceil_div(n_el, static_cast<std::uint64_t>(p.at("bucket_size")));
    } else if (m.method == "sign") {
      wire = static_cast<double>(ceil_div(n_el, 8)) + 4.0 * ceil_div(n_el, static_cast<std::uint64_t>(p.at("bucket_size")));
    } else if (m.method == "terngrad") {
      wire = static_cast<double>(ceil_div(2 * n_el, 8)) + 4;
    } else if (m.method == "nuqsgd") {
      wire = std::ceil(n_el * (1 + ceil_log2(p.at("levels") + 2)) / 8.0) + 4.0 * ceil_div(n_el, static_cast<std::uint64_t>(p.at("bucket_size")));
    }
    c.allgather_bytes = wire;
    c.decompress_s = (4.0 * n_el + ranks * wire) / mem;
    return c;
  }
  c.decompress_s = 8.0 * n_el / mem;
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
