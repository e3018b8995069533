#include "sim/replay_windows.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace lgreco::sim {

std::vector<Burst> find_bursts(const std::vector<std::int64_t>& steps) {
  std::vector<Burst> bursts;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i] < 0) {
      throw InputError("trace steps[" + std::to_string(i) + "] = " + std::to_string(steps[i]) + ": step ids must be >= 0");
    }
    if (i > 0 && steps[i] <= steps[i - 1]) {
      throw InputError("trace steps[" + std::to_string(i) + "] = " + std::to_string(steps[i]) + " after " +
                       std::to_string(steps[i - 1]) + ": step ids must be strictly increasing");
    }
    if (i == 0 || steps[i] != steps[i - 1] + 1) {
      bursts.push_back(Burst{i, 1, steps[i]});
    } else {
      ++bursts.back().count;
    }
  }
  return bursts;
}

WindowPlan plan_windows(const std::vector<std::int64_t>& steps, const WindowConfig& config) {
  if (config.period_steps <= 0) throw ConfigError("window period must be > 0 steps, got " + std::to_string(config.period_steps));
  if (config.acc_steps <= 0) throw ConfigError("acc_steps must be > 0, got " + std::to_string(config.acc_steps));
  if (config.warmup_steps < 0) throw ConfigError("warm-up must be >= 0 steps, got " + std::to_string(config.warmup_steps));
  if (steps.empty()) throw InputError("trace has no recorded steps");

  WindowPlan plan;
  // Rows inside the warm-up ran uncompressed in training: skip them when the trace goes beyond it
  // (the residual is zero when compression starts, as at a burst start); keep them all otherwise.
  std::size_t inside = 0;
  while (inside < steps.size() && steps[inside] < config.warmup_steps) ++inside;
  if (inside == steps.size()) {
    plan.warmup_shrunk = true;
    plan.notes.push_back("every recorded step (the last is " + std::to_string(steps.back()) + ") lies inside the " +
                         std::to_string(config.warmup_steps) +
                         "-step warm-up: all of them are replayed and the warm-up ends at the first recorded step");
    inside = 0;
  }
  for (Burst b : find_bursts(std::vector<std::int64_t>(steps.begin() + static_cast<std::ptrdiff_t>(inside), steps.end()))) {
    b.first_row += inside;
    plan.bursts.push_back(b);
  }

  const auto period = static_cast<std::size_t>(config.period_steps);
  for (std::size_t bi = 0; bi < plan.bursts.size(); ++bi) {
    const Burst& b = plan.bursts[bi];
    const std::size_t n_windows = std::max<std::size_t>(1, b.count / period);
    for (std::size_t w = 0; w < n_windows; ++w) {
      Window win;
      win.burst = bi;
      win.first_row = b.first_row + w * period;
      win.count = (w + 1 == n_windows) ? b.count - w * period : period;  // remainder joins the last window
      win.start_step = b.first_step + static_cast<std::int64_t>(w * period);
      win.end_step = win.start_step + static_cast<std::int64_t>(win.count);
      win.starts_burst = (w == 0);
      win.acc_steps = static_cast<int>(std::min<std::size_t>(win.count, static_cast<std::size_t>(config.acc_steps)));
      if (win.count < period) plan.windows_shrunk = true;
      if (win.acc_steps < config.acc_steps) plan.acc_shrunk = true;
      plan.windows.push_back(win);
    }
  }
  if (plan.windows_shrunk) {
    std::size_t shortest = plan.windows.front().count;
    for (const Window& w : plan.windows) shortest = std::min(shortest, w.count);
    plan.notes.push_back("bursts shorter than the " + std::to_string(config.period_steps) +
                         "-step re-plan period: windows shrank to the trace's bursts (shortest " + std::to_string(shortest) +
                         " steps)");
  }
  if (plan.acc_shrunk) {
    plan.notes.push_back("some windows have fewer than " + std::to_string(config.acc_steps) +
                         " steps: their measurement averages all of their steps");
  }
  return plan;
}

}  // namespace lgreco::sim
