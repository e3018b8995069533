#pragma once
// Inputs of `lgreco simulate`: the model's tensors and compute times (preset, trace or layers JSON)
// and the per-parameter methods and bucket plan (uniform --method or a planner schedule).
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "sim/step_builder.hpp"

namespace lgreco::cli {

/// The model side of a simulation.
struct SimModel {
  std::string name;                       ///< preset or trace model name
  std::vector<sim::LayerSpec> layers;     ///< model.parameters() order
  std::int64_t batch = 0;                 ///< samples per GPU (FLOP estimate)
  std::vector<double> measured_backward_s;  ///< per layer, mean of compute_time_s (empty: FLOP estimate)
  std::vector<int> backward_order;        ///< from the trace (empty: reverse parameter order)
  std::vector<std::vector<int>> buckets;  ///< from the trace (empty: DDP buckets)
  std::string compute_source = "flops";   ///< "flops" or "trace"
  std::string bucket_source = "ddp";      ///< "ddp", "trace" or "schedule"
};

/// A built-in preset (traces/presets.hpp) with the FLOP compute estimate.
SimModel model_from_preset(const std::string& name);
/// A trace: shapes, buckets and backward order; compute_time_s means when every layer has them,
/// else the FLOP estimate of the preset of the trace's model name (ConfigError naming the file when
/// there is none).
SimModel model_from_trace(const std::string& path);

/// A schedule's methods for one phase (index `phase`, -1 = last) keyed by parameter name, and its
/// bucket plan as layer ids when present. Every model parameter must appear in the phase.
struct SimSchedule {
  std::vector<sim::MethodSpec> methods;   ///< per layer
  std::vector<std::vector<int>> buckets;  ///< empty when the schedule has none
  int phase = 0;
  std::string label;
};
SimSchedule read_sim_schedule(const std::string& path, int phase, const SimModel& m);

}  // namespace lgreco::cli
