#pragma once
/// Word-level code packing shared by the CUDA quantisers (host + device, standard library only),
/// so that the packing logic is also exercised on the host (tests/kernels/cuda_host_pack.cpp).
///
/// Layout (kernels/quant_math.hpp): element i's b-bit code at bits [i·b, i·b + b) of the code
/// array, little-endian; 32-bit word w holds bits [32w, 32w + 32). A word may hold codes of two
/// buckets when b·d is not a multiple of 32: such a word is "shared" by the buckets and is OR-ed
/// into a zeroed buffer by each of them; every other word is stored whole by the one writer.
#include <cstdint>

#include "core/hd.hpp"
#include "core/rng.hpp"

namespace lgreco::kernels::cuda::detail {

/// Builds code word w from the elements of [lo, hi) that overlap it. `op.random()` says whether
/// the method draws u_i = word_to_unit_float(bits_at(seed, stream, i)) (one Philox block serves
/// four consecutive elements); `op.code(x, stats, u)` encodes; `stats_of(i)` gives the scales of
/// element i's bucket. Adds `op.elias_len(code)` to `elias` for each element whose code starts in
/// this word (so that every element is counted once).
/// `x` is anything indexed by the element number: the gradient itself, or a bucket staged in shared
/// memory behind an offset accessor.
template <class Op, class X, class StatsOf>
LGRECO_HD_INLINE std::uint32_t make_word(const Op& op, const X& x, std::uint64_t w, std::uint64_t lo,
                                         std::uint64_t hi, int bits, StatsOf stats_of, std::uint64_t seed,
                                         std::uint64_t stream, std::uint64_t& elias) {
  const std::uint64_t b = static_cast<std::uint64_t>(bits);
  const std::uint64_t bit0 = w * 32u;
  std::uint64_t i0 = bit0 / b;
  std::uint64_t i1 = (bit0 + 32u + b - 1u) / b;
  if (i0 < lo) i0 = lo;
  if (i1 > hi) i1 = hi;
  std::uint32_t word = 0;
  std::uint64_t cached = ~std::uint64_t{0};
  rng::Block blk{};
  for (std::uint64_t i = i0; i < i1; ++i) {
    float u = 0.0f;
    if (op.random()) {
      if ((i >> 2) != cached) {
        cached = i >> 2;
        blk = rng::block_at(seed, stream, cached);
      }
      u = rng::word_to_unit_float(blk.v[i & 3u]);
    }
    const std::uint32_t c = op.code(x[i], stats_of(i), u);
    const std::int64_t off = static_cast<std::int64_t>(i * b) - static_cast<std::int64_t>(bit0);
    if (off >= 0) {
      word |= c << off;
      elias += op.elias_len(c);
    } else {
      word |= c >> (-off);
    }
  }
  return word;
}

/// Whether word w is shared between the bucket covering bits [bit_lo, bit_hi) and a neighbour:
/// it starts before the bucket, or it runs past the bucket's end and another bucket follows.
LGRECO_HD_INLINE bool word_shared(std::uint64_t w, std::uint64_t bit_lo, std::uint64_t bit_hi, bool last_bucket) {
  return (w * 32u < bit_lo) || (w * 32u + 32u > bit_hi && !last_bucket);
}

/// Whether any word can be shared: b·d not a multiple of 32 and more than one bucket.
LGRECO_HD_INLINE bool any_shared_words(std::uint64_t bucket_size, int bits, std::uint64_t n_buckets) {
  return (bucket_size * static_cast<std::uint64_t>(bits)) % 32u != 0 && n_buckets > 1;
}

}  // namespace lgreco::kernels::cuda::detail
