#pragma once
/// CPU helpers for the packing layout of kernels/quant_math.hpp, working on runs of codes, and the
/// block-wise uniform draws of the quantisers. Internal to the CPU reference (and its tests).
#include <cstdint>

namespace lgreco::kernels::cpu {

/// ORs `count` codes of `bits` bits (bits ≤ 16) for elements first..first+count−1 into `bytes`
/// (which must be zero where they go), exactly as put_code would element by element.
void pack_run(const std::uint16_t* codes, std::uint64_t count, int bits, std::uint8_t* bytes, std::uint64_t first);

/// Reads `count` codes of elements first..first+count−1 (inverse of pack_run).
void unpack_run(const std::uint8_t* bytes, std::uint64_t first, std::uint64_t count, int bits, std::uint16_t* codes);

/// u[j] = rng::uniform_at(seed, stream, first + j) for j < count, computed block-wise.
void fill_uniform(std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::uint64_t count, float* u);

/// w[j] = rng::bits_at(seed, stream, first + j) for j < count, computed block-wise.
void fill_bits(std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::uint64_t count, std::uint32_t* w);

}  // namespace lgreco::kernels::cpu
