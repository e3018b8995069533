#pragma once
/// Wire sizes: bytes each worker sends per step for one layer, and the collective that carries them.
///
/// N = numel, shape[0] = n (1-D and scalar tensors: n = N), m = N / n. All sizes are exact:
///   none       4N                                             allreduce
///   fp16/bf16  2N                                             allreduce
///   powersgd   r_eff = min(n, m, rank); compressed iff r_eff ≥ 1 and (n+m)·r_eff·rate < n·m, or
///              rank == 0 and N > 0 (sends nothing).
///              compressed: q·4·r_eff·n in round 0 (P) + q·4·r_eff·m in round 1 (Q), q = power
///              iterations (each iteration allreduces P and Q once; q = 1 is the PyTorch hook);
///              else 4N in round 0                                               allreduce
///   topk       k = N == 0 ? 0 : max(1, ceil(density·N)); pairs 8k; bitmap ceil(N/8) + 4k;
///              delta 4k + ceil(Σ gamma_len(gap)/8), gaps = idx0 + 1, idx_j − idx_{j−1};
///              auto = min(pairs, bitmap), ties → pairs. DGC selection sends k' ≤ k entries
///              (k' = entries actually kept) with the same formulas. With warm-up
///              (warmup_steps W > 0) k is taken at the step's density d(t) =
///              topk_density_at(params, t) (below), so the bytes of step t are the formulas
///              with k(t) = max(1, ceil(d(t)·N)); momentum correction does not change the size.
///                                                                              allgather
///   randomk    4k (indices come from the shared seed)                           allreduce
///   qsgd       fixed: ceil(N·ceil(log2(2s+1))/8) + 4·ceil(N/bucket); elias: ceil(B/8) +
///              4·ceil(N/bucket), B = Σ_i gamma_len(ξ_i + 1) + [ξ_i ≠ 0] (ξ = level magnitude,
///              one sign bit for non-zero levels)                                allgather
///   maxmin     N < 16: 4N (raw); else ceil(bits·N/8) + 8·ceil(N/bucket)          allgather
///   sign       ceil(N/8) + 4·ceil(N/bucket)                                      allgather
///   terngrad   ceil(2N/8) + 4                                                    allgather
///   nuqsgd     ceil(N·(1 + ceil(log2(s+2)))/8) + 4·ceil(N/bucket)                allgather
/// where gamma_len(g) = 2·floor(log2 g) + 1 for g ≥ 1 (Elias gamma).
#include <array>
#include <cstdint>
#include <span>

#include "kernels/method.hpp"

namespace lgreco::kernels {

/// Bytes on the wire for one layer and step, split by collective.
struct WireSize {
  std::uint64_t bytes = 0;                         ///< total = rounds[0] + rounds[1] + allgather
  Collective collective = Collective::kAllreduce;  ///< the collective carrying the payload
  std::array<std::uint64_t, 2> allreduce_round_bytes{};  ///< PowerSGD P (round 0) and Q (round 1)
  std::uint64_t allgather_bytes = 0;               ///< payload of one worker in the allgather
};

/// PowerSGD's matrix view of a tensor: n = shape[0] (N for 1-D/scalar), m = N / n, r_eff.
struct MatrixView {
  std::int64_t n = 0;       ///< rows
  std::int64_t m = 0;       ///< columns
  std::int64_t r_eff = 0;   ///< min(n, m, rank)
  bool compressed = false;  ///< the compressibility rule (see above)
};

/// ceil(a / b) for b > 0.
constexpr std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

/// ceil(log2(x)) for x ≥ 1 (0 for x = 1).
constexpr int ceil_log2(std::uint64_t x) {
  int b = 0;
  while ((std::uint64_t{1} << b) < x) ++b;
  return b;
}

/// floor(log2(x)) for x ≥ 1.
constexpr int floor_log2(std::uint64_t x) {
  int b = -1;
  while (x) {
    x >>= 1;
    ++b;
  }
  return b;
}

/// Elias-gamma code length of g ≥ 1: 2·floor(log2 g) + 1 bits.
constexpr std::uint64_t elias_gamma_bits(std::uint64_t g) { return 2u * static_cast<std::uint64_t>(floor_log2(g)) + 1u; }

/// PowerSGD's matrix view and compressibility rule; shape empty means 1-D of `numel`.
MatrixView powersgd_view(std::span<const std::int64_t> shape, std::uint64_t numel, const PowerSgdParams& p);

/// k of top-k / random-k: N == 0 ? 0 : max(1, ceil(density·N)) (ceil computed in double, clamped ≤ N).
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

/// Code width of QSGD with s levels: ceil(log2(2s + 1)) bits.
int qsgd_code_bits(int levels);

/// Code width of NUQSGD with s levels: 1 + ceil(log2(s + 2)) bits.
int nuqsgd_code_bits(int levels);

/// The wire size of a method for a tensor, exact for every data-independent case. For topk with
/// encoding kDelta, topk with DGC selection and qsgd with Elias encoding the size depends on the
/// data: this returns an estimate (full k with pairs for delta, auto for DGC, the fixed code width
/// for Elias) and CompressInfo::wire carries the exact figure of a compression.
/// This form is the steady state: top-k at its target density (after any warm-up).
WireSize wire_size(const MethodSpec& spec, std::span<const std::int64_t> shape, std::uint64_t numel);

/// The wire size at training step `step`: as above, with top-k's k at topk_density_at(step).
WireSize wire_size(const MethodSpec& spec, std::span<const std::int64_t> shape, std::uint64_t numel,
                   std::uint64_t step);

}  // namespace lgreco::kernels
