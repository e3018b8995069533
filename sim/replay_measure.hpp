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

/// The bytes a schedule running `spec` sends, given what a compression reported: the formula for
/// data-independent sizes (kernels::wire_size), the measured size for data-dependent ones and for
/// top-k with a warm-up (whose size depends on the step: the compression's step density).
double candidate_bytes(const kernels::MethodSpec& spec, std::span<const std::int64_t> shape, std::uint64_t numel,
                       const kernels::CompressInfo* measured);

}  // namespace lgreco::sim
