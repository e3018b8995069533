#pragma once
/// Re-plan windows of a trace replay.
///
/// A trace records training steps in bursts of consecutive step ids; the steps between bursts were
/// not recorded. Error feedback and PowerSGD's warm start need consecutive steps, so:
/// - the residual e and the warm-start Q are RESET to zero / a seeded start at the first step of
///   every burst; the first steps of a burst warm them up again (the window's measurement uses its
///   last `acc_steps` steps only, so a window longer than acc_steps has (count − acc_steps) steps of
///   warm-up before the measured part);
/// - within a burst the state carries over from one window to the next.
///
/// Windows follow L-GreCo's timeline (reference-lgreco.md): warm-up (uncompressed) for
/// `warmup_steps`, then one window per `period_steps`. Rules, applied to the recorded step ids:
/// 1. rows with step id < warmup_steps ran uncompressed in training and are skipped when the trace
///    has rows at or after the warm-up (a burst straddling the warm-up end starts afresh there, as
///    the residual is zero when compression starts); when every row is inside the warm-up, all rows
///    are used and the plan notes it (`warmup_shrunk`). warmup_steps = 0 uses every row;
/// 2. each burst is cut into windows of period_steps consecutive rows; a remainder of the burst is
///    merged into the burst's last window, and a burst shorter than period_steps is one window of its
///    own length (the plan notes that windows shrank to the trace's bursts);
/// 3. a window's measurement matrix averages its last min(acc_steps, count) steps (noted when fewer
///    than acc_steps).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lgreco::sim {

/// A run of consecutive recorded step ids: trace rows [first_row, first_row + count).
struct Burst {
  std::size_t first_row = 0;
  std::size_t count = 0;
  std::int64_t first_step = 0;  ///< step id of first_row
};

/// Timeline parameters (defaults: L-GreCo's ResNet-18 run, 1000 warm-up steps, re-plan every 1000).
struct WindowConfig {
  std::int64_t warmup_steps = 1000;  ///< uncompressed steps at the start of training
  std::int64_t period_steps = 1000;  ///< steps between re-plans
  int acc_steps = 10;                ///< steps averaged into the measurement matrix A
};

/// One re-plan window: trace rows [first_row, first_row + count), step ids [start_step, end_step).
struct Window {
  std::size_t burst = 0;          ///< index into WindowPlan::bursts
  std::size_t first_row = 0;
  std::size_t count = 0;
  std::int64_t start_step = 0;    ///< first step id
  std::int64_t end_step = 0;      ///< one past the last step id
  bool starts_burst = false;      ///< residual and warm start are reset before this window
  int acc_steps = 0;              ///< steps averaged into A: min(config acc_steps, count)
};

/// The windows of a trace and what had to be adapted to fit it.
struct WindowPlan {
  std::vector<Burst> bursts;
  std::vector<Window> windows;
  bool warmup_shrunk = false;   ///< every recorded step lies inside the configured warm-up
  bool windows_shrunk = false;  ///< some window is shorter than period_steps
  bool acc_shrunk = false;      ///< some window is shorter than acc_steps
  std::vector<std::string> notes;  ///< one sentence per adaptation, for summaries
};

/// Splits recorded step ids into bursts. Throws InputError when ids are not strictly increasing or
/// negative (naming the position and values).
std::vector<Burst> find_bursts(const std::vector<std::int64_t>& steps);

/// Windows of a trace by the rules above. Throws InputError for an empty trace and ConfigError for
/// non-positive period or acc_steps, or a negative warm-up.
WindowPlan plan_windows(const std::vector<std::int64_t>& steps, const WindowConfig& config);

}  // namespace lgreco::sim
