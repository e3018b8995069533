#pragma once
/// CPU reference of sparsification: exact top-k by radix select, DGC sampled threshold, random-k.
///
/// Keys: the magnitude key of x is its bit pattern with the sign cleared, abs_key(x) =
/// bits(x) & 0x7FFFFFFF. For finite x (and denormals) it is monotone in |x|; −0 and +0 both give 0.
/// Inputs must be finite (checked by the Compressor, not here) and N < 2^32.
///
/// Radix select (k-th largest key, 1 ≤ k ≤ N): MSB-first over three digits of the 32-bit key,
/// bits [31:21] (11 bits), [20:10] (11 bits), [9:0] (10 bits). Pass 1 histograms digit 1 over all
/// elements and finds the digit of the k-th largest; pass 2 copies the elements whose digit 1
/// matches (the candidates, with their indices) and records the indices of those above it; the last
/// two digits are resolved on the candidates only. (For n ≥ 2^20 and k ≤ n/16 the CPU version first
/// keeps, in one vectorised pass, the keys at or above a bound taken from a strided sample, and runs
/// the select on that short list when it holds at least k keys; this changes the speed, never the
/// result.) Result: the exact k-th largest key, the same
/// |x| that std::nth_element(..., greater) puts at position k − 1.
///
/// Top-k selection and ties: every element with key > T (T = k-th largest key) and the
/// lowest-index elements with key == T until k are selected. Output indices are strictly increasing
/// (uint32); values are x[index] as given (sign kept).
#include <cstdint>
#include <span>
#include <vector>

#include "core/hd.hpp"

namespace lgreco::kernels::cpu {

/// Magnitude key of a float (see above).
LGRECO_HD_INLINE std::uint32_t abs_key(float x) {
  std::uint32_t b;
  __builtin_memcpy(&b, &x, sizeof b);
  return b & 0x7FFFFFFFu;
}

/// The k-th largest key and how many keys are strictly greater.
struct KthKey {
  std::uint32_t key = 0;          ///< T, the k-th largest key
  std::uint64_t count_greater = 0;  ///< #{i : key_i > T} (< k)
};

/// k-th largest abs_key of x by the radix select above; requires 1 ≤ k ≤ x.size().
KthKey radix_select_abs(std::span<const float> x, std::uint64_t k);

/// k-th largest of arbitrary 32-bit keys (same algorithm); requires 1 ≤ k ≤ keys.size().
KthKey radix_select_keys(std::span<const std::uint32_t> keys, std::uint64_t k);

/// Exact top-k of |x|: writes the k selected indices (increasing) into `indices` (resized to k).
/// k = 0 or N = 0 gives no indices. Requires k ≤ N. Two passes over x (see above).
void topk_exact(std::span<const float> x, std::uint64_t k, std::vector<std::uint32_t>& indices);

/// Parameters of DGC's sampled threshold (defaults follow the DGC paper / GRACE).
struct DgcSampling {
  double sample_fraction = 0.01;       ///< sample ≥ this fraction of N ...
  std::uint64_t min_sample = 1024;     ///< ... and at least this many (capped at N)
  int max_adjustments = 10;            ///< threshold adjustments
  double raise_factor = 1.3;           ///< too many selected (> 1.3·k): threshold × 1.3
  double lower_factor = 0.8;           ///< too few selected (< 0.8·k): threshold × 0.8
};

/// DGC selection with k target entries:
/// 1. sample S = min(N, max(min_sample, ceil(sample_fraction·N))) indices with replacement,
///    idx_j = (bits_at(seed, stream, j) · N) >> 32 (j = 0..S−1, stream = stream_of(step, layer));
/// 2. t = the k_s-th largest |x| of the sample, k_s = max(1, ceil(k·S/N)) (float);
/// 3. up to max_adjustments times: c = #{i : |x_i| > t}; if c > 1.3k: t ×= 1.3 (fp32); else if
///    c < 0.8k: t ×= 0.8; else stop;
/// 4. selected = {i : |x_i| > t}; if more than k, keep the k largest of them (ties → lower index).
/// Writes the selected indices (increasing; possibly fewer than k, possibly none when all |x| ≤ t)
/// and returns the final threshold t. k = 0 or N = 0 selects nothing.
float topk_dgc(std::span<const float> x, std::uint64_t k, std::uint64_t seed, std::uint64_t stream,
               const DgcSampling& sampling, std::vector<std::uint32_t>& indices);

/// Random-k indices shared by every rank: the k elements with the smallest
/// rng::bits_at(seed, stream, i) (ties → lower index), returned in increasing order. This is a
/// uniformly random k-subset up to ties of the 32-bit words. Requires k ≤ N.
void randomk_indices(std::uint64_t n, std::uint64_t k, std::uint64_t seed, std::uint64_t stream,
                     std::vector<std::uint32_t>& indices);

/// Gathers x[indices] into `values` (resized).
void gather(std::span<const float> x, std::span<const std::uint32_t> indices, std::vector<float>& values);

/// Writes a sparse reconstruction: out = 0 except out[indices[j]] = values[j] · scale.
void scatter(std::span<const std::uint32_t> indices, std::span<const float> values, float scale, std::span<float> out);

}  // namespace lgreco::kernels::cpu
