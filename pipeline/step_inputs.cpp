#include "pipeline/step_inputs.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "core/text.hpp"
#include "kernels/wire.hpp"
#include "sim/timeline.hpp"
#include "traces/presets.hpp"
#include "traces/reader.hpp"

namespace lgreco::pipeline {
namespace {

planner::LayerTable layer(const std::string& name, const std::vector<std::int64_t>& shape, const std::string& kind) {
  planner::LayerTable l;
  l.name = name;
  l.shape = shape;
  l.numel = static_cast<std::int64_t>(kernels::wire_numel(shape));
  l.kind = kind;
  l.candidates.push_back(planner::make_candidate(kernels::MethodSpec{}, shape, 0.0));
  return l;
}

// PyTorch DDP's buckets and reverse-parameter backward order (sim::ddp_buckets).
void ddp_layout(planner::Window& w) {
  std::vector<double> bytes;
  for (const auto& l : w.layers) bytes.push_back(4.0 * static_cast<double>(l.numel));
  const auto buckets = sim::ddp_buckets(bytes);
  for (std::size_t b = 0; b < buckets.size(); ++b)
    for (int id : buckets[b]) w.layers[static_cast<std::size_t>(id)].bucket = static_cast<int>(b);
  const int n = static_cast<int>(w.layers.size());
  for (int i = 0; i < n; ++i) w.layers[static_cast<std::size_t>(i)].backward_order = n - 1 - i;
}

}  // namespace

StepInputs inputs_from_preset(const std::string& name) {
  const traces::ModelPreset& p = traces::find_model_preset(name);
  StepInputs in;
  in.model = p.name;
  for (const auto& t : p.tensors) in.window.layers.push_back(layer(t.name, t.shape, traces::to_string(t.kind)));
  ddp_layout(in.window);
  in.bucket_source = "ddp";
  return in;
}

StepInputs inputs_from_trace(const std::string& path) {
  const traces::TraceReader r(path);
  StepInputs in;
  in.model = r.header().model;
  const auto& ls = r.layers();
  for (std::size_t i = 0; i < ls.size(); ++i) {
    planner::LayerTable l = layer(ls[i].name, ls[i].shape, traces::to_string(ls[i].kind));
    l.bucket = static_cast<int>(ls[i].bucket);
    l.backward_order = static_cast<int>(ls[i].backward_order);
    const auto ct = r.compute_time_s(i);
    if (ct && !ct->empty()) {
      double sum = 0;
      for (double v : *ct) {
        if (!std::isfinite(v) || v < 0) throw InputError(path + ": " + r.layer_context(i) + " compute_time_s has " + std::to_string(v));
        sum += v;
      }
      l.compute_time_s = sum / static_cast<double>(ct->size());
    }
    in.window.layers.push_back(std::move(l));
  }
  in.bucket_source = "trace";
  return in;
}

StepInputs inputs_from_layers(const std::string& path) { return inputs_from_layers_json(read_json_file(path), path); }

StepInputs inputs_from_layers_json(const Json& doc, const std::string& path) {
  JsonObject o(doc, path);
  StepInputs in;
  in.model = path;
  FlopSpec f;
  f.origin = path;
  f.batch_per_gpu = o.get<std::int64_t>("batch_per_gpu");
  if (f.batch_per_gpu < 1) throw ConfigError(path + ".batch_per_gpu: " + std::to_string(f.batch_per_gpu) + "; expected >= 1");
  const Json& ts = o.require("tensors");
  if (!ts.is_array() || ts.empty()) throw ConfigError(path + ".tensors: expected a non-empty array");
  std::set<std::string> names;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    JsonObject t(ts[i], path + ".tensors[" + std::to_string(i) + "]");
    const auto name = t.get<std::string>("name");
    if (!names.insert(name).second) throw ConfigError(t.child("name") + ": " + quote_name(name) + " is listed twice");
    const auto shape = t.get<std::vector<std::int64_t>>("shape");
    for (auto d : shape)
      if (d < 1) throw ConfigError(t.child("shape") + ": dimension " + std::to_string(d) + " must be >= 1");
    f.uses_per_sample.push_back(t.get_or<std::int64_t>("uses_per_sample", 1));
    if (f.uses_per_sample.back() < 1) throw ConfigError(t.child("uses_per_sample") + ": expected >= 1");
    t.finish();
    try {
      in.window.layers.push_back(layer(name, shape, shape.size() > 1 ? "weight" : "bias"));
    } catch (const ConfigError& e) {
      throw ConfigError(t.child("shape") + ": " + e.what());
    }
  }
  o.finish();
  ddp_layout(in.window);
  in.flops = f;
  in.bucket_source = "ddp";
  return in;
}

void set_uniform(StepInputs& in, const kernels::MethodSpec& m) {
  for (auto& l : in.window.layers) l.candidates = {planner::make_candidate(m, l.shape, 0.0)};
}

int set_phase(StepInputs& in, const planner::Schedule& s, int phase, const std::string& origin) {
  if (s.phases.empty()) throw ConfigError(origin + ": no phases");
  const int k = phase < 0 ? static_cast<int>(s.phases.size()) - 1 : phase;
  if (k >= static_cast<int>(s.phases.size())) {
    throw FieldError("phase", std::to_string(phase) + ": " + origin + " has " + std::to_string(s.phases.size()) + " phases (0.." +
                     std::to_string(s.phases.size() - 1) + ")");
  }
  const planner::Phase& ph = s.phases[static_cast<std::size_t>(k)];
  std::map<std::string, std::size_t> id;
  for (std::size_t i = 0; i < in.window.layers.size(); ++i) id[in.window.layers[i].name] = i;
  std::vector<bool> seen(in.window.layers.size(), false);
  for (const auto& [name, spec] : ph.layers) {
    auto it = id.find(name);
    const std::string where = origin + ": phases[" + std::to_string(k) + "].layers." + name;
    if (it == id.end()) throw ConfigError(where + ": no parameter of that name in model \"" + in.model + "\"");
    auto& l = in.window.layers[it->second];
    l.candidates = {planner::make_candidate(spec, l.shape, 0.0)};
    seen[it->second] = true;
  }
  for (std::size_t i = 0; i < seen.size(); ++i) {
    if (!seen[i]) throw ConfigError(origin + ": phases[" + std::to_string(k) + "].layers lacks parameter \"" + in.window.layers[i].name + "\"");
  }
  if (!s.buckets.empty()) {
    std::vector<bool> placed(in.window.layers.size(), false);
    for (const auto& b : s.buckets) {
      for (const auto& name : b.params) {
        auto it = id.find(name);
        if (it == id.end()) throw ConfigError(origin + ": buckets[" + std::to_string(b.index) + "] names unknown parameter \"" + name + "\"");
        in.window.layers[it->second].bucket = b.index;
        placed[it->second] = true;
      }
    }
    if (std::find(placed.begin(), placed.end(), false) != placed.end())
      throw ConfigError(origin + ": buckets do not place every parameter of model \"" + in.model + "\"");
    in.bucket_source = "schedule";
  }
  return k;
}

}  // namespace lgreco::pipeline
