#include "kernels/cpu/bitpack.hpp"

#include <bit>
#include <cstring>

#include "core/rng.hpp"
#include "kernels/cpu/simd.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define LGRECO_PHILOX_AVX2 1
#endif

namespace lgreco::kernels::cpu {
static_assert(std::endian::native == std::endian::little, "bitpack.cpp reads code pairs as little-endian words");
namespace {

#if LGRECO_PHILOX_AVX2
// Converts the 4 output words of 8 blocks (one vector per word) to uniforms and stores them in
// element order (block-major): u[4·b + w].
// Uniform floats of 8 words (24 high bits × 2^-24), or the words themselves (kWords).
template <bool kWords>
__attribute__((target("avx2"), always_inline)) inline __m256 words_to_floats(__m256i c) {
  if constexpr (kWords) {
    return _mm256_castsi256_ps(c);
  } else {
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(c, 8)), _mm256_set1_ps(1.0f / 16777216.0f));
  }
}

// kWords: store the raw 32-bit words instead (moved through float registers bit for bit).
template <bool kWords>
__attribute__((target("avx2"), always_inline)) inline void store_uniforms8(__m256i c0, __m256i c1, __m256i c2, __m256i c3,
                                                                          float* u) {
  const __m256 f0 = words_to_floats<kWords>(c0), f1 = words_to_floats<kWords>(c1);
  const __m256 f2 = words_to_floats<kWords>(c2), f3 = words_to_floats<kWords>(c3);
  // 4×8 → element order (block-major): transpose pairs, then 128-bit halves.
  const __m256 t0 = _mm256_unpacklo_ps(f0, f1), t1 = _mm256_unpackhi_ps(f0, f1);
  const __m256 t2 = _mm256_unpacklo_ps(f2, f3), t3 = _mm256_unpackhi_ps(f2, f3);
  const __m256 r0 = _mm256_shuffle_ps(t0, t2, 0x44), r1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 r2 = _mm256_shuffle_ps(t1, t3, 0x44), r3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  // r0 = blocks 0,4; r1 = blocks 1,5; r2 = blocks 2,6; r3 = blocks 3,7 (low half, high half).
  _mm256_storeu_ps(u + 0, _mm256_permute2f128_ps(r0, r1, 0x20));
  _mm256_storeu_ps(u + 8, _mm256_permute2f128_ps(r2, r3, 0x20));
  _mm256_storeu_ps(u + 16, _mm256_permute2f128_ps(r0, r1, 0x31));
  _mm256_storeu_ps(u + 24, _mm256_permute2f128_ps(r2, r3, 0x31));
}

// Eight Philox4x32-10 blocks at once (AVX2, selected at run time), bit-identical to rng::block_at:
// uniforms of blocks b0..b0+7 written to u[0..31] in element order.
template <bool kWords>
__attribute__((target("avx2"))) void philox8_uniform(std::uint64_t seed, std::uint64_t stream, std::uint64_t b0, float* u) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const std::uint64_t b_lo = b0 & 0xFFFFFFFFu;
  __m256i c0 = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(b_lo)), lane);
  // Carry into the high word when the low word wraps inside the group.
  const __m256i wrapped = _mm256_cmpgt_epi32(_mm256_xor_si256(_mm256_set1_epi32(static_cast<int>(b_lo)), _mm256_set1_epi32(INT32_MIN)),
                                             _mm256_xor_si256(c0, _mm256_set1_epi32(INT32_MIN)));
  __m256i c1 = _mm256_sub_epi32(_mm256_set1_epi32(static_cast<int>(b0 >> 32)), wrapped);
  __m256i c2 = _mm256_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(stream)));
  __m256i c3 = _mm256_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(stream >> 32)));
  std::uint32_t k0 = static_cast<std::uint32_t>(seed), k1 = static_cast<std::uint32_t>(seed >> 32);
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(0xD2511F53u));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int>(0xCD9E8D57u));
  for (int round = 0; round < 10; ++round) {
    const __m256i e0 = _mm256_mul_epu32(c0, m0), o0 = _mm256_mul_epu32(_mm256_srli_epi64(c0, 32), m0);
    const __m256i e1 = _mm256_mul_epu32(c2, m1), o1 = _mm256_mul_epu32(_mm256_srli_epi64(c2, 32), m1);
    const __m256i lo0 = _mm256_blend_epi32(e0, _mm256_slli_epi64(o0, 32), 0xAA);
    const __m256i hi0 = _mm256_blend_epi32(_mm256_srli_epi64(e0, 32), o0, 0xAA);
    const __m256i lo1 = _mm256_blend_epi32(e1, _mm256_slli_epi64(o1, 32), 0xAA);
    const __m256i hi1 = _mm256_blend_epi32(_mm256_srli_epi64(e1, 32), o1, 0xAA);
    const __m256i n0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32(static_cast<int>(k0)));
    const __m256i n2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32(static_cast<int>(k1)));
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  store_uniforms8<kWords>(c0, c1, c2, c3, u);
}

// GCC 12 warns about its own AVX-512 intrinsic headers (undefined placeholder operands).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
// Sixteen blocks at once (AVX-512F), same contract as philox8_uniform: u[0..63].
template <bool kWords>
__attribute__((target("avx512f,avx2"))) void philox16_uniform(std::uint64_t seed, std::uint64_t stream, std::uint64_t b0, float* u) {
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const std::uint32_t b_lo = static_cast<std::uint32_t>(b0);
  const __m512i base = _mm512_set1_epi32(static_cast<int>(b_lo));
  __m512i c0 = _mm512_add_epi32(base, lane);
  const __mmask16 wrapped = _mm512_cmplt_epu32_mask(c0, base);
  __m512i c1 = _mm512_mask_add_epi32(_mm512_set1_epi32(static_cast<int>(b0 >> 32)), wrapped,
                                     _mm512_set1_epi32(static_cast<int>(b0 >> 32)), _mm512_set1_epi32(1));
  __m512i c2 = _mm512_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(stream)));
  __m512i c3 = _mm512_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(stream >> 32)));
  std::uint32_t k0 = static_cast<std::uint32_t>(seed), k1 = static_cast<std::uint32_t>(seed >> 32);
  const __m512i m0 = _mm512_set1_epi32(static_cast<int>(0xD2511F53u));
  const __m512i m1 = _mm512_set1_epi32(static_cast<int>(0xCD9E8D57u));
  for (int round = 0; round < 10; ++round) {
    const __m512i e0 = _mm512_mul_epu32(c0, m0), o0 = _mm512_mul_epu32(_mm512_srli_epi64(c0, 32), m0);
    const __m512i e1 = _mm512_mul_epu32(c2, m1), o1 = _mm512_mul_epu32(_mm512_srli_epi64(c2, 32), m1);
    const __m512i lo0 = _mm512_mask_blend_epi32(0xAAAA, e0, _mm512_slli_epi64(o0, 32));
    const __m512i hi0 = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(e0, 32), o0);
    const __m512i lo1 = _mm512_mask_blend_epi32(0xAAAA, e1, _mm512_slli_epi64(o1, 32));
    const __m512i hi1 = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(e1, 32), o1);
    const __m512i n0 = _mm512_xor_si512(_mm512_xor_si512(hi1, c1), _mm512_set1_epi32(static_cast<int>(k0)));
    const __m512i n2 = _mm512_xor_si512(_mm512_xor_si512(hi0, c3), _mm512_set1_epi32(static_cast<int>(k1)));
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  store_uniforms8<kWords>(_mm512_castsi512_si256(c0), _mm512_castsi512_si256(c1), _mm512_castsi512_si256(c2),
                  _mm512_castsi512_si256(c3), u);
  store_uniforms8<kWords>(_mm512_extracti64x4_epi64(c0, 1), _mm512_extracti64x4_epi64(c1, 1), _mm512_extracti64x4_epi64(c2, 1),
                  _mm512_extracti64x4_epi64(c3, 1), u + 32);
}
#pragma GCC diagnostic pop

bool have_avx512() {
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
}

bool have_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}
#endif

}  // namespace

LGRECO_CPU_CLONES void pack_run(const std::uint16_t* codes, std::uint64_t count, int bits, std::uint8_t* bytes, std::uint64_t first) {
  const std::uint64_t bit0 = first * static_cast<std::uint64_t>(bits);
  std::uint8_t* out = bytes + (bit0 >> 3);
  std::uint64_t j = 0;
  if ((bit0 & 7u) == 0) {
    // Byte-aligned fast paths for widths dividing 8 (the common 1, 2, 4, 8 bits).
    if (bits == 8) {
      for (; j < count; ++j) out[j] = static_cast<std::uint8_t>(codes[j]);
      return;
    }
    if (bits == 4) {
      // Two 16-bit codes read as one 32-bit word (little-endian) → one byte; vectorises.
      for (; j + 2 <= count; j += 2) {
        std::uint32_t w;
        std::memcpy(&w, codes + j, sizeof w);
        out[j >> 1] = static_cast<std::uint8_t>((w & 0xFu) | ((w >> 12) & 0xF0u));
      }
    } else if (bits == 2) {
      for (; j + 4 <= count; j += 4)
        out[j >> 2] = static_cast<std::uint8_t>(codes[j] | (codes[j + 1] << 2) | (codes[j + 2] << 4) | (codes[j + 3] << 6));
    } else if (bits == 1) {
      for (; j + 8 <= count; j += 8) {
        unsigned b = 0;
        for (int l = 0; l < 8; ++l) b |= static_cast<unsigned>(codes[j + l]) << l;
        out[j >> 3] = static_cast<std::uint8_t>(b);
      }
    }
  }
  // General bit writer for the rest (ORs into the partially filled first byte).
  std::uint64_t bit = bit0 + j * static_cast<std::uint64_t>(bits);
  std::uint8_t* p = bytes + (bit >> 3);
  unsigned nb = static_cast<unsigned>(bit & 7u);
  std::uint64_t acc = 0;
  for (; j < count; ++j) {
    acc |= static_cast<std::uint64_t>(codes[j]) << nb;
    nb += static_cast<unsigned>(bits);
    while (nb >= 8) {
      *p++ |= static_cast<std::uint8_t>(acc);
      acc >>= 8;
      nb -= 8;
    }
  }
  if (nb > 0) *p |= static_cast<std::uint8_t>(acc);
}

LGRECO_CPU_CLONES void unpack_run(const std::uint8_t* bytes, std::uint64_t first, std::uint64_t count, int bits, std::uint16_t* codes) {
  const std::uint64_t bit0 = first * static_cast<std::uint64_t>(bits);
  const std::uint8_t* in = bytes + (bit0 >> 3);
  std::uint64_t j = 0;
  if ((bit0 & 7u) == 0) {
    if (bits == 8) {
      for (; j < count; ++j) codes[j] = in[j];
      return;
    }
    if (bits == 4) {
      for (; j + 2 <= count; j += 2) {
        codes[j] = in[j >> 1] & 0xFu;
        codes[j + 1] = in[j >> 1] >> 4;
      }
    } else if (bits == 2) {
      for (; j + 4 <= count; j += 4)
        for (int l = 0; l < 4; ++l) codes[j + l] = (in[j >> 2] >> (2 * l)) & 3u;
    } else if (bits == 1) {
      for (; j + 8 <= count; j += 8)
        for (int l = 0; l < 8; ++l) codes[j + l] = (in[j >> 3] >> l) & 1u;
    }
  }
  std::uint64_t bit = bit0 + j * static_cast<std::uint64_t>(bits);
  const std::uint8_t* p = bytes + (bit >> 3);
  unsigned nb = 0;
  std::uint64_t acc = 0;
  const unsigned skip = static_cast<unsigned>(bit & 7u);
  if (skip) {
    acc = static_cast<std::uint64_t>(*p++) >> skip;
    nb = 8 - skip;
  }
  const std::uint64_t mask = (std::uint64_t{1} << bits) - 1;
  for (; j < count; ++j) {
    while (nb < static_cast<unsigned>(bits)) {
      acc |= static_cast<std::uint64_t>(*p++) << nb;
      nb += 8;
    }
    codes[j] = static_cast<std::uint16_t>(acc & mask);
    acc >>= bits;
    nb -= static_cast<unsigned>(bits);
  }
}

void fill_uniform(std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::uint64_t count, float* u) {
  std::uint64_t j = 0;
  // Head up to a block boundary.
  for (; j < count && ((first + j) & 3u) != 0; ++j) u[j] = rng::uniform_at(seed, stream, first + j);
#if LGRECO_PHILOX_AVX2
  if (have_avx512())
    for (; j + 64 <= count; j += 64) philox16_uniform<false>(seed, stream, (first + j) >> 2, u + j);
  if (have_avx2())
    for (; j + 32 <= count; j += 32) philox8_uniform<false>(seed, stream, (first + j) >> 2, u + j);
#endif
  for (; j + 4 <= count; j += 4) {
    const rng::Block b = rng::block_at(seed, stream, (first + j) >> 2);
    u[j] = rng::word_to_unit_float(b.v[0]);
    u[j + 1] = rng::word_to_unit_float(b.v[1]);
    u[j + 2] = rng::word_to_unit_float(b.v[2]);
    u[j + 3] = rng::word_to_unit_float(b.v[3]);
  }
  for (; j < count; ++j) u[j] = rng::uniform_at(seed, stream, first + j);
}

}  // namespace lgreco::kernels::cpu

namespace lgreco::kernels::cpu {

void fill_bits(std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::uint64_t count, std::uint32_t* w) {
  std::uint64_t j = 0;
  for (; j < count && ((first + j) & 3u) != 0; ++j) w[j] = rng::bits_at(seed, stream, first + j);
#if LGRECO_PHILOX_AVX2
  float* wf = reinterpret_cast<float*>(w);  // raw words stored through float registers, bit for bit
  if (have_avx512())
    for (; j + 64 <= count; j += 64) philox16_uniform<true>(seed, stream, (first + j) >> 2, wf + j);
  if (have_avx2())
    for (; j + 32 <= count; j += 32) philox8_uniform<true>(seed, stream, (first + j) >> 2, wf + j);
#endif
  for (; j + 4 <= count; j += 4) {
    const rng::Block b = rng::block_at(seed, stream, (first + j) >> 2);
    for (int l = 0; l < 4; ++l) w[j + l] = b.v[l];
  }
  for (; j < count; ++j) w[j] = rng::bits_at(seed, stream, first + j);
}

}  // namespace lgreco::kernels::cpu
