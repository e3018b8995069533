#pragma once
/// The model side of a one-step simulation (`lgreco simulate`) as a planner window with one
/// candidate per layer, so that its prediction is planner::predict_step like every other: from a
/// model preset, a trace or a layers file, with every layer's setting from a uniform method or a
/// schedule phase.
#include <optional>
#include <string>

#include "kernels/method.hpp"
#include "pipeline/predict.hpp"
#include "planner/schedule.hpp"
#include "planner/tables.hpp"

namespace lgreco::pipeline {

/// A model to simulate.
struct StepInputs {
  std::string model;                  ///< preset or trace model name, or the layers file
  planner::Window window;             ///< layers with one candidate each ("none" until a setting is applied)
  std::optional<FlopSpec> flops;      ///< a layers file's FLOP information
  std::string bucket_source;          ///< "ddp" (PyTorch's assignment), "trace" or "schedule"
};

/// A built-in preset: DDP buckets (25 MiB cap, first 1 MiB), backward order the reverse of the
/// parameters; no recorded compute times.
StepInputs inputs_from_preset(const std::string& name);
/// A trace: its buckets and backward order, each layer's mean recorded compute time (when the trace
/// has them). InputError naming the file and layer for a non-finite or negative time.
StepInputs inputs_from_trace(const std::string& path);
/// A layers file {"batch_per_gpu": B, "tensors": [{"name", "shape", "uses_per_sample"}]} in
/// model.parameters() order: DDP buckets, FLOP information for the estimate.
StepInputs inputs_from_layers(const std::string& path);
/// The same from a parsed document; errors name `origin` and the field.
StepInputs inputs_from_layers_json(const Json& doc, const std::string& origin);

/// Every layer at `m`.
void set_uniform(StepInputs& in, const kernels::MethodSpec& m);
/// Every layer at its setting in phase `phase` of `s` (−1: the last), read from `origin`; the
/// schedule's bucket plan replaces the model's when it has one. ConfigError naming the file and
/// the parameter when a layer is missing or unknown; UsageError for a phase index out of range.
/// Returns the phase index used.
int set_phase(StepInputs& in, const planner::Schedule& s, int phase, const std::string& origin);

}  // namespace lgreco::pipeline
