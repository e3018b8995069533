#pragma once
/// Building a StepModel and per-layer LayerComm from a model description.
///
/// Compute (FLOP estimate, when no measured compute_time_s): forward FLOPs of a tensor
/// ≈ 2 · numel · uses_per_sample · batch, backward ≈ 2 × forward, at `achieved_fraction` of the
/// GPU's dense 16-bit peak: backward_s = 4 · numel · uses · batch / (achieved_fraction · peak).
///
/// Method → LayerComm: bytes from kernels::wire_size (kernels/wire.hpp, the one source of wire
/// sizes): allreduce rounds in allreduce_bytes (PowerSGD: P in round 0, Q in round 1), allgather
/// payloads in allgather_bytes. Kernel times:
/// - with a device profile (kernels/profile.hpp) that lists the method: its compress + decompress
///   time T = overhead + 4·N / throughput, charged half before the collective (compress_s, on the
///   compute stream) and half after it (decompress_s); the even split is an assumption, the
///   profile only gives the sum;
/// - otherwise a memory-traffic estimate: compression reads the gradient and the error-feedback
///   buffer and writes both (16·N bytes), decompression reads the payload of all ranks and writes
///   4·N: compress_s = 16·N / mem_Bps (+ PowerSGD's 4·N·r_eff·q flops / (achieved · peak)),
///   decompress_s = (4·N + ranks·wire) / mem_Bps for allgather methods, 8·N / mem_Bps otherwise.
/// "none" costs no kernel time.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kernels/method.hpp"
#include "kernels/profile.hpp"
#include "sim/timeline.hpp"

namespace lgreco::sim {

/// One parameter tensor.
struct LayerSpec {
  std::string name;
  std::vector<std::int64_t> shape;
  std::int64_t uses_per_sample = 1;
  std::uint64_t numel() const;
};

/// A compression method with its resolved parameters (the kernels' type).
using MethodSpec = kernels::MethodSpec;

/// Parses "name[:key=value,...]" with kernels::parse_method; ConfigError for unknown methods or parameters.
MethodSpec parse_method(const std::string& text);

/// The GPU side of the cost: dense peak, achieved fraction, memory bandwidth.
struct DeviceModel {
  double dense_peak_flops = 312e12;
  double achieved_fraction = 0.4;
  double memory_Bps = 1.555e12;
};

/// Per-layer backward times from the FLOP estimate above.
std::vector<double> flop_backward_s(const std::vector<LayerSpec>& layers, std::int64_t batch, const DeviceModel& d);

/// One layer's payload and kernel times under `m` with `ranks` workers; `profile` may be null.
LayerComm layer_comm(const LayerSpec& layer, const MethodSpec& m, int ranks, const DeviceModel& d,
                     const kernels::DeviceProfile* profile = nullptr);

/// A StepModel in DDP form: forward = half the backward total, backward order = reverse parameter
/// order, DDP buckets (ddp_buckets on 4·numel bytes), no optimizer time unless given.
StepModel ddp_step_model(const std::vector<LayerSpec>& layers, const std::vector<double>& backward_s, double optimizer_s = 0);

}  // namespace lgreco::sim
