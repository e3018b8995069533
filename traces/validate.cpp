#include "traces/validate.hpp"

#include <cmath>

#include "core/cancel.hpp"
#include "core/error.hpp"

namespace lgreco::traces {

LayerStats scan_layer(const TraceReader& reader, std::size_t layer) {
  const TraceLayer& l = reader.layers().at(layer);
  const std::int64_t piece = chunk_elements(l.numel, l.dtype);
  std::vector<float> buf(static_cast<std::size_t>(piece));
  LayerStats s;
  const std::size_t steps = reader.steps().size();
  for (std::size_t t = 0; t < steps; ++t) {
    double sumsq = 0;
    bool all_zero = true;
    for (std::int64_t off = 0; off < l.numel; off += piece) {
      throw_if_cancelled();
      const std::int64_t len = std::min(piece, l.numel - off);
      std::span<float> part(buf.data(), static_cast<std::size_t>(len));
      reader.read_range(layer, t, off, part);
      double local = 0, local_max = s.max_abs;
      for (const float v : part) {
        if (std::isnan(v)) {
          ++s.nan_count;
          all_zero = false;
        } else if (std::isinf(v)) {
          ++s.inf_count;
          all_zero = false;
        } else {
          const double a = std::fabs(static_cast<double>(v));
          local += a * a;
          local_max = std::max(local_max, a);
          if (v != 0.0f) all_zero = false;
        }
      }
      sumsq += local;
      s.max_abs = local_max;
    }
    const double norm = std::sqrt(sumsq);
    s.l2_norm_mean += norm;
    s.l2_norm_max = std::max(s.l2_norm_max, norm);
    if (all_zero) ++s.zero_steps;
  }
  if (steps > 0) s.l2_norm_mean /= static_cast<double>(steps);
  return s;
}

std::vector<LayerStats> scan_trace(const TraceReader& reader, const std::function<void(std::size_t)>& progress) {
  std::vector<LayerStats> out;
  out.reserve(reader.layers().size());
  for (std::size_t i = 0; i < reader.layers().size(); ++i) {
    out.push_back(scan_layer(reader, i));
    if (progress) progress(i);
  }
  return out;
}

ValidationReport validate_trace(const std::filesystem::path& path, const std::function<void(std::size_t)>& progress) {
  ValidationReport r;
  std::optional<TraceReader> reader;
  try {
    reader.emplace(path);
  } catch (const TraceError& e) {
    r.first_problem = e.what();
    return r;
  }
  r.structure_ok = true;
  r.layers = reader->layers();
  try {
    r.stats = scan_trace(*reader, progress);
  } catch (const TraceError& e) {
    r.first_problem = e.what();
    r.stats.clear();
    return r;
  }
  for (std::size_t i = 0; i < r.stats.size(); ++i) {
    const LayerStats& s = r.stats[i];
    if ((s.nan_count > 0 || s.inf_count > 0) && r.first_problem.empty()) {
      r.first_problem = reader->layer_context(i) + ": " + std::to_string(s.nan_count) + " NaN and " +
                        std::to_string(s.inf_count) + " Inf values";
    }
    if (s.zero_steps > 0) {
      r.warnings.push_back(reader->layer_context(i) + ": gradient is all zero at " + std::to_string(s.zero_steps) +
                           " of " + std::to_string(reader->steps().size()) + " steps");
    }
  }
  r.ok = r.first_problem.empty();
  return r;
}

}  // namespace lgreco::traces
