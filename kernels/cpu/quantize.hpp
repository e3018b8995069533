#pragma once
/// CPU reference of the bucket quantisers (the specification the CUDA kernels match byte for byte).
///
/// Shared conventions (formulas in kernels/quant_math.hpp):
/// - buckets are consecutive runs of `bucket_size` elements, the last one ragged: bucket j covers
///   [j·d, min((j+1)·d, N)); n_buckets = ceil(N / d) (0 for N = 0);
/// - `codes` has exactly packed_bytes(N, b) bytes, packed as quant_math.hpp states; the functions
///   zero it first;
/// - random draws: u_i = rng::uniform_at(seed, rng::stream_of(step, layer), i), i = element index
///   in the layer; `stream` below is rng::stream_of(step, layer);
/// - bucket sums (L2 norm, L1 for sign) are accumulated in double over 8 interleaved partial sums
///   (partial k takes bucket-relative elements ≡ k mod 8, in increasing order), combined as
///   ((p0+p1)+(p2+p3))+((p4+p5)+(p6+p7)); L2 norm = (float)sqrt(sum of squares); L1 scale =
///   (float)(sum / n_bucket);
/// - input must be finite (the Compressor checks; these functions do not);
/// - N = 0 writes nothing; an all-zero bucket reconstructs to zeros exactly.
/// Decompress writes every element of `out` (N values).
#include <cstdint>
#include <span>

#include "kernels/method.hpp"

namespace lgreco::kernels::cpu {

/// Bytes of N packed b-bit codes: ceil(b·N / 8).
constexpr std::uint64_t packed_bytes(std::uint64_t n, int bits) { return (n * static_cast<std::uint64_t>(bits) + 7) / 8; }

/// Number of buckets: ceil(N / d).
constexpr std::uint64_t bucket_count(std::uint64_t n, int bucket_size) {
  return (n + static_cast<std::uint64_t>(bucket_size) - 1) / static_cast<std::uint64_t>(bucket_size);
}

/// Bucket L2 norm with the documented summation order.
float bucket_l2_norm(std::span<const float> bucket);
/// Bucket L1 mean ‖v‖₁ / n with the documented summation order (0 for an empty bucket).
float bucket_l1_mean(std::span<const float> bucket);

// ---- max-min (CGX) ---------------------------------------------------------------------------
/// Encodes x: per bucket (min, unit) into `mins`/`units` (n_buckets each), b-bit levels into codes.
/// The caller handles the N < 16 raw case (kernels send such layers as fp32).
void maxmin_compress(std::span<const float> x, const MaxMinParams& p, std::uint64_t seed, std::uint64_t stream,
                     std::span<std::uint8_t> codes, std::span<float> mins, std::span<float> units);
/// Decodes min + unit·level per element.
void maxmin_decompress(std::span<const std::uint8_t> codes, std::span<const float> mins, std::span<const float> units,
                       const MaxMinParams& p, std::span<float> out);

// ---- QSGD ------------------------------------------------------------------------------------
/// Encodes x: per-bucket norm (L2 or max |v|) into `norms`, ceil(log2(2s+1))-bit codes into codes.
/// Returns the Elias bit count B = Σ gamma_len(ξ_i + 1) + [ξ_i ≠ 0] (used when encoding = elias).
std::uint64_t qsgd_compress(std::span<const float> x, const QsgdParams& p, std::uint64_t seed, std::uint64_t stream,
                            std::span<std::uint8_t> codes, std::span<float> norms);
/// Decodes ((code − s)/s)·norm.
void qsgd_decompress(std::span<const std::uint8_t> codes, std::span<const float> norms, const QsgdParams& p,
                     std::span<float> out);

// ---- EF-SignSGD --------------------------------------------------------------------------------
/// Encodes x: per-bucket scale ‖v‖₁/n_bucket into `scales`, 1-bit codes (1 for v ≥ 0) into codes.
void sign_compress(std::span<const float> x, const SignParams& p, std::span<std::uint8_t> codes,
                   std::span<float> scales);
/// Decodes ±scale.
void sign_decompress(std::span<const std::uint8_t> codes, std::span<const float> scales, const SignParams& p,
                     std::span<float> out);

// ---- TernGrad ----------------------------------------------------------------------------------
/// Encodes x with s = max|x| over the layer (returned); 2-bit codes {0: −s, 1: 0, 2: +s}.
float terngrad_compress(std::span<const float> x, std::uint64_t seed, std::uint64_t stream,
                        std::span<std::uint8_t> codes);
/// Decodes (code − 1)·s.
void terngrad_decompress(std::span<const std::uint8_t> codes, float scale, std::span<float> out);

// ---- NUQSGD ------------------------------------------------------------------------------------
/// Encodes x: per-bucket L2 norm into `norms`, (1 + ceil(log2(s+2)))-bit codes into codes.
void nuqsgd_compress(std::span<const float> x, const NuqsgdParams& p, std::uint64_t seed, std::uint64_t stream,
                     std::span<std::uint8_t> codes, std::span<float> norms);
/// Decodes ±L_index·norm.
void nuqsgd_decompress(std::span<const std::uint8_t> codes, std::span<const float> norms, const NuqsgdParams& p,
                       std::span<float> out);

}  // namespace lgreco::kernels::cpu
