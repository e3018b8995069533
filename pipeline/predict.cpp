// Step-time predictions: the compute model (pipeline/predict.hpp).
#include "pipeline/predict.hpp"

#include <cmath>

#include "core/error.hpp"
#include "sim/step_builder.hpp"
#include "traces/presets.hpp"

namespace lgreco::pipeline {
namespace {

std::string fixed(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

}  // namespace

std::string to_string(ComputeSource s) {
  switch (s) {
    case ComputeSource::kRecorded: return "recorded";
    case ComputeSource::kEstimated: return "estimated";
    case ComputeSource::kNone: return "none";
  }
  return "?";
}

ComputeModel compute_model(const std::vector<ComputeLayer>& layers, const std::string& model, const net::GpuSpec* gpu,
                           const ComputeOptions& opt) {
  if (!(opt.achieved_fraction > 0 && opt.achieved_fraction <= 1))
    throw ConfigError("achieved fraction " + std::to_string(opt.achieved_fraction) + ": expected 0 < F <= 1");
  if (opt.forward_s && (!(*opt.forward_s >= 0) || !std::isfinite(*opt.forward_s)))
    throw ConfigError("forward time " + std::to_string(*opt.forward_s) + " s: expected a finite value >= 0");
  if (!(opt.recorded_scale > 0) || !std::isfinite(opt.recorded_scale))
    throw FieldError("compute_scale", std::to_string(opt.recorded_scale) + ": expected a finite factor > 0");
  if (!(opt.optimizer_s >= 0) || !std::isfinite(opt.optimizer_s))
    throw ConfigError("optimizer time " + std::to_string(opt.optimizer_s) + " s: expected a finite value >= 0");
  ComputeModel c;
  c.achieved_fraction = opt.achieved_fraction;
  c.optimizer_s = opt.optimizer_s;
  bool recorded = !layers.empty();
  for (const auto& l : layers) recorded = recorded && l.recorded_s.has_value();
  if (recorded) {
    c.source = ComputeSource::kRecorded;
    for (const auto& l : layers) c.backward_s.push_back(*l.recorded_s * opt.recorded_scale);
    if (opt.recorded_scale != 1) {
      char b[64];
      std::snprintf(b, sizeof b, "%.4g", opt.recorded_scale);
      c.note = std::string("recorded compute times scaled by ") + b + " (recorded on other hardware than the prediction's)";
    }
  } else {
    const traces::ModelPreset* preset = nullptr;
    for (const auto& p : traces::model_presets())
      if (p.name == model) preset = &p;
    bool matches = preset && preset->tensors.size() == layers.size();
    for (std::size_t i = 0; matches && i < layers.size(); ++i) matches = preset->tensors[i].shape == layers[i].shape;
    sim::DeviceModel dev;
    dev.achieved_fraction = opt.achieved_fraction;
    c.gpu = "A100 (default)";
    if (gpu && gpu->dense_peak_flops > 0) {
      dev.dense_peak_flops = gpu->dense_peak_flops;
      c.gpu = gpu->name;
    }
    const auto estimate = [&](const std::vector<std::int64_t>& uses, std::int64_t batch, const std::string& what) {
      std::vector<sim::LayerSpec> specs;
      for (std::size_t i = 0; i < layers.size(); ++i) specs.push_back({layers[i].name, layers[i].shape, uses.at(i)});
      c.backward_s = sim::flop_backward_s(specs, batch, dev);
      c.source = ComputeSource::kEstimated;
      c.note = "no recorded compute times: backward time estimated from " + what + "'s FLOPs (batch " + std::to_string(batch) +
               " per GPU) at " + fixed(100 * opt.achieved_fraction, 0) + " % of the " + c.gpu + "'s dense peak (" +
               fixed(dev.dense_peak_flops / 1e12, 0) + " TFLOP/s)";
    };
    if (opt.flops) {
      if (opt.flops->uses_per_sample.size() != layers.size())
        throw ConfigError(opt.flops->origin + ": FLOP information for " + std::to_string(opt.flops->uses_per_sample.size()) +
                          " layers, the model has " + std::to_string(layers.size()));
      estimate(opt.flops->uses_per_sample, opt.flops->batch_per_gpu, opt.flops->origin);
    } else if (matches) {
      std::vector<std::int64_t> uses;
      for (const auto& t : preset->tensors) uses.push_back(t.uses_per_sample);
      estimate(uses, preset->batch_per_gpu, "the " + model + " preset");
    } else {
      c.backward_s.assign(layers.size(), 0.0);
      c.source = ComputeSource::kNone;
      c.note = "no recorded compute times and model '" + model +
               "' is no built-in preset of these layers: step times are communication only (no overlap with backward)";
    }
  }
  double backward = 0;
  for (double b : c.backward_s) backward += b;
  c.forward_s = opt.forward_s.value_or(0.5 * backward);
  return c;
}

ComputeModel compute_model(const planner::Window& w, const std::string& model, const net::GpuSpec* gpu,
                           const ComputeOptions& opt) {
  std::vector<ComputeLayer> layers;
  for (const auto& l : w.layers) layers.push_back({l.name, l.shape, l.compute_time_s});
  return compute_model(layers, model, gpu, opt);
}

void apply_compute(const ComputeModel& c, planner::Tables& t, planner::PlanOptions& opt) {
  for (auto& w : t.windows) {
    if (w.layers.size() != c.backward_s.size())
      throw Error("compute model: " + std::to_string(c.backward_s.size()) + " layers, a window has " + std::to_string(w.layers.size()));
    for (std::size_t i = 0; i < w.layers.size(); ++i) {
      if (c.source == ComputeSource::kNone) w.layers[i].compute_time_s.reset();
      else w.layers[i].compute_time_s = c.backward_s[i];
    }
  }
  opt.forward_s = c.forward_s;
  opt.optimizer_s = c.optimizer_s;
}

Json compute_json(const ComputeModel& c, double recorded_scale) {
  Json j{{"source", to_string(c.source)}, {"forward_s", c.forward_s}, {"optimizer_s", c.optimizer_s}};
  if (c.source == ComputeSource::kRecorded) j["recorded_scale"] = recorded_scale;
  if (c.source == ComputeSource::kRecorded && !c.note.empty()) j["note"] = c.note;
  if (c.source == ComputeSource::kEstimated) {
    j["achieved_fraction"] = c.achieved_fraction;
    j["gpu"] = c.gpu;
  }
  if (!c.note.empty()) j["note"] = c.note;
  return j;
}

std::optional<ComputeModel> apply_compute_rule(planner::Tables& t, planner::PlanOptions& opt, const net::CollectiveCost* cost,
                                               const net::GpuSpec* gpu, const ComputeOptions& co, const std::string& origin) {
  if (!cost) return std::nullopt;
  if (t.windows.empty()) throw ConfigError(origin + ": no windows");
  ComputeModel c = compute_model(t.windows.back(), t.model, gpu, co);
  apply_compute(c, t, opt);
  return c;
}

TablesPlan plan_all_windows(planner::Tables& t, planner::PlanOptions& opt, const net::CollectiveCost* cost, const net::GpuSpec* gpu,
                            const ComputeOptions& co, const std::string& origin) {
  TablesPlan r;
  r.compute = apply_compute_rule(t, opt, cost, gpu, co, origin);
  for (std::size_t w = 0; w < t.windows.size(); ++w) {
    try {
      r.plans.push_back(planner::plan_window(t.windows[w], opt, cost));
    } catch (const ConfigError& e) {
      throw ConfigError(origin + ": window " + std::to_string(w) + ": " + e.what());
    }
  }
  return r;
}

}  // namespace lgreco::pipeline
