#pragma once
/// Counter-based random numbers (Philox4x32-10, Salmon et al., SC'11) shared by host and device.
///
/// A draw is a pure function of (seed, stream, index): no state, so the CPU reference and a CUDA
/// kernel produce bit-identical uniforms for the same element, in any order and any thread layout.
/// Conventions used throughout lgreco:
/// - key     = seed (64 bits);
/// - counter = (index / 4 [64 bits], stream [64 bits]); lane index % 4 of the 4-word block.
/// - `stream_of(step, layer)` packs a training step and a layer index into a stream id.
/// Uniform floats are exact functions of the 32-bit word (24 high bits → [0, 1)), hence identical
/// on every platform. Normal draws use logf/cosf, whose last ulp can differ between host and
/// device libm: code that needs identical normals generates them on the host.
#include <cstdint>

#include "core/hd.hpp"

namespace lgreco::rng {

/// Four 32-bit words: a Philox counter or its output block.
struct Block {
  std::uint32_t v[4];
};

namespace detail {
constexpr std::uint32_t kMul0 = 0xD2511F53u;
constexpr std::uint32_t kMul1 = 0xCD9E8D57u;
constexpr std::uint32_t kWeyl0 = 0x9E3779B9u;
constexpr std::uint32_t kWeyl1 = 0xBB67AE85u;

LGRECO_HD_INLINE void mulhilo(std::uint32_t a, std::uint32_t b, std::uint32_t& hi, std::uint32_t& lo) {
  const std::uint64_t p = static_cast<std::uint64_t>(a) * b;
  hi = static_cast<std::uint32_t>(p >> 32);
  lo = static_cast<std::uint32_t>(p);
}
}  // namespace detail

/// Philox4x32 with 10 rounds: counter (4 words) and key (2 words) → 4 random words.
LGRECO_HD_INLINE Block philox4x32_10(Block ctr, std::uint32_t k0, std::uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    std::uint32_t hi0, lo0, hi1, lo1;
    detail::mulhilo(detail::kMul0, ctr.v[0], hi0, lo0);
    detail::mulhilo(detail::kMul1, ctr.v[2], hi1, lo1);
    Block next;
    next.v[0] = hi1 ^ ctr.v[1] ^ k0;
    next.v[1] = lo1;
    next.v[2] = hi0 ^ ctr.v[3] ^ k1;
    next.v[3] = lo0;
    ctr = next;
    k0 += detail::kWeyl0;
    k1 += detail::kWeyl1;
  }
  return ctr;
}

/// Packs (step, layer) into one stream id: step in the high 40 bits, layer in the low 24.
LGRECO_HD_INLINE std::uint64_t stream_of(std::uint64_t step, std::uint64_t layer) {
  return (step << 24) ^ (layer & 0xFFFFFFu);
}

/// The 4-word block holding elements [4·block, 4·block+4) of (seed, stream).
LGRECO_HD_INLINE Block block_at(std::uint64_t seed, std::uint64_t stream, std::uint64_t block) {
  Block c;
  c.v[0] = static_cast<std::uint32_t>(block);
  c.v[1] = static_cast<std::uint32_t>(block >> 32);
  c.v[2] = static_cast<std::uint32_t>(stream);
  c.v[3] = static_cast<std::uint32_t>(stream >> 32);
  return philox4x32_10(c, static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
}

/// The 32-bit random word of element `index` of (seed, stream).
LGRECO_HD_INLINE std::uint32_t bits_at(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  return block_at(seed, stream, index >> 2).v[index & 3u];
}

/// Maps a random word to a float in [0, 1) using its 24 high bits (exact, platform independent).
LGRECO_HD_INLINE float word_to_unit_float(std::uint32_t w) {
  return static_cast<float>(w >> 8) * (1.0f / 16777216.0f);
}

/// Uniform float in [0, 1) for element `index` of (seed, stream).
LGRECO_HD_INLINE float uniform_at(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  return word_to_unit_float(bits_at(seed, stream, index));
}

/// Maps a random word to a double in [0, 1) (53-bit from two words).
LGRECO_HD_INLINE double words_to_unit_double(std::uint32_t hi, std::uint32_t lo) {
  const std::uint64_t x = (static_cast<std::uint64_t>(hi) << 21) ^ (lo >> 11);
  return static_cast<double>(x & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
}

/// Standard normal draw for element `index` of (seed, stream), by Box-Muller in double precision
/// from one full 4-word block (one block per element). Host code uses it for PowerSGD's first Q and
/// synthetic gradients; see the note above about device libm.
inline double normal_at(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  Block c;
  c.v[0] = static_cast<std::uint32_t>(index);
  c.v[1] = static_cast<std::uint32_t>(index >> 32);
  c.v[2] = static_cast<std::uint32_t>(stream);
  c.v[3] = static_cast<std::uint32_t>(stream >> 32) ^ 0x80000000u;  // disjoint from uniform blocks' use
  const Block b = philox4x32_10(c, static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
  const double u1 = 1.0 - words_to_unit_double(b.v[0], b.v[1]);  // (0, 1]
  const double u2 = words_to_unit_double(b.v[2], b.v[3]);
  return __builtin_sqrt(-2.0 * __builtin_log(u1)) * __builtin_cos(6.283185307179586 * u2);
}

}  // namespace lgreco::rng
