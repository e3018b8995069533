#pragma once
/// Replay: runs recorded gradients through the compression kernels, window by window.
///
/// For one window and every layer (layers in parallel, one task per layer, largest first):
/// 1. the setting in force (`in_force[layer]`, the schedule that would really run) is applied to
///    each step of the window with error feedback (kernels::ErrorFeedback: acc_t = g_t + e_t;
///    c_t = C(acc_t); e_{t+1} = acc_t − c_t) and PowerSGD's warm start; state is reset at the start
///    of a burst and carried to the next window within a burst (sim/replay_windows.hpp);
/// 2. every candidate of the layer is measured as L-GreCo does (ErrorMode):
///    - kPower: on A = (1/a) Σ acc_t over the window's last a = Window::acc_steps steps,
///      error = ‖A − C(A)‖_F, with PowerSGD approximated by `measure_iterations` (5) subspace
///      iterations from the seeded random start (no warm start; seed = ReplayOptions::seed);
///    - kExact: as kPower, but PowerSGD candidates use the singular values of A:
///      error(k) = sqrt(Σ_{i > r_eff} σ_i²) (the best rank-r_eff approximation, Eckart–Young);
///    - kTrajectory: each candidate runs over the window's steps with its own copy of the residual
///      and warm start in force at the window's start; error = mean over the last a steps of the
///      per-step ‖acc_t − C(acc_t)‖_F, the error the layer would really see under that setting.
///      (Rows are re-read from the source for each candidate: memory stays at a few layer buffers.)
///    bytes = the candidate's steady-state wire bytes per step (kernels/wire.hpp: every size is fixed
///    by the shape; top-k's DGC warm-up stages are the schedule's business, not the tables').
/// Memory: each running task holds ≈ 5 buffers of its layer (g, acc, c, e, A) plus the kernels'
/// scratch; carried state (e, Q) is kept only for layers whose burst continues into the next window.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/compressor.hpp"
#include "sim/replay_candidates.hpp"
#include "sim/replay_source.hpp"
#include "sim/replay_windows.hpp"

namespace lgreco::sim {

/// How candidate errors are measured (see the file comment).
enum class ErrorMode { kPower, kExact, kTrajectory };

/// Estimated bytes one running layer task holds: 8 fp32 buffers of the layer (g, acc, c, e, A, the
/// kernels' scratch, the stored row and decompression scratch of the two-phase read). Measured:
/// GPT-2's wte task peaks at 7.4 × its fp32 size including the process (docs/performance.md).
inline double layer_task_bytes(std::uint64_t numel) { return 8.0 * 4.0 * static_cast<double>(numel); }

/// Parses "power|exact|trajectory"; ConfigError otherwise.
ErrorMode error_mode_from_name(const std::string& name);
/// The mode's name.
std::string to_string(ErrorMode m);

/// Progress of a replay, reported after each finished layer task.
struct ReplayProgress {
  std::size_t window = 0;         ///< current window (0-based)
  std::size_t windows = 0;        ///< windows in this run
  std::size_t layers_done = 0;    ///< layers finished in the current window
  std::size_t layers_total = 0;   ///< layers per window
  double grad_bytes = 0;          ///< fp32 gradient bytes processed so far (all windows)
  double elapsed_s = 0;           ///< wall time since the replay object was created
};

/// Replay settings.
struct ReplayOptions {
  ErrorMode mode = ErrorMode::kPower;
  int measure_iterations = 5;               ///< PowerSGD subspace iterations in kPower mode
  std::uint64_t seed = 0;                   ///< run seed (rng streams, measurement start)
  unsigned threads = 1;                     ///< worker threads (see resolve_threads)
  /// Layers run concurrently only while their estimated buffers (layer_task_bytes) fit in this
  /// many bytes together; a layer larger than the limit runs alone. 0 = no limit.
  double memory_limit_bytes = 0;
  kernels::Backend backend = kernels::Backend::kCpu;
  std::size_t windows_total = 0;            ///< for progress reports only
  std::function<void(const ReplayProgress&)> progress;  ///< called serialised, from worker threads
};

/// One measured candidate.
struct CandidateMeasure {
  kernels::MethodSpec spec;   ///< the setting as a schedule would run it
  double error = 0;           ///< ‖A − C(A)‖_F (or the per-step mean in trajectory mode)
  double bytes = 0;           ///< wire bytes per worker per step
  Collective collective = Collective::kAllreduce;
};

/// One layer in one window.
struct LayerWindow {
  std::vector<CandidateMeasure> candidates;  ///< empty when the layer had no candidate set
  int default_index = 0;
  kernels::MethodSpec applied;       ///< the setting in force during the window
  double applied_bytes_per_step = 0; ///< mean wire bytes per step the kernels reported for it
  double applied_error_per_step = 0; ///< mean ‖acc_t − c_t‖_F over the window's steps
  std::vector<std::uint64_t> step_bytes;  ///< per step of the window: wire bytes the kernels reported
  std::vector<double> step_error;    ///< per step of the window: ‖acc_t − c_t‖_F
  kernels::WireSize applied_wire;    ///< wire split of the window's last step (for the timeline)
};

/// The result of one window.
struct WindowMeasure {
  Window window;
  std::vector<LayerWindow> layers;   ///< in the source's layer order
};

/// Replays a source window by window; windows must be run in order (state carries within bursts).
class Replay {
 public:
  /// `candidates` has one set per layer, or is empty to measure nothing (only the in-force run).
  Replay(const GradientSource& source, std::vector<CandidateSet> candidates, ReplayOptions options);

  /// Runs window `w` with `in_force[layer]` applied; `continues` says whether the next window to be
  /// run continues this burst (state is then kept for it). Throws Cancelled between steps/layers.
  WindowMeasure run_window(const Window& w, const std::vector<kernels::MethodSpec>& in_force, bool continues);

  /// fp32 gradient bytes processed so far.
  double grad_bytes() const { return grad_bytes_.load(); }
  /// Seconds since construction.
  double elapsed_s() const;
  /// The options in use.
  const ReplayOptions& options() const { return options_; }
  /// Largest sum of layer_task_bytes of layers that ran at the same time, and their count.
  double peak_task_bytes() const { return peak_task_bytes_; }
  unsigned peak_tasks() const { return peak_tasks_; }

 private:
  LayerWindow run_layer(std::size_t layer, const Window& w, const kernels::MethodSpec& spec, bool continues);

  const GradientSource& source_;
  std::vector<CandidateSet> candidates_;
  ReplayOptions options_;
  std::vector<kernels::LayerState> carried_;  ///< per layer; empty residual = nothing carried
  std::atomic<double> grad_bytes_{0};
  double start_s_ = 0;
  std::size_t windows_done_ = 0;
  double peak_task_bytes_ = 0;
  unsigned peak_tasks_ = 0;
};

/// Resolves "auto|cpu|cuda": auto picks CUDA when a CUDA backend and a device are present, else the
/// CPU; "cuda" throws CudaUnavailable with a clear message when it cannot run.
kernels::Backend resolve_backend(const std::string& name);

}  // namespace lgreco::sim
