#pragma once
/// Measurement of candidates on one matrix A (power and exact modes of sim/replay.hpp).
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/compressor.hpp"
#include "sim/replay.hpp"

namespace lgreco::sim {

/// ‖a − b‖_F with double accumulation.
double frobenius_distance(std::span<const float> a, std::span<const float> b);

/// The measurement setting of a candidate in kPower/kExact mode: PowerSGD runs `iterations`
/// subspace iterations from the seeded start (warm start off, seed = `seed`); others unchanged.
kernels::MethodSpec measurement_spec(const kernels::MethodSpec& candidate, int iterations, std::uint64_t seed);

/// Measures every candidate on A (numel = product of shape). `ctx` keys random streams (step =
/// the window's last step; top-k with a warm-up uses that step's density). `scratch` has A's size. In kExact mode PowerSGD errors come from the
/// exact best-rank errors of A (kernels::cpu::exact_rank_errors), computed once for all ranks.
std::vector<CandidateMeasure> measure_on_matrix(std::span<const float> a, std::span<const std::int64_t> shape,
                                                const std::vector<kernels::MethodSpec>& candidates, ErrorMode mode,
                                                const ReplayOptions& options, const kernels::LayerContext& ctx,
                                                std::span<float> scratch);

/// The bytes per step of a candidate in the tables: its steady-state wire size (kernels::wire_size;
/// top-k's DGC warm-up stages are in the schedule's wire stages, not in the tables).
double candidate_bytes(const kernels::MethodSpec& spec, std::span<const std::int64_t> shape);

}  // namespace lgreco::sim
