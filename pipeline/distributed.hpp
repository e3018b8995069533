#pragma once
/// Scale-out: one trace replayed by many processes (MPI ranks), planned once (docs/scale-out.md).
///
/// Rank 0 runs the command (the closed loop, the schedule replay) with a ReplayEngine whose
/// replayers spread the layers over every rank; the other ranks serve it. Per replayer:
/// 1. rank 0 splits the layers by estimated cost (layer_costs, split_layers) and broadcasts the
///    split, the candidate sets and the replay options; every rank opens the trace by its path
///    (read-only, on a shared file system) and keeps a sim::Replay over a LayerSubset of its own
///    layers (their global indices key the random streams: results are bit-identical);
/// 2. per window, rank 0 broadcasts the window and the settings in force for every layer, every rank
///    replays its layers with its threads, and rank 0 gathers the per-layer measurements into the
///    WindowMeasure one process would have made. What rank 0 does with them (tables, plans, the next
///    window's settings) is pipeline/loop.cpp's or pipeline/schedule_replay.cpp's code, unchanged:
///    the settings in force for window k+1 are in the broadcast that starts window k+1.
///
/// Failures: every rank answers every gather with its measurements or its exception (type and
/// message). Rank 0 throws the exception of the lowest failing rank (its own first), the command
/// unwinds (no output is committed), and the final broadcast carries that exception to every other
/// rank, which throws it too: every process prints the same one line and exits with the same code.
/// Every rank makes the same collective calls whatever fails, so no rank waits forever. Cancellation
/// (core/cancel.hpp: Ctrl-C, the SIGTERM a launcher sends) travels the same way.
///
/// Memory per rank: its own layers' replay buffers (sim::layer_task_bytes each, as many at once as
/// its threads and memory limit allow) and, on rank 0, the measurements of every layer (candidates ×
/// layers, small); no rank reads or holds another rank's layers.
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

#include "pipeline/comm.hpp"
#include "pipeline/window_replay.hpp"
#include "sim/replay.hpp"
#include "sim/replay_source.hpp"

namespace lgreco::pipeline {

/// Estimated replay cost of every layer, in byte-passes: sim::layer_task_bytes(numel) (the bytes a
/// running layer task holds: the memory limit's estimate) times the passes over the layer's data,
///   passes = rows + candidates × (trajectory ? rows : windows)
/// rows = the source's recorded steps (each is replayed once with the setting in force), candidates
/// = the layer's candidate count (0 when measuring nothing), windows = options.windows_total (at
/// least 1): a candidate costs one compression of the measurement matrix per window (power, exact)
/// or its own run over the window's rows (trajectory).
std::vector<double> layer_costs(const std::vector<sim::SourceLayer>& layers, std::size_t rows,
                                const std::vector<sim::CandidateSet>& candidates, const sim::ReplayOptions& options);

/// Layers assigned to ranks.
struct LayerSplit {
  std::vector<int> rank_of;                       ///< per layer
  std::vector<std::vector<std::size_t>> layers;   ///< per rank, ascending layer indices
  std::vector<double> cost;                       ///< per rank, sum of its layers' costs
  /// Balance: the largest rank cost over the mean (1 = perfect; ≥ largest layer cost / mean).
  double max_over_mean() const;
};

/// Longest-processing-time split: layers by decreasing cost (ties: lower index first), each to the
/// rank with the least cost so far (ties: lower rank). Deterministic; within 4/3 of the best
/// possible maximum. ranks ≥ 1; ranks without layers are allowed.
LayerSplit split_layers(const std::vector<double>& cost, int ranks);

/// Opens the source a worker rank replays (by default sim::open_trace_source).
using SourceOpener = std::function<std::unique_ptr<sim::GradientSource>(const std::filesystem::path&)>;

/// Runs `body` on rank 0 of `comm` with an engine spreading replays over every rank, while the other
/// ranks serve it. Every rank returns body's result; when body throws, every rank throws the same
/// exception type with the same message (see the file comment). Must be called by every rank.
/// Sources given to the engine must be files (GradientSource::path); the workers open the same
/// file with `open`.
int run_on_ranks(Communicator& comm, const std::function<int(const ReplayEngine&)>& body, const SourceOpener& open = {});

}  // namespace lgreco::pipeline
