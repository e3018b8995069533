#include "sim/replay.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <numeric>
#include <string_view>

#include "core/cancel.hpp"
#include "core/text.hpp"
#include "core/error.hpp"
#include "kernels/error_feedback.hpp"
#include "sim/replay_measure.hpp"
#include "sim/replay_pool.hpp"

namespace lgreco::sim {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void add_bytes(std::atomic<double>& total, double v) {
  double cur = total.load();
  while (!total.compare_exchange_weak(cur, cur + v)) {
  }
}

/// Copy of the canonical (host) part of a layer state.
kernels::LayerState copy_state(const kernels::LayerState& s) {
  kernels::LayerState c;
  c.residual = s.residual;
  c.velocity = s.velocity;
  c.q = s.q;
  c.q_rows = s.q_rows;
  c.q_cols = s.q_cols;
  c.steps = s.steps;
  return c;
}

}  // namespace

ErrorMode error_mode_from_name(const std::string& name) {
  if (name == "power") return ErrorMode::kPower;
  if (name == "exact") return ErrorMode::kExact;
  if (name == "trajectory") return ErrorMode::kTrajectory;
  throw ConfigError("unknown error mode '" + printable(name) + "' (expected power, exact or trajectory)");
}

std::string to_string(ErrorMode m) {
  switch (m) {
    case ErrorMode::kPower: return "power";
    case ErrorMode::kExact: return "exact";
    case ErrorMode::kTrajectory: return "trajectory";
  }
  return "?";
}

kernels::Backend resolve_backend(const std::string& name) {
  if (name == "cpu") return kernels::Backend::kCpu;
  if (name != "auto" && name != "cuda") throw ConfigError("unknown backend '" + printable(name) + "' (expected auto, cpu or cuda)");
  try {
    (void)kernels::make_compressor(kernels::parse_method("none"), kernels::Backend::kCuda);
    return kernels::Backend::kCuda;
  } catch (const CudaUnavailable& e) {
    if (name == "cuda") throw CudaUnavailable(std::string("backend 'cuda': ") + e.what());
    return kernels::Backend::kCpu;
  }
}

Replay::Replay(const GradientSource& source, std::vector<CandidateSet> candidates, ReplayOptions options)
    : source_(source), candidates_(std::move(candidates)), options_(std::move(options)) {
  if (!candidates_.empty() && candidates_.size() != source_.layers().size()) {
    throw Error("replay: " + std::to_string(candidates_.size()) + " candidate sets for " +
                std::to_string(source_.layers().size()) + " layers");
  }
  carried_.resize(source_.layers().size());
  start_s_ = now_s();
}

double Replay::elapsed_s() const { return now_s() - start_s_; }

WindowMeasure Replay::run_window(const Window& w, const std::vector<kernels::MethodSpec>& in_force, bool continues) {
  const auto& layers = source_.layers();
  if (in_force.size() != layers.size()) {
    throw Error("replay: " + std::to_string(in_force.size()) + " settings for " + std::to_string(layers.size()) + " layers");
  }
  if (w.first_row + w.count > source_.steps().size() || w.count == 0) {
    throw Error("replay: window rows [" + std::to_string(w.first_row) + ", " + std::to_string(w.first_row + w.count) +
                ") outside the source's " + std::to_string(source_.steps().size()) + " rows");
  }
  WindowMeasure out;
  out.window = w;
  out.layers.resize(layers.size());
  // Largest layers first: with dynamic scheduling the long tasks start early.
  std::vector<std::size_t> order(layers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return layers[a].numel > layers[b].numel; });
  std::mutex progress_mutex;
  std::size_t done = 0;
  std::vector<double> weight(order.size());
  for (std::size_t t = 0; t < order.size(); ++t) weight[t] = layer_task_bytes(layers[order[t]].numel);
  const PoolStats stats = parallel_for_weighted(order.size(), options_.threads, weight, options_.memory_limit_bytes,
                                                [&](std::size_t task, unsigned) {
    const std::size_t l = order[task];
    try {
      out.layers[l] = run_layer(l, w, in_force[l], continues);
    } catch (const InputError& e) {
      // The kernels name the layer and step; the source adds the file ("trace run.h5: layer ...").
      const std::string origin = source_.origin();
      if (origin.empty() || std::string_view(e.what()).starts_with(origin)) throw;
      throw InputError(origin + ": " + e.what());
    }
    if (options_.progress) {
      std::lock_guard<std::mutex> lock(progress_mutex);
      ReplayProgress p;
      p.window = windows_done_;
      p.windows = std::max(options_.windows_total, windows_done_ + 1);
      p.layers_done = ++done;
      p.layers_total = layers.size();
      p.grad_bytes = grad_bytes();
      p.elapsed_s = elapsed_s();
      options_.progress(p);
    }
  });
  peak_task_bytes_ = std::max(peak_task_bytes_, stats.peak_weight);
  peak_tasks_ = std::max(peak_tasks_, stats.peak_tasks);
  ++windows_done_;
  return out;
}

LayerWindow Replay::run_layer(std::size_t l, const Window& w, const kernels::MethodSpec& spec, bool continues) {
  const SourceLayer& layer = source_.layers()[l];
  const std::size_t n = layer.numel;
  const auto& steps = source_.steps();
  LayerWindow res;
  res.applied = spec;

  // Random streams and state are keyed by the layer's index in the whole model (a view of some
  // layers replays them exactly as the whole source does).
  const std::size_t id = source_.layer_id(l);
  kernels::ErrorFeedback ef(kernels::make_compressor(spec, options_.backend));
  kernels::LayerState& state = ef.state(id);
  if (!w.starts_burst && !carried_[l].residual.empty()) state = std::move(carried_[l]);
  carried_[l] = kernels::LayerState{};
  const bool trajectory = options_.mode == ErrorMode::kTrajectory && !candidates_.empty();
  kernels::LayerState start_state;
  if (trajectory) start_state = copy_state(state);

  std::vector<float> g(n), acc(n), recon(n), a(n, 0.0f);
  const std::size_t acc_from = w.count - static_cast<std::size_t>(w.acc_steps);
  double bytes = 0, err = 0;
  auto ctx_for = [&](std::size_t row) {
    kernels::LayerContext ctx;
    ctx.name = layer.name;
    ctx.index = id;
    ctx.step = static_cast<std::uint64_t>(steps[row]);
    ctx.seed = options_.seed;
    ctx.shape = layer.shape;
    return ctx;
  };
  for (std::size_t i = 0; i < w.count; ++i) {
    throw_if_cancelled();
    const std::size_t row = w.first_row + i;
    source_.read(l, row, g);
    const auto info = ef.step(g, acc, recon, ctx_for(row));
    const double e = frobenius_distance(acc, recon);
    bytes += static_cast<double>(info.wire.bytes);
    err += e;
    res.step_bytes.push_back(info.wire.bytes);
    res.step_error.push_back(e);
    res.applied_wire = info.wire;
    if (i >= acc_from) {
      for (std::size_t j = 0; j < n; ++j) a[j] += acc[j];
    }
  }
  add_bytes(grad_bytes_, 4.0 * static_cast<double>(n) * static_cast<double>(w.count));
  res.applied_bytes_per_step = bytes / static_cast<double>(w.count);
  res.applied_error_per_step = err / static_cast<double>(w.count);
  if (continues) carried_[l] = std::move(state);
  if (candidates_.empty()) return res;

  const CandidateSet& set = candidates_[l];
  res.default_index = set.default_index;
  if (!trajectory) {
    const float inv = 1.0f / static_cast<float>(w.acc_steps);
    for (auto& v : a) v *= inv;
    res.candidates = measure_on_matrix(a, layer.shape, set.candidates, options_.mode, options_, ctx_for(w.first_row + w.count - 1),
                                       recon);
    return res;
  }
  // Trajectory: each candidate from the state in force at the window's start, over the same steps.
  a = {};
  for (const auto& c : set.candidates) {
    kernels::ErrorFeedback cef(kernels::make_compressor(c, options_.backend));
    cef.state(id) = copy_state(start_state);
    double ce = 0;
    for (std::size_t i = 0; i < w.count; ++i) {
      throw_if_cancelled();
      const std::size_t row = w.first_row + i;
      source_.read(l, row, g);
      cef.step(g, acc, recon, ctx_for(row));
      if (i >= acc_from) ce += frobenius_distance(acc, recon);
    }
    add_bytes(grad_bytes_, 4.0 * static_cast<double>(n) * static_cast<double>(w.count));
    CandidateMeasure m;
    m.spec = c;
    m.error = ce / static_cast<double>(w.acc_steps);
    m.bytes = candidate_bytes(c, layer.shape);
    m.collective = kernels::method_collective(c.method);
    res.candidates.push_back(std::move(m));
  }
  return res;
}

}  // namespace lgreco::sim
