#pragma once
/// A GradientSource reading a trace file (traces/ streaming reader): one (layer, step) row at a
/// time, decoded to fp32. Reads are serialised inside (the HDF5 library is not thread-safe); the
/// compression work of other threads continues meanwhile.
#include <filesystem>
#include <memory>

#include "sim/replay_source.hpp"

namespace lgreco::sim {

/// Opens and validates a trace; throws TraceError naming the file and what is wrong. The layers'
/// compute_time_s is the mean of the recorded per-step times when the trace has them.
std::unique_ptr<GradientSource> open_trace_source(const std::filesystem::path& path);

}  // namespace lgreco::sim
