#pragma once
/// Building a StepModel and per-layer LayerComm from a model description.
///
/// Compute (FLOP estimate, when no measured compute_time_s): forward FLOPs of a tensor
/// ≈ 2 · numel · uses_per_sample · batch, backward ≈ 2 × forward, at `achieved_fraction` of the
/// GPU's dense 16-bit peak: backward_s = 4 · numel · uses · batch / (achieved_fraction · peak).
///
/// Method → LayerComm (the wire-byte formulas of the shared method table; this is a local mapping
/// until the kernels' wire-size function is wired in): allreduce methods put their bytes in
/// allreduce_bytes (PowerSGD: P in round 0, Q in round 1), allgather methods in allgather_bytes.
/// Kernel times: compression reads the gradient and the error-feedback buffer and writes both
/// (16·N bytes of memory traffic), decompression reads the payload of all ranks and writes 4·N:
///   compress_s = 16·N / mem_Bps (+ PowerSGD's 4·N·r_eff flops / (achieved · peak)),
///   decompress_s = (4·N + ranks·wire) / mem_Bps for allgather methods, 8·N / mem_Bps otherwise;
/// "none" costs no kernel time.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/timeline.hpp"

namespace lgreco::sim {

/// One parameter tensor.
struct LayerSpec {
  std::string name;
  std::vector<std::int64_t> shape;
  std::int64_t uses_per_sample = 1;
  std::uint64_t numel() const;
};

/// A compression method and its parameters ("powersgd:rank=4,min_compression_rate=2").
struct MethodSpec {
  std::string method = "none";
  std::map<std::string, double> params;
};

/// Parses "name[:key=value,...]"; ConfigError for unknown methods or parameters.
MethodSpec parse_method(const std::string& text);

/// The GPU side of the cost: dense peak, achieved fraction, memory bandwidth.
struct DeviceModel {
  double dense_peak_flops = 312e12;
  double achieved_fraction = 0.4;
  double memory_Bps = 1.555e12;
};

/// Per-layer backward times from the FLOP estimate above.
std::vector<double> flop_backward_s(const std::vector<LayerSpec>& layers, std::int64_t batch, const DeviceModel& d);

/// One layer's payload and kernel times under `m` with `ranks` workers.
LayerComm layer_comm(const LayerSpec& layer, const MethodSpec& m, int ranks, const DeviceModel& d);

/// A StepModel in DDP form: forward = half the backward total, backward order = reverse parameter
/// order, DDP buckets (ddp_buckets on 4·numel bytes), no optimizer time unless given.
StepModel ddp_step_model(const std::vector<LayerSpec>& layers, const std::vector<double>& backward_s, double optimizer_s = 0);

}  // namespace lgreco::sim
