#pragma once
/// CUDA sparsification: exact top-k by radix select, random-k, gather/scatter and the delta
/// encoding size — the same names and results as kernels/cpu/topk.hpp, on device pointers.
///
/// Radix select (the CPU reference's digits: bits [31:21], [20:10], [9:0] of the 32-bit key):
///   pass 1  histogram of digit 1 over all N keys (block-shared bins, one tile of 4096 keys per block);
///   select  one block finds the digit holding the k-th largest key (suffix sums of the bins);
///   pass 2  one block per tile of 4096 keys: counts the keys whose digit 1 is above, appends the
///           keys whose digit 1 matches (key, index) to a candidate buffer;
///   digits 2 and 3 are resolved on the candidates only (histogram + select each), giving the
///   threshold T = the k-th largest key and need = k − #{key > T};
///   per-tile counts of the candidates above T and equal to T, one block scans the tiles;
///   pass 3  one block per tile writes, in index order, every key > T and the equal keys whose
///           rank among the equal keys (in index order) is < need: ties go to the lower index,
///           indices come out strictly increasing, exactly as cpu::topk_exact.
/// DRAM traffic ≈ 3 reads of the keys + the candidates (8 bytes each) + 4k bytes of output.
/// No host synchronisation: counts stay on the device (k is known on the host).
///
/// Workspace: topk_workspace_bytes(N) bytes of device memory, reusable across calls on one stream.
/// Keys: top-k uses cpu::abs_key(x); random-k uses ~rng::bits_at(seed, stream, i), so the k
/// smallest random words (ties → lower index) are the k largest complemented keys.
#include <cstddef>
#include <cstdint>

#include "kernels/cpu/topk.hpp"
#include "kernels/cuda/device.hpp"

namespace lgreco::kernels::cuda {

/// The k-th largest key and how many keys are strictly greater (device-resident result).
struct KthKeyResult {
  std::uint32_t key;            ///< T
  std::uint32_t count_greater;  ///< #{i : key_i > T} (< k)
};

/// Device workspace bytes for inputs of up to `n` elements.
std::size_t topk_workspace_bytes(std::uint64_t n);

/// k-th largest abs_key of x (1 ≤ k ≤ n) into `result` (device).
void radix_select_abs(const float* x, std::uint64_t n, std::uint64_t k, KthKeyResult* result, void* workspace, Stream s);

/// k-th largest of arbitrary 32-bit keys (1 ≤ k ≤ n) into `result` (device).
void radix_select_keys(const std::uint32_t* keys, std::uint64_t n, std::uint64_t k, KthKeyResult* result,
                       void* workspace, Stream s);

/// Exact top-k of |x|: the k selected indices, increasing, into `indices` (device, k entries).
/// k = 0 or n = 0 writes nothing. Requires k ≤ n. `result` (device, optional) receives T.
void topk_exact(const float* x, std::uint64_t n, std::uint64_t k, std::uint32_t* indices, void* workspace, Stream s,
                KthKeyResult* result = nullptr);

/// DGC selection exactly as cpu::topk_dgc (same sample, threshold adjustments and truncation):
/// writes the selected indices (increasing) and their number into `*kept` (host), returns the final
/// threshold. The adjustment loop runs on the host with one device count per step (up to
/// max_adjustments + 1 synchronisations): DGC's threshold is data dependent by design.
float topk_dgc(const float* x, std::uint64_t n, std::uint64_t k, std::uint64_t seed, std::uint64_t stream,
               const cpu::DgcSampling& sampling, std::uint32_t* indices, std::uint64_t* kept, void* workspace, Stream s);

/// Random-k indices (increasing) from (seed, stream): the k smallest bits_at words, ties → lower index.
void randomk_indices(std::uint64_t n, std::uint64_t k, std::uint64_t seed, std::uint64_t stream, std::uint32_t* indices,
                     void* workspace, Stream s);

/// values[j] = x[indices[j]].
void gather(const float* x, const std::uint32_t* indices, std::uint64_t k, float* values, Stream s);

/// out = 0 (n entries) except out[indices[j]] = values[j]·scale (scale 1 writes the values as they are).
void scatter(const std::uint32_t* indices, const float* values, std::uint64_t k, float scale, float* out,
             std::uint64_t n, Stream s);

/// Σ gamma_len of the gaps of increasing indices (first gap = idx0 + 1) into `bits` (device uint64).
void delta_gamma_bits(const std::uint32_t* sorted_indices, std::uint64_t k, std::uint64_t* bits, Stream s);

}  // namespace lgreco::kernels::cuda
