#pragma once
/// CUDA dense casts fp32 → fp16 / bf16 → fp32: the names of kernels/cpu/cast.hpp on device
/// pointers. Round-to-nearest-even by the hardware conversions (__float2half_rn,
/// __float2bfloat16_rn), which give the reference's bits for every finite input, subnormals and
/// overflow to ±Inf included (checked bit for bit by tests/kernels/gpu_cast.cpp).
#include <cstdint>

#include "kernels/cuda/device.hpp"

namespace lgreco::kernels::cuda {

/// Encodes x (n values) to fp16 bits.
void fp16_compress(const float* x, std::uint64_t n, std::uint16_t* out, Stream s);
/// Decodes fp16 bits (exact).
void fp16_decompress(const std::uint16_t* in, std::uint64_t n, float* out, Stream s);
/// Encodes x to bf16 bits.
void bf16_compress(const float* x, std::uint64_t n, std::uint16_t* out, Stream s);
/// Decodes bf16 bits (exact).
void bf16_decompress(const std::uint16_t* in, std::uint64_t n, float* out, Stream s);
/// Round trip fp32 → fp16 → fp32 in one pass.
void fp16_roundtrip(const float* x, std::uint64_t n, float* out, Stream s);
/// Round trip fp32 → bf16 → fp32 in one pass.
void bf16_roundtrip(const float* x, std::uint64_t n, float* out, Stream s);

}  // namespace lgreco::kernels::cuda
