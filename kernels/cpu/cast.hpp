#pragma once
/// CPU reference of the dense casts fp32 → fp16 / bf16 → fp32.
///
/// Rounding: IEEE round-to-nearest-even on the bit pattern (no FPU mode dependence).
/// - fp16: values beyond the fp16 range round to ±Inf exactly as IEEE (and torch.half) do
///   (|x| ≥ 65520); fp32 values below the fp16 subnormal range round to ±0; the sign of zero is
///   kept. The next error-feedback step then sees a non-finite residual and raises InputError.
/// - bf16: the upper 16 bits after RNE; |x| above the largest bf16 rounds to ±Inf likewise.
/// NaN input is rejected before these are called (they map NaN to a quiet NaN).
#include <cstdint>
#include <span>

namespace lgreco::kernels::cpu {

/// fp32 → fp16 bits, round to nearest even.
std::uint16_t float_to_half(float x);
/// fp16 bits → fp32 (exact).
float half_to_float(std::uint16_t h);
/// fp32 → bf16 bits, round to nearest even.
std::uint16_t float_to_bf16(float x);
/// bf16 bits → fp32 (exact).
float bf16_to_float(std::uint16_t h);

/// Encodes x to fp16 bits (out.size() == x.size()).
void fp16_compress(std::span<const float> x, std::span<std::uint16_t> out);
/// Decodes fp16 bits.
void fp16_decompress(std::span<const std::uint16_t> in, std::span<float> out);
/// Encodes x to bf16 bits.
void bf16_compress(std::span<const float> x, std::span<std::uint16_t> out);
/// Decodes bf16 bits.
void bf16_decompress(std::span<const std::uint16_t> in, std::span<float> out);

/// Round trip fp32 → fp16 → fp32 in one pass.
void fp16_roundtrip(std::span<const float> x, std::span<float> out);
/// Round trip fp32 → bf16 → fp32 in one pass.
void bf16_roundtrip(std::span<const float> x, std::span<float> out);

}  // namespace lgreco::kernels::cpu
