#include "kernels/cpu/bitpack.hpp"

#include "core/rng.hpp"

namespace lgreco::kernels::cpu {

void pack_run(const std::uint16_t* codes, std::uint64_t count, int bits, std::uint8_t* bytes, std::uint64_t first) {
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
      for (; j + 2 <= count; j += 2) out[j >> 1] = static_cast<std::uint8_t>(codes[j] | (codes[j + 1] << 4));
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

void unpack_run(const std::uint8_t* bytes, std::uint64_t first, std::uint64_t count, int bits, std::uint16_t* codes) {
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
