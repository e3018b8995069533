// Inputs of `lgreco simulate` (simulate_inputs.hpp).
#include "tools/simulate_inputs.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.hpp"
#include "kernels/method.hpp"
#include "planner/schedule.hpp"
#include "traces/presets.hpp"
#include "traces/reader.hpp"

namespace lgreco::cli {
namespace {

std::vector<sim::LayerSpec> preset_layers(const traces::ModelPreset& p) {
  std::vector<sim::LayerSpec> out;
  for (const auto& t : p.tensors) out.push_back({t.name, t.shape, t.uses_per_sample});
  return out;
}

/// planner {method, params (JSON)} → the kernels' typed spec.
sim::MethodSpec to_kernels(const planner::MethodSpec& m, const std::string& where) {
  kernels::ParamList params;
  for (auto it = m.params.begin(); it != m.params.end(); ++it) {
    params.emplace_back(it.key(), it->is_string() ? it->get<std::string>() : it->dump());
  }
  try {
    return kernels::parse_method(m.method, params);
  } catch (const Error& e) {
    throw ConfigError(where + ": " + e.what());
  }
}

}  // namespace

SimModel model_from_preset(const std::string& name) {
  const traces::ModelPreset& p = traces::find_model_preset(name);
  SimModel m;
  m.name = p.name;
  m.layers = preset_layers(p);
  m.batch = p.batch_per_gpu;
  return m;
}

SimModel model_from_trace(const std::string& path) {
  const traces::TraceReader r(path);
  SimModel m;
  m.name = r.header().model;
  const auto& ls = r.layers();
  std::vector<std::int64_t> bucket_of;
  bool measured = true;
  for (std::size_t i = 0; i < ls.size(); ++i) {
    m.layers.push_back({ls[i].name, ls[i].shape, 1});
    const auto ct = r.compute_time_s(i);
    if (!ct || ct->empty()) {
      measured = false;
      continue;
    }
    double sum = 0;
    for (double v : *ct) {
      if (!std::isfinite(v) || v < 0) throw InputError(path + ": " + r.layer_context(i) + " compute_time_s has " + std::to_string(v));
      sum += v;
    }
    m.measured_backward_s.push_back(sum / ct->size());
  }
  if (measured) {
    m.compute_source = "trace";
  } else {
    m.measured_backward_s.clear();
    const traces::ModelPreset* p = nullptr;
    for (const auto& q : traces::model_presets()) if (q.name == m.name) p = &q;
    if (!p) throw ConfigError(path + ": no compute_time_s in the trace and model \"" + m.name + "\" is no preset for the FLOP estimate");
    if (p->tensors.size() != ls.size()) throw ConfigError(path + ": model \"" + m.name + "\" has " + std::to_string(p->tensors.size()) + " tensors in the preset, the trace " + std::to_string(ls.size()));
    for (std::size_t i = 0; i < ls.size(); ++i) m.layers[i].uses_per_sample = p->tensors[i].uses_per_sample;
    m.batch = p->batch_per_gpu;
  }
  // Backward order and buckets as recorded.
  std::vector<int> order(ls.size());
  for (std::size_t i = 0; i < ls.size(); ++i) order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return ls[a].backward_order < ls[b].backward_order; });
  m.backward_order = order;
  std::map<std::int64_t, std::vector<int>> by_bucket;
  for (std::size_t i = 0; i < ls.size(); ++i) by_bucket[ls[i].bucket].push_back(static_cast<int>(i));
  for (auto& [b, ids] : by_bucket) m.buckets.push_back(ids);
  m.bucket_source = "trace";
  return m;
}

SimSchedule read_sim_schedule(const std::string& path, int phase, const SimModel& m) {
  const planner::Schedule s = planner::read_schedule(path);
  if (s.phases.empty()) throw ConfigError(path + ": no phases");
  const int k = phase < 0 ? static_cast<int>(s.phases.size()) - 1 : phase;
  if (k >= static_cast<int>(s.phases.size())) {
    throw UsageError("--phase " + std::to_string(phase) + ": " + path + " has " + std::to_string(s.phases.size()) + " phases (0.." + std::to_string(s.phases.size() - 1) + ")");
  }
  const planner::Phase& ph = s.phases[k];
  std::map<std::string, int> id;
  for (std::size_t i = 0; i < m.layers.size(); ++i) id[m.layers[i].name] = static_cast<int>(i);
  SimSchedule out;
  out.phase = k;
  out.label = ph.label;
  out.methods.assign(m.layers.size(), sim::MethodSpec{});
  std::vector<bool> seen(m.layers.size(), false);
  for (const auto& [name, spec] : ph.layers) {
    auto it = id.find(name);
    const std::string where = path + ": phases[" + std::to_string(k) + "].layers." + name;
    if (it == id.end()) throw ConfigError(where + ": no parameter of that name in model \"" + m.name + "\"");
    out.methods[it->second] = to_kernels(spec, where);
    seen[it->second] = true;
  }
  for (std::size_t i = 0; i < seen.size(); ++i) {
    if (!seen[i]) throw ConfigError(path + ": phases[" + std::to_string(k) + "].layers lacks parameter \"" + m.layers[i].name + "\"");
  }
  for (const auto& b : s.buckets) {
    std::vector<int> ids;
    for (const auto& name : b.params) {
      auto it = id.find(name);
      if (it == id.end()) throw ConfigError(path + ": buckets[" + std::to_string(b.index) + "] names unknown parameter \"" + name + "\"");
      ids.push_back(it->second);
    }
    out.buckets.push_back(ids);
  }
  return out;
}

}  // namespace lgreco::cli
