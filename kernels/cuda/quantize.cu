#include "kernels/cuda/quantize.hpp"

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cpu/quantize.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/pack_word.hpp"
#include "kernels/cuda/quantize_ops.cuh"
#include "kernels/wire.hpp"

namespace lgreco::kernels::cuda {
namespace detail {
namespace {

constexpr unsigned kBlock = 128;  // 16 groups of 8 lanes
constexpr unsigned kWarpBlock = 128;  // 4 warps, one bucket each
// Buckets up to this size take the warp kernel: 4 warps x 2113 slots = 33 KiB of shared memory
// per block, under the 48 KiB a launch gets without opting in.
constexpr std::uint32_t kWarpMaxBucket = 2048;

__device__ __forceinline__ void add_elias(std::uint64_t e, unsigned long long* elias) {
  if (!elias) return;
  for (int o = 16; o > 0; o >>= 1) e += __shfl_xor_sync(kFullMask, e, o);
  if ((threadIdx.x & 31u) == 0 && e) atomicAdd(elias, static_cast<unsigned long long>(e));
}

__device__ __forceinline__ void store_scales(const Stats& st, std::uint64_t b, float* s0, float* s1) {
  s0[b] = st.a;
  if (s1) s1[b] = st.b;
}

/// Stores code word w of the bucket covering bits [bit_lo, bit_hi): OR-ed when a neighbour shares it.
__device__ __forceinline__ void store_word(std::uint32_t* words, std::uint64_t w, std::uint32_t word,
                                           std::uint64_t bit_lo, std::uint64_t bit_hi, bool last_bucket) {
  if (word_shared(w, bit_lo, bit_hi, last_bucket)) {
    atomicOr(words + w, word);
  } else {
    words[w] = word;
  }
}

/// Single pass: a group of 8 lanes reduces its bucket, then packs the bucket's code words.
template <class Op>
__global__ void __launch_bounds__(kBlock) bucket_fused_kernel(Op op, const float* __restrict__ x, std::uint64_t n,
                                                              std::uint32_t d, std::uint64_t nb, int bits,
                                                              std::uint32_t* __restrict__ words, float* __restrict__ s0,
                                                              float* __restrict__ s1, std::uint64_t seed,
                                                              std::uint64_t stream, unsigned long long* elias) {
  const std::uint32_t lane8 = threadIdx.x & 7u;
  const std::uint64_t groups_per_block = kBlock / 8;
  std::uint64_t e = 0;
  for (std::uint64_t base = blockIdx.x * groups_per_block; base < nb; base += gridDim.x * groups_per_block) {
    const std::uint64_t b = base + threadIdx.x / 8;
    const bool valid = b < nb;
    const std::uint64_t start = valid ? b * d : 0;
    const std::uint32_t len = valid ? static_cast<std::uint32_t>(min(static_cast<std::uint64_t>(d), n - start)) : 0u;
    const Stats st = op.reduce(x, start, len, lane8);  // every lane takes part in the shuffles
    if (!valid) continue;
    if (lane8 == 0) store_scales(st, b, s0, s1);
    const std::uint64_t end = start + len;
    const std::uint64_t bit_lo = start * bits, bit_hi = end * bits;
    const std::uint64_t w_end = (bit_hi + 31u) / 32u;
    for (std::uint64_t w = bit_lo / 32u + lane8; w < w_end; w += 8) {
      const std::uint32_t word =
          make_word(op, x, w, start, end, bits, [&](std::uint64_t) { return st; }, seed, stream, e);
      store_word(words, w, word, bit_lo, bit_hi, end == n);
    }
  }
  add_elias(e, elias);
}

/// Element i of a bucket staged in shared memory from element `first` on (make_word's accessor).
struct Staged {
  PaddedSlice xs;
  std::uint64_t first;
  __device__ __forceinline__ float operator[](std::uint64_t i) const { return xs[i - first]; }
};

/// One whole code word of kBits-bit codes (kBits = 1, 2, 4 or 8: 32/kBits elements, a multiple of
/// 4, all in the bucket) from the staged slice: the same codes, random draws and Elias count as
/// make_word, unrolled, with one Philox block per 4 elements and no per-element range checks.
/// `j` is the word's first element in the bucket (the word's elements must sit in consecutive
/// slots: j % 32 + 32/kBits ≤ 32), `i0` the same element's index in the layer (a multiple of 4).
template <int kBits, class Op>
__device__ __forceinline__ std::uint32_t pack_whole_word(const Op& op, const PaddedSlice& xs, std::uint32_t j,
                                                         std::uint64_t i0, const Stats& st, std::uint64_t seed,
                                                         std::uint64_t stream, std::uint64_t& elias) {
  constexpr int kPerWord = 32 / kBits;
  const float* v = &xs[j];
  std::uint32_t word = 0;
#pragma unroll
  for (int q = 0; q < kPerWord; q += 4) {
    rng::Block blk{};
    if (op.random()) blk = rng::block_at(seed, stream, (i0 + q) >> 2);
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const float u = op.random() ? rng::word_to_unit_float(blk.v[c]) : 0.0f;
      const std::uint32_t code = op.code(v[q + c], st, u);
      word |= code << ((q + c) * kBits);
      elias += op.elias_len(code);
    }
  }
  return word;
}

/// Warp per bucket (buckets of at most kWarpMaxBucket elements): the warp copies its bucket into
/// shared memory with coalesced (16-byte where aligned) loads, reduces it there (reduce_warp: the
/// same order as the reference) and packs the bucket's code words, one word per lane at a time
/// (words inside the bucket by pack_whole_word where the width allows, the rest by make_word).
/// DRAM sees one read of x; the 8-lane fused kernel above left most of the bandwidth unused
/// (0.15-0.20 of the copy bandwidth on an H200, docs/performance.md).
template <class Op>
__global__ void __launch_bounds__(kWarpBlock) bucket_warp_kernel(Op op, const float* __restrict__ x, std::uint64_t n,
                                                                 std::uint32_t d, std::uint64_t nb, int bits,
                                                                 std::uint32_t* __restrict__ words, float* __restrict__ s0,
                                                                 float* __restrict__ s1, std::uint64_t seed,
                                                                 std::uint64_t stream, unsigned long long* elias) {
  extern __shared__ float staged_mem[];
  const std::uint32_t lane = threadIdx.x & 31u;
  const std::uint32_t warp = threadIdx.x >> 5;
  constexpr std::uint32_t kWarps = kWarpBlock / 32;
  const PaddedSlice xs{reinterpret_cast<float*>(staged_mem) + static_cast<std::uint64_t>(warp) * PaddedSlice::slots(d)};
  // 16-byte loads when x is 16-byte aligned and d % 4 == 0 (then every bucket start is too); the
  // four floats go to consecutive slots (a group of 4 never straddles a padding slot).
  const bool vec = d % 4u == 0 && (reinterpret_cast<std::uintptr_t>(x) & 15u) == 0;
  // Code widths whose words hold a whole number of Philox blocks take pack_whole_word.
  const bool whole = bits == 1 || bits == 2 || bits == 4 || bits == 8;
  std::uint64_t e = 0;
  for (std::uint64_t b = static_cast<std::uint64_t>(blockIdx.x) * kWarps + warp; b < nb;
       b += static_cast<std::uint64_t>(gridDim.x) * kWarps) {
    const std::uint64_t start = b * d;
    const std::uint32_t len = static_cast<std::uint32_t>(min(static_cast<std::uint64_t>(d), n - start));
    const float* src = x + start;
    std::uint32_t done = 0;
    if (vec) {
      done = len & ~3u;
#pragma unroll 4
      for (std::uint32_t j = lane; j < done / 4; j += 32) {
        const float4 v = __ldcs(reinterpret_cast<const float4*>(src) + j);
        float* dst = &xs[4 * j];
        dst[0] = v.x;
        dst[1] = v.y;
        dst[2] = v.z;
        dst[3] = v.w;
      }
    }
    for (std::uint32_t j = done + lane; j < len; j += 32) xs[j] = __ldcs(src + j);
    __syncwarp();
    const Stats st = op.reduce_warp(xs, len, lane);
    if (lane == 0) store_scales(st, b, s0, s1);
    const std::uint64_t end = start + len;
    const std::uint64_t bit_lo = start * bits, bit_hi = end * bits;
    const std::uint64_t w_end = (bit_hi + 31u) / 32u;
    const Staged xv{xs, start};
    for (std::uint64_t w = bit_lo / 32u + lane; w < w_end; w += 32) {
      std::uint32_t word;
      std::uint64_t i0 = 0;  // the word's first element in the layer and (j) in the bucket
      std::uint32_t j = 0;
      bool whole_word = false;
      if (whole && w * 32u >= bit_lo && w * 32u + 32u <= bit_hi) {
        i0 = w * 32u / static_cast<std::uint64_t>(bits);
        j = static_cast<std::uint32_t>(i0 - start);
        whole_word = (j & 31u) + 32u / static_cast<std::uint32_t>(bits) <= 32u;  // no padding slot inside
      }
      if (whole_word) {
        switch (bits) {
          case 1: word = pack_whole_word<1>(op, xs, j, i0, st, seed, stream, e); break;
          case 2: word = pack_whole_word<2>(op, xs, j, i0, st, seed, stream, e); break;
          case 4: word = pack_whole_word<4>(op, xs, j, i0, st, seed, stream, e); break;
          default: word = pack_whole_word<8>(op, xs, j, i0, st, seed, stream, e); break;
        }
      } else {
        word = make_word(op, xv, w, start, end, bits, [&](std::uint64_t) { return st; }, seed, stream, e);
      }
      store_word(words, w, word, bit_lo, bit_hi, end == n);
    }
    __syncwarp();  // the slice is refilled by the warp's next bucket
  }
  add_elias(e, elias);
}

/// Per-bucket scales only (buckets larger than the fused kernel takes), same order as the fused one.
template <class Op>
__global__ void __launch_bounds__(kBlock) bucket_stats_kernel(Op op, const float* __restrict__ x, std::uint64_t n,
                                                              std::uint32_t d, std::uint64_t nb, float* __restrict__ s0,
                                                              float* __restrict__ s1) {
  const std::uint32_t lane8 = threadIdx.x & 7u;
  const std::uint64_t groups_per_block = kBlock / 8;
  for (std::uint64_t base = blockIdx.x * groups_per_block; base < nb; base += gridDim.x * groups_per_block) {
    const std::uint64_t b = base + threadIdx.x / 8;
    const bool valid = b < nb;
    const std::uint64_t start = valid ? b * d : 0;
    const std::uint32_t len = valid ? static_cast<std::uint32_t>(min(static_cast<std::uint64_t>(d), n - start)) : 0u;
    const Stats st = op.reduce(x, start, len, lane8);
    if (valid && lane8 == 0) store_scales(st, b, s0, s1);
  }
}

/// Word-parallel packing with precomputed scales (any bucket size; d = 0 means one layer-wide scale).
template <class Op>
__global__ void bucket_pack_kernel(Op op, const float* __restrict__ x, std::uint64_t n, std::uint32_t d, int bits,
                                   std::uint64_t n_words, std::uint32_t* __restrict__ words,
                                   const float* __restrict__ s0, const float* __restrict__ s1, std::uint64_t seed,
                                   std::uint64_t stream, unsigned long long* elias) {
  std::uint64_t e = 0;
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  const std::uint64_t w_start = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  // Uniform trip count per warp so that add_elias's shuffles see every lane.
  for (std::uint64_t wb = w_start - (threadIdx.x & 31u); wb < n_words; wb += stride) {
    const std::uint64_t w = wb + (threadIdx.x & 31u);
    if (w >= n_words) continue;
    std::uint64_t cached = ~std::uint64_t{0};
    Stats st{};
    auto stats_of = [&](std::uint64_t i) {
      const std::uint64_t b = d ? i / d : 0;
      if (b != cached) {
        cached = b;
        st.a = s0[b];
        st.b = s1 ? s1[b] : 0.0f;
      }
      return st;
    };
    words[w] = make_word(op, x, w, 0, n, bits, stats_of, seed, stream, e);
  }
  add_elias(e, elias);
}

template <class Op>
__global__ void bucket_decode_kernel(Op op, const std::uint8_t* __restrict__ codes, const float* __restrict__ s0,
                                     const float* __restrict__ s1, std::uint64_t n, std::uint32_t d, int bits,
                                     float* __restrict__ out, const float* acc, float* residual) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  const bool narrow = n <= 0xFFFFFFFFu;  // 32-bit division (a 64-bit one is a long software routine)
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const std::uint64_t b = d == 0 ? 0 : narrow ? static_cast<std::uint32_t>(i) / d : i / d;
    const Stats st{s0[b], s1 ? s1[b] : 0.0f};
    const float v = op.decode(get_code(codes, i, bits), st);
    out[i] = v;
    if (residual) residual[i] = acc[i] - v;
  }
}

/// Max |x| of the layer as the bit pattern of a non-negative float (monotone), by atomicMax.
__global__ void max_abs_kernel(const float* __restrict__ x, std::uint64_t n, unsigned* __restrict__ out_bits) {
  unsigned m = 0;
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    m = max(m, static_cast<unsigned>(__float_as_uint(x[i]) & 0x7FFFFFFFu));
  for (int o = 16; o > 0; o >>= 1) m = max(m, __shfl_xor_sync(kFullMask, m, o));
  if ((threadIdx.x & 31u) == 0 && m) atomicMax(out_bits, m);
}

unsigned max_blocks() { return static_cast<unsigned>(multiprocessor_count()) * 16u; }

template <class Op>
void encode(const Op& op, const float* x, std::uint64_t n, int d, int bits, std::uint64_t seed, std::uint64_t stream,
            std::uint8_t* codes, float* s0, float* s1, std::uint64_t* elias, Stream s) {
  if (elias) zero_on_device(elias, sizeof(std::uint64_t), s);
  if (n == 0) return;
  auto* words = reinterpret_cast<std::uint32_t*>(codes);
  auto* el = reinterpret_cast<unsigned long long*>(elias);
  const std::uint64_t nb = cpu::bucket_count(n, d);
  const std::uint64_t n_words = code_capacity_bytes(n, bits) / 4;
  if (d <= static_cast<int>(kWarpMaxBucket)) {
    // Words shared by two buckets are OR-ed by both warps into a zeroed buffer.
    if (any_shared_words(static_cast<std::uint64_t>(d), bits, nb)) zero_on_device(codes, n_words * 4, s);
    const unsigned grid = grid_for(nb, kWarpBlock / 32, max_blocks());
    const std::size_t smem = (kWarpBlock / 32) * std::size_t{PaddedSlice::slots(static_cast<std::uint32_t>(d))} * sizeof(float);
    bucket_warp_kernel<<<grid, kWarpBlock, smem, s>>>(op, x, n, static_cast<std::uint32_t>(d), nb, bits, words, s0, s1,
                                                      seed, stream, el);
    LGRECO_CUDA_CHECK_LAUNCH();
  } else if (d <= kFusedMaxBucket) {
    // Words shared by two buckets are OR-ed by both groups into a zeroed buffer.
    if (any_shared_words(static_cast<std::uint64_t>(d), bits, nb)) zero_on_device(codes, n_words * 4, s);
    const unsigned grid = grid_for(nb, kBlock / 8, max_blocks());
    bucket_fused_kernel<<<grid, kBlock, 0, s>>>(op, x, n, static_cast<std::uint32_t>(d), nb, bits, words, s0, s1, seed,
                                                stream, el);
    LGRECO_CUDA_CHECK_LAUNCH();
  } else {
    const unsigned grid = grid_for(nb, kBlock / 8, max_blocks());
    bucket_stats_kernel<<<grid, kBlock, 0, s>>>(op, x, n, static_cast<std::uint32_t>(d), nb, s0, s1);
    LGRECO_CUDA_CHECK_LAUNCH();
    bucket_pack_kernel<<<grid_for(n_words, 256, max_blocks()), 256, 0, s>>>(
        op, x, n, static_cast<std::uint32_t>(d), bits, n_words, words, s0, s1, seed, stream, el);
    LGRECO_CUDA_CHECK_LAUNCH();
  }
}

template <class Op>
void decode(const Op& op, const std::uint8_t* codes, const float* s0, const float* s1, std::uint64_t n, int d, int bits,
            float* out, Stream s, EfFuse ef) {
  if (n == 0) return;
  // Twice the resident blocks: one element per thread and iteration needs many threads in flight.
  bucket_decode_kernel<<<grid_for(n, 256, 2 * max_blocks()), 256, 0, s>>>(op, codes, s0, s1, n, static_cast<std::uint32_t>(d),
                                                                      bits, out, ef.acc, ef.residual);
  LGRECO_CUDA_CHECK_LAUNCH();
}

MaxMinOp maxmin_op(const MaxMinParams& p) {
  return {{p.bits, (1u << p.bits) - 1u, p.rounding == Rounding::kStochastic}};
}

NuqsgdOp nuqsgd_op(const NuqsgdParams& p) {
  const int bits = nuqsgd_code_bits(p.levels);
  return {{p.levels, bits - 1}};
}

}  // namespace
}  // namespace detail

void maxmin_compress(const float* x, std::uint64_t n, const MaxMinParams& p, std::uint64_t seed, std::uint64_t stream,
                     std::uint8_t* codes, float* mins, float* units, Stream s) {
  detail::encode(detail::maxmin_op(p), x, n, p.bucket_size, p.bits, seed, stream, codes, mins, units, nullptr, s);
}

void maxmin_decompress(const std::uint8_t* codes, const float* mins, const float* units, std::uint64_t n,
                       const MaxMinParams& p, float* out, Stream s, EfFuse ef) {
  detail::decode(detail::maxmin_op(p), codes, mins, units, n, p.bucket_size, p.bits, out, s, ef);
}

void qsgd_compress(const float* x, std::uint64_t n, const QsgdParams& p, std::uint64_t seed, std::uint64_t stream,
                   std::uint8_t* codes, float* norms, std::uint64_t* elias_bits, Stream s) {
  const detail::QsgdOp op{{p.levels, p.norm == QsgdNorm::kL2}};
  // As the reference: the Elias count is only computed for the Elias encoding (0 otherwise).
  const bool elias = elias_bits && p.encoding == QsgdEncoding::kElias;
  if (elias_bits && !elias) zero_on_device(elias_bits, sizeof(std::uint64_t), s);
  detail::encode(op, x, n, p.bucket_size, qsgd_code_bits(p.levels), seed, stream, codes, norms, nullptr,
                 elias ? elias_bits : nullptr, s);
}

void qsgd_decompress(const std::uint8_t* codes, const float* norms, std::uint64_t n, const QsgdParams& p, float* out,
                     Stream s, EfFuse ef) {
  const detail::QsgdOp op{{p.levels, p.norm == QsgdNorm::kL2}};
  detail::decode(op, codes, norms, nullptr, n, p.bucket_size, qsgd_code_bits(p.levels), out, s, ef);
}

void sign_compress(const float* x, std::uint64_t n, const SignParams& p, std::uint8_t* codes, float* scales, Stream s) {
  detail::encode(detail::SignOp{}, x, n, p.bucket_size, 1, 0, 0, codes, scales, nullptr, nullptr, s);
}

void sign_decompress(const std::uint8_t* codes, const float* scales, std::uint64_t n, const SignParams& p, float* out,
                     Stream s, EfFuse ef) {
  detail::decode(detail::SignOp{}, codes, scales, nullptr, n, p.bucket_size, 1, out, s, ef);
}

void terngrad_compress(const float* x, std::uint64_t n, std::uint64_t seed, std::uint64_t stream, std::uint8_t* codes,
                       float* scale, Stream s) {
  zero_on_device(scale, sizeof(float), s);
  if (n == 0) return;
  detail::max_abs_kernel<<<detail::grid_for(n, 256, detail::max_blocks()), 256, 0, s>>>(x, n,
                                                                                     reinterpret_cast<unsigned*>(scale));
  LGRECO_CUDA_CHECK_LAUNCH();
  const std::uint64_t n_words = code_capacity_bytes(n, 2) / 4;
  detail::bucket_pack_kernel<<<detail::grid_for(n_words, 256, detail::max_blocks()), 256, 0, s>>>(
      detail::TernGradOp{}, x, n, 0u, 2, n_words, reinterpret_cast<std::uint32_t*>(codes), scale, nullptr, seed, stream,
      nullptr);
  LGRECO_CUDA_CHECK_LAUNCH();
}

void terngrad_decompress(const std::uint8_t* codes, const float* scale, std::uint64_t n, float* out, Stream s,
                         EfFuse ef) {
  detail::decode(detail::TernGradOp{}, codes, scale, nullptr, n, 0, 2, out, s, ef);
}

void nuqsgd_compress(const float* x, std::uint64_t n, const NuqsgdParams& p, std::uint64_t seed, std::uint64_t stream,
                     std::uint8_t* codes, float* norms, Stream s) {
  detail::encode(detail::nuqsgd_op(p), x, n, p.bucket_size, nuqsgd_code_bits(p.levels), seed, stream, codes, norms,
                 nullptr, nullptr, s);
}

void nuqsgd_decompress(const std::uint8_t* codes, const float* norms, std::uint64_t n, const NuqsgdParams& p,
                       float* out, Stream s, EfFuse ef) {
  detail::decode(detail::nuqsgd_op(p), codes, norms, nullptr, n, p.bucket_size, nuqsgd_code_bits(p.levels), out, s, ef);
}

}  // namespace lgreco::kernels::cuda
