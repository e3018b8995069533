#pragma once
/// Exporters of schedules for the systems that apply them.
/// - torch-hook: the schedule itself, normalised (every method parameter explicit), which the
///   Python ScheduleHook reads;
/// - cgx: per phase, per parameter {"name", "bucket", "layer" (position in its bucket), "numel",
///   "bits", "bucket_size"} for torch_cgx's register_layer(bucket, layer, numel, bits,
///   bucket_size); maxmin → its bits and bucket size, none → 32 bits (CGX's "uncompressed");
///   every other method is refused with an error naming the parameter and phase;
/// - csv: one row per (phase, parameter): label,start_step,end_step,parameter,method,params.
#include <string>

#include "core/json_util.hpp"
#include "planner/schedule.hpp"

namespace lgreco::planner {

/// The torch-hook document.
Json export_torch_hook(const Schedule& s);
/// The CGX document; ConfigError for methods CGX cannot run or missing numel in the buckets.
Json export_cgx(const Schedule& s, Json provenance);
/// The CSV text (header line first; RFC 4180 quoting where needed).
std::string export_csv(const Schedule& s);

}  // namespace lgreco::planner
