#pragma once
/// Full-content checks of a trace: per-layer statistics over every step (norms, NaN/Inf counts,
/// all-zero steps) and a validation verdict. Data are streamed chunk by chunk, so memory stays at
/// one chunk whatever the size of the layers.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "traces/reader.hpp"

namespace lgreco::traces {

/// Statistics of one layer over all steps. Norms are over finite values only.
struct LayerStats {
  std::int64_t nan_count = 0;   ///< NaN elements over all steps
  std::int64_t inf_count = 0;   ///< ±Inf elements over all steps
  std::int64_t zero_steps = 0;  ///< steps whose gradient is exactly zero everywhere
  double l2_norm_mean = 0;      ///< mean over steps of ‖g_t‖₂ (0 when T = 0)
  double l2_norm_max = 0;       ///< max over steps of ‖g_t‖₂
  double max_abs = 0;           ///< max |g| over all steps
};

/// Scans every step of one layer.
LayerStats scan_layer(const TraceReader& reader, std::size_t layer);
/// Scans every layer; `progress(layer)` is called after each layer when given.
std::vector<LayerStats> scan_trace(const TraceReader& reader, const std::function<void(std::size_t)>& progress = {});

/// The verdict of validate_trace.
struct ValidationReport {
  bool ok = false;
  std::string first_problem;          ///< one line naming file and dataset (empty when ok)
  bool structure_ok = false;          ///< the file opened and its structure is valid
  std::vector<TraceLayer> layers;     ///< layer table (when the structure is valid)
  std::vector<LayerStats> stats;      ///< per layer (when the structure is valid and the data could be read)
  std::vector<std::string> warnings;  ///< not errors: e.g. layers whose gradient is all zero at some step
};

/// Opens and fully reads `path`: structure errors, unreadable (corrupt) chunks and NaN/Inf values
/// make the trace invalid. Never throws TraceError (problems go to the report).
ValidationReport validate_trace(const std::filesystem::path& path,
                                const std::function<void(std::size_t)>& progress = {});

}  // namespace lgreco::traces
