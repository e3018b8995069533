#pragma once
/// Where the closed loop (pipeline/loop.hpp) and the schedule replay (pipeline/schedule_replay.hpp)
/// get a window's per-layer measurements from. Both ask a WindowReplayer for one window at a time,
/// in order, with the settings in force; what they do with the measurements (tables, plans, the next
/// window's settings, per-step records) exists once, in those files, whichever engine replays.
///
/// Engines:
/// - local_engine(): this process's threads (sim::Replay over the whole source);
/// - pipeline/distributed.hpp: the layers spread over MPI ranks, each replaying its own layers with
///   sim::Replay over a view of the source; the measurements come back to the caller (rank 0)
///   bit-identical to the local engine's, because every layer's replay depends only on its data, its
///   settings, the seed and its index in the whole model (sim/replay.hpp).
#include <memory>
#include <vector>

#include "core/json_util.hpp"
#include "kernels/method.hpp"
#include "sim/replay.hpp"
#include "sim/replay_candidates.hpp"
#include "sim/replay_source.hpp"
#include "sim/replay_windows.hpp"

namespace lgreco::pipeline {

/// What a replay did so far (summed or maximised over processes by distributed engines).
struct ReplayStats {
  double elapsed_s = 0;        ///< wall time since the replayer was opened (the caller's clock)
  double grad_bytes = 0;       ///< fp32 gradient bytes processed, all processes together
  double peak_task_bytes = 0;  ///< largest estimated bytes of layers running at once in one process
  unsigned peak_tasks = 0;     ///< most layers running at once in one process
};

/// Replays the windows of one source, in order (state carries within bursts, sim/replay.hpp).
class WindowReplayer {
 public:
  virtual ~WindowReplayer() = default;
  /// sim::Replay::run_window's contract: the measurements of every layer of the source, in the
  /// source's layer order. Throws what the replay throws (from whichever process hit it).
  virtual sim::WindowMeasure run_window(const sim::Window& w, const std::vector<kernels::MethodSpec>& in_force,
                                        bool continues) = 0;
  /// Totals so far.
  virtual ReplayStats stats() const = 0;
  /// How the work was laid out over processes, for provenance (null for one process).
  virtual Json layout() const { return nullptr; }
};

/// Opens replayers: sim::Replay's constructor, possibly elsewhere.
class ReplayEngine {
 public:
  virtual ~ReplayEngine() = default;
  /// A replayer of `source` measuring `candidates` (one set per layer, or none) with `options`.
  virtual std::unique_ptr<WindowReplayer> open(const sim::GradientSource& source, std::vector<sim::CandidateSet> candidates,
                                               const sim::ReplayOptions& options) const = 0;
};

/// The engine of one process: sim::Replay with options.threads threads.
const ReplayEngine& local_engine();

/// `engine` when given, else local_engine().
inline const ReplayEngine& engine_or_local(const ReplayEngine* engine) { return engine ? *engine : local_engine(); }

}  // namespace lgreco::pipeline
