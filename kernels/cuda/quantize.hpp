#pragma once
/// CUDA bucket quantisers: the same names and arguments as kernels/cpu/quantize.hpp, on device
/// pointers and a stream. The codes, scales and decoded values are bit-identical to the CPU
/// reference (same formulas from kernels/quant_math.hpp, same summation order for the bucket sums,
/// same Philox draws), so tests compare codes and scales exactly.
///
/// Device buffers:
/// - `codes` must hold code_capacity_bytes(N, b) bytes (packed_bytes rounded up to 4): the kernels
///   store whole 32-bit words; bytes past packed_bytes(N, b) are written as zero. Only the first
///   packed_bytes(N, b) bytes are the wire payload.
/// - scales (`mins`, `units`, `norms`, `scales`) hold bucket_count(N, d) floats; terngrad's scale is
///   one device float.
/// - input must be finite (the Compressor checks on the host).
///
/// Algorithm: buckets of up to 2048 elements (the defaults, 512 and 1024) take a warp each: the
/// warp stages the bucket in shared memory (coalesced loads, one padding slot per 32 elements so
/// that lanes packing different words read different banks), reduces it there (min/max over 32
/// lanes in any order; sums in double over the reference's 8 interleaved partials on lanes 0-7,
/// combined by the same pairwise tree) and packs the bucket's 32-bit code words, one per lane. DRAM
/// sees one read of x and one write of the codes: 4 + b/8 + (4 or 8)/d bytes per element. Buckets
/// up to kFusedMaxBucket take a group of 8 lanes (same orders; the second read from L1/L2). Words
/// shared by two buckets (b·d not a multiple of 32) are OR-ed atomically into a zeroed buffer.
/// Larger buckets use a stats kernel (one group per bucket, same order) followed by a word-parallel
/// packing kernel. Measured on an H200: docs/performance.md.
/// TernGrad: a max-|x| reduction (order free) then the word-parallel packing kernel.
///
/// Decompression is one thread per element; with an `EfFuse` it also writes the error-feedback
/// residual e = acc − out in the same pass (what ErrorFeedback does on the host).
#include <cstdint>

#include "kernels/cuda/device.hpp"
#include "kernels/method.hpp"

namespace lgreco::kernels::cuda {

/// Largest bucket handled by the fused single-pass kernel.
inline constexpr int kFusedMaxBucket = 8192;

/// Device bytes the code buffer needs: ceil(b·N/8) rounded up to a multiple of 4.
constexpr std::uint64_t code_capacity_bytes(std::uint64_t n, int bits) {
  return ((n * static_cast<std::uint64_t>(bits) + 31) / 32) * 4;
}

/// Optional fused error-feedback update in a decompression: residual[i] = acc[i] − out[i].
struct EfFuse {
  const float* acc = nullptr;  ///< the compressed tensor acc (device)
  float* residual = nullptr;   ///< written with acc − out (device); may alias acc
};

/// Max-min encode: per bucket (min, unit), b-bit levels (see cpu::maxmin_compress).
void maxmin_compress(const float* x, std::uint64_t n, const MaxMinParams& p, std::uint64_t seed, std::uint64_t stream,
                     std::uint8_t* codes, float* mins, float* units, Stream s);
/// Max-min decode: min + unit·level.
void maxmin_decompress(const std::uint8_t* codes, const float* mins, const float* units, std::uint64_t n,
                       const MaxMinParams& p, float* out, Stream s, EfFuse ef = {});

/// QSGD encode: per bucket norm (L2 or max), ceil(log2(2s+1))-bit codes. If `elias_bits` is not
/// null it receives (device, uint64) what cpu::qsgd_compress returns: B = Σ gamma_len(ξ_i + 1) +
/// [ξ_i ≠ 0] for the Elias encoding, 0 for the fixed one.
void qsgd_compress(const float* x, std::uint64_t n, const QsgdParams& p, std::uint64_t seed, std::uint64_t stream,
                   std::uint8_t* codes, float* norms, std::uint64_t* elias_bits, Stream s);
/// QSGD decode: ((code − s)/s)·norm.
void qsgd_decompress(const std::uint8_t* codes, const float* norms, std::uint64_t n, const QsgdParams& p, float* out,
                     Stream s, EfFuse ef = {});

/// EF-SignSGD encode: per bucket ‖v‖₁/n_bucket, 1-bit codes.
void sign_compress(const float* x, std::uint64_t n, const SignParams& p, std::uint8_t* codes, float* scales, Stream s);
/// EF-SignSGD decode: ±scale.
void sign_decompress(const std::uint8_t* codes, const float* scales, std::uint64_t n, const SignParams& p, float* out,
                     Stream s, EfFuse ef = {});

/// TernGrad encode: s = max|x| over the layer into `scale` (one device float), 2-bit codes.
void terngrad_compress(const float* x, std::uint64_t n, std::uint64_t seed, std::uint64_t stream, std::uint8_t* codes,
                       float* scale, Stream s);
/// TernGrad decode: (code − 1)·s.
void terngrad_decompress(const std::uint8_t* codes, const float* scale, std::uint64_t n, float* out, Stream s,
                         EfFuse ef = {});

/// NUQSGD encode: per bucket L2 norm, (1 + ceil(log2(s+2)))-bit codes.
void nuqsgd_compress(const float* x, std::uint64_t n, const NuqsgdParams& p, std::uint64_t seed, std::uint64_t stream,
                     std::uint8_t* codes, float* norms, Stream s);
/// NUQSGD decode: ±L_index·norm.
void nuqsgd_decompress(const std::uint8_t* codes, const float* norms, std::uint64_t n, const NuqsgdParams& p,
                       float* out, Stream s, EfFuse ef = {});

}  // namespace lgreco::kernels::cuda
