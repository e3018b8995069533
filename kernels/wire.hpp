#pragma once
/// Wire sizes: the bytes each worker sends per step for one layer, and the collective that carries
/// them. The one home of every wire-size formula in lgreco (planner, simulator, replay, CLI and the
/// Python package all get their byte counts from here).
///
/// Every size is a function of the method, the tensor's shape and the training step only, never of
/// the data: a collective carries a fixed-size payload. Encodings whose code length depends on the
/// values (top-k "delta", QSGD "elias", DGC's sampled selection) are packed into their worst-case
/// length for the shape; the length of the code itself is reported separately by the compressors
/// (CompressInfo::coded_bytes), as what a variable-size transport would carry.
///
/// N = numel = product of the shape (the empty shape is a scalar, N = 1); matrix view
/// n = shape[0] (1 for a scalar), m = N / n. Per method:
///   none       4N                                                                allreduce
///   fp16/bf16  2N                                                                allreduce
///   powersgd   r_eff = min(n, m, rank); compressed iff r_eff ≥ 1 and (n+m)·r_eff·rate < n·m, or
///              rank == 0 and N > 0 (sends nothing). Compressed: q·4·r_eff·n in round 0 (P) +
///              q·4·r_eff·m in round 1 (Q), q = power iterations (each allreduces P and Q once;
///              q = 1 is the PyTorch hook); else 4N in round 0                 allreduce
///   topk       k = N == 0 ? 0 : max(1, ceil(d·N)), d = topk_density_at(params, step) (the target
///              density when there is no DGC warm-up or in the steady state); pairs 8k; bitmap
///              ceil(N/8) + 4k; delta 4k + ceil(G(N, k)/8) with G the largest Elias-gamma length
///              of k increasing indices in [0, N) (delta_bound_bits); auto = min(pairs, bitmap),
///              ties → pairs. DGC selection keeps k' ≤ k entries and pads to k.     allgather
///   randomk    4k (indices come from the shared seed)                           allreduce
///   qsgd       ceil(N·w/8) + 4·ceil(N/bucket); fixed: w = ceil(log2(2s+1)); elias: w =
///              2·floor(log2(s+1)) + 2, the longest code (gamma_len(ξ+1) + sign bit, ξ ≤ s), so
///              Elias is never smaller on the wire than fixed width         allgather
///   maxmin     N < 16: 4N (raw); else ceil(bits·N/8) + 8·ceil(N/bucket)          allgather
///   sign       ceil(N/8) + 4·ceil(N/bucket)                                      allgather
///   terngrad   ceil(2N/8) + 4                                                    allgather
///   nuqsgd     ceil(N·(1 + ceil(log2(s+2)))/8) + 4·ceil(N/bucket)                allgather
/// where gamma_len(g) = 2·floor(log2 g) + 1 for g ≥ 1 (Elias gamma).
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/int_math.hpp"
#include "kernels/method.hpp"

namespace lgreco::kernels {

/// Bytes on the wire for one layer and step, split by collective.
struct WireSize {
  std::uint64_t bytes = 0;                         ///< total = rounds[0] + rounds[1] + allgather
  Collective collective = Collective::kAllreduce;  ///< the collective carrying the payload
  std::array<std::uint64_t, 2> allreduce_round_bytes{};  ///< PowerSGD P (round 0) and Q (round 1)
  std::uint64_t allgather_bytes = 0;               ///< payload of one worker in the allgather
};

/// The one matrix view of a tensor (PowerSGD's, and every "is it a matrix" question):
/// n = shape[0] (1 for a scalar), m = N / n, r_eff = min(n, m, rank).
struct MatrixView {
  std::int64_t n = 0;       ///< rows
  std::int64_t m = 0;       ///< columns
  std::int64_t r_eff = 0;   ///< min(n, m, rank)
  bool compressed = false;  ///< the compressibility rule (see above)
};

/// Everything about a layer's transfer that the method, the shape and the step decide: the sizes
/// and the resolved quantities an implementation needs to produce exactly those sizes.
struct WirePlan {
  WireSize size;
  MatrixView view;                              ///< powersgd: the matrix view and rule
  std::uint64_t k = 0;                          ///< topk / randomk: entries on the wire
  TopkEncoding encoding = TopkEncoding::kAuto;  ///< topk: the encoding used (never kAuto)
  bool raw = false;                             ///< sent as fp32 values (none, maxmin N < 16, powersgd uncompressed)
  int code_bits = 0;                            ///< quantisers: bits per element on the wire (QSGD Elias: the longest code)
};

/// A range of training steps [from_step, to_step) over which a layer's wire plan is constant
/// (top-k's DGC warm-up changes k every `warmup_steps`; every other method has one stage).
struct WireStage {
  std::uint64_t from_step = 0;
  std::optional<std::uint64_t> to_step;  ///< nullopt = open
  WirePlan plan;
};

/// Elias-gamma code length of g ≥ 1: 2·floor(log2 g) + 1 bits.
constexpr std::uint64_t elias_gamma_bits(std::uint64_t g) { return 2u * static_cast<std::uint64_t>(floor_log2(g)) + 1u; }

/// The number of elements of a shape, for the formulas above; ConfigError naming the shape when
/// the product is negative or overflows.
std::uint64_t wire_numel(std::span<const std::int64_t> shape);

/// The matrix view and PowerSGD's compressibility rule for a tensor of `shape` under `p`.
MatrixView powersgd_view(std::span<const std::int64_t> shape, const PowerSgdParams& p);

/// k of top-k / random-k: N == 0 ? 0 : max(1, ceil(density·N)) (ceil in double, clamped ≤ N).
std::uint64_t sparse_k(std::uint64_t numel, double density);

/// DGC's warm-up density of top-k at training step t (the trace's step id):
///   W = warmup_steps = 0:  d(t) = density
///   W > 0:                 d(t) = max(density, 0.25·4^(−floor(t / W)))   (4^(−j) exact in double)
/// i.e. stages of W steps at 25 %, 6.25 %, 1.5625 %, 0.390625 %, … while that is above the target,
/// then the target density for good (target 0.1 %: five distinct densities; target ≥ 25 %: none).
double topk_density_at(const TopkParams& p, std::uint64_t step);

/// Top-k payload bytes for a concrete encoding (not kAuto); `delta_bits` only used by kDelta.
std::uint64_t topk_bytes(TopkEncoding enc, std::uint64_t numel, std::uint64_t k, std::uint64_t delta_bits = 0);

/// The encoding kAuto picks: pairs unless bitmap is strictly smaller.
TopkEncoding topk_auto_encoding(std::uint64_t numel, std::uint64_t k);

/// Σ gamma_len of the index gaps of strictly increasing indices (first gap = idx0 + 1).
std::uint64_t delta_gamma_bits(std::span<const std::uint32_t> sorted_indices);

/// The largest delta_gamma_bits of any k strictly increasing indices in [0, N) (k ≤ N): gaps as
/// equal as possible (powers of two p and p+1, p = floor(log2(N/k))), which maximises Σ floor(log2 g)
/// under Σ g ≤ N.
std::uint64_t delta_bound_bits(std::uint64_t numel, std::uint64_t k);

/// Code width of QSGD with s levels: ceil(log2(2s + 1)) bits.
int qsgd_code_bits(int levels);

/// The longest Elias-coded QSGD element: gamma_len(s + 1) + 1 sign bit = 2·floor(log2(s+1)) + 2.
int qsgd_elias_max_bits(int levels);

/// Code width of NUQSGD with s levels: 1 + ceil(log2(s + 2)) bits.
int nuqsgd_code_bits(int levels);

/// The wire plan at training step `step`, or in the steady state (top-k at its target density,
/// after any warm-up) when `step` is nullopt.
WirePlan wire_plan(const MethodSpec& spec, std::span<const std::int64_t> shape, std::optional<std::uint64_t> step = std::nullopt);

/// wire_plan(...).size.
WireSize wire_size(const MethodSpec& spec, std::span<const std::int64_t> shape, std::optional<std::uint64_t> step = std::nullopt);

/// The stages of the wire plan over steps [from_step, to_step) (to_step nullopt = open): one stage
/// for every method except top-k during a DGC warm-up, which gets one per density.
std::vector<WireStage> wire_stages(const MethodSpec& spec, std::span<const std::int64_t> shape, std::uint64_t from_step,
                                   std::optional<std::uint64_t> to_step);

}  // namespace lgreco::kernels
