#include "kernels/cpu/quantize.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/bitpack.hpp"
#include "kernels/cpu/simd.hpp"
#include "kernels/quant_math.hpp"
#include "kernels/wire.hpp"

namespace lgreco::kernels::cpu {
namespace {

// Per-bucket scratch: uniforms and codes of one bucket (buckets are processed one at a time so the
// scratch stays in L1/L2).
struct Scratch {
  std::vector<float> u;
  std::vector<std::uint16_t> codes;
  explicit Scratch(std::uint64_t d) : u(d), codes(d) {}
};

inline double combine8(const double* p) { return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7])); }

// Ordered-integer key of a float: signed-integer order equals float order, with −0 < +0 (the key
// is its own inverse). Integer min/max reductions vectorise where float ones may not.
inline std::int32_t ordered_key(float f) {
  std::int32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b ^ ((b >> 31) & 0x7FFFFFFF);
}
inline float from_ordered_key(std::int32_t k) {
  const std::int32_t b = k ^ ((k >> 31) & 0x7FFFFFFF);
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

// The loops below are compiled as target clones (AVX2 + baseline). Clones must not throw (GCC
// gives their dispatch no unwind information), so they are noexcept and never allocate.

// Bucket min and max in the ordered-key total order (n ≥ 1).
LGRECO_CPU_CLONES void ordered_minmax(const float* v, std::uint64_t n, float& mn, float& mx) noexcept {
  std::int32_t lo = INT32_MAX, hi = INT32_MIN;
  for (std::uint64_t j = 0; j < n; ++j) {
    const std::int32_t k = ordered_key(v[j]);
    lo = k < lo ? k : lo;
    hi = k > hi ? k : hi;
  }
  mn = from_ordered_key(lo);
  mx = from_ordered_key(hi);
}

// max |v| (0 for n = 0) via the magnitude bit patterns (monotone for finite values).
LGRECO_CPU_CLONES float max_abs(const float* v, std::uint64_t n) noexcept {
  std::int32_t m = 0;
  for (std::uint64_t j = 0; j < n; ++j) {
    std::int32_t b;
    std::memcpy(&b, v + j, sizeof b);
    b &= 0x7FFFFFFF;
    m = b > m ? b : m;
  }
  float f;
  std::memcpy(&f, &m, sizeof f);
  return f;
}

LGRECO_CPU_CLONES void maxmin_levels(const float* v, std::uint64_t n, float mn, float unit, const float* u,
                                     std::uint32_t max_level, std::uint16_t* codes) noexcept {
  for (std::uint64_t j = 0; j < n; ++j) codes[j] = static_cast<std::uint16_t>(maxmin_level(v[j], mn, unit, u[j], max_level));
}

LGRECO_CPU_CLONES void maxmin_decode_run(const std::uint16_t* c, std::uint64_t n, float mn, float unit, float* o) noexcept {
  for (std::uint64_t j = 0; j < n; ++j) o[j] = maxmin_decode(mn, unit, c[j]);
}

LGRECO_CPU_CLONES void qsgd_codes(const float* v, std::uint64_t n, float norm, int s, const float* u,
                                  std::uint16_t* codes) noexcept {
  for (std::uint64_t j = 0; j < n; ++j) codes[j] = static_cast<std::uint16_t>(qsgd_code(v[j], qsgd_level(v[j], norm, s, u[j]), s));
}

LGRECO_CPU_CLONES void qsgd_decode_run(const std::uint16_t* c, std::uint64_t n, int s, float norm, float* o) noexcept {
  for (std::uint64_t j = 0; j < n; ++j) o[j] = qsgd_decode(c[j], s, norm);
}

LGRECO_CPU_CLONES void nuqsgd_codes(const float* v, std::uint64_t n, float norm, int s, int mbits, const float* u,
                                    std::uint16_t* codes) noexcept {
  if (norm == 0.0f) {  // all-zero bucket: index 0, code 0 (no sign for zero magnitudes)
    for (std::uint64_t j = 0; j < n; ++j) codes[j] = 0;
    return;
  }
  for (std::uint64_t j = 0; j < n; ++j)
    codes[j] = static_cast<std::uint16_t>(nuqsgd_code(v[j], nuqsgd_index_nonzero_norm(v[j], norm, s, u[j]), mbits));
}

LGRECO_CPU_CLONES void nuqsgd_decode_run(const std::uint16_t* c, std::uint64_t n, int s, int mbits, float norm,
                                         float* o) noexcept {
  for (std::uint64_t j = 0; j < n; ++j) o[j] = nuqsgd_decode(c[j], s, mbits, norm);
}

LGRECO_CPU_CLONES void terngrad_codes(const float* v, std::uint64_t n, float s, const float* u,
                                      std::uint16_t* codes) noexcept {
  for (std::uint64_t j = 0; j < n; ++j) codes[j] = static_cast<std::uint16_t>(terngrad_code(v[j], s, u[j]));
}

// Sign bits of n = 8·m values straight into m bytes (layout of pack_run with b = 1).
LGRECO_CPU_CLONES void sign_bytes(const float* v, std::uint64_t m, std::uint8_t* out) noexcept {
  for (std::uint64_t q = 0; q < m; ++q) {
    unsigned byte = 0;
    for (int l = 0; l < 8; ++l) byte |= sign_code(v[8 * q + l]) << l;
    out[q] = static_cast<std::uint8_t>(byte);
  }
}

LGRECO_CPU_CLONES void sign_decode_run(const std::uint16_t* c, std::uint64_t n, float sc, float* o) noexcept {
  for (std::uint64_t j = 0; j < n; ++j) o[j] = c[j] ? sc : -sc;
}

// Prefetches the next bucket while this one is processed: the bucket loops alternate one DRAM
// read (norm / min-max) with compute on L1-resident data (draws, levels, packing), so issuing the
// next bucket's loads early overlaps the two.
inline void prefetch_next(const float* x, std::uint64_t start, std::uint64_t d, std::uint64_t n) {
  // Distance: 8 KiB ahead or one bucket, whichever is further (small buckets finish quickly).
  const std::uint64_t ahead = std::max<std::uint64_t>(d, 2048);
  const std::uint64_t next = start + ahead;
  if (next >= n) return;
  const std::uint64_t end = std::min(n, next + d);
  for (std::uint64_t i = next; i < end; i += 16) __builtin_prefetch(x + i, 0, 3);
}

// std::fill, not memset: an empty span's data() may be null, which memset must not be given.
void zero(std::span<std::uint8_t> codes) { std::fill(codes.begin(), codes.end(), std::uint8_t{0}); }

// u for a bucket: uniforms, or the constant 0.5 (nearest rounding).
void bucket_uniforms(bool stochastic, std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::uint64_t count,
                     float* u) {
  if (stochastic) fill_uniform(seed, stream, first, count, u);
  else std::fill(u, u + count, 0.5f);
}

}  // namespace

LGRECO_CPU_CLONES float bucket_l2_norm(std::span<const float> b) {
  double part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  const float* x = b.data();
  const std::size_t n = b.size();
  std::size_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) part[l] += static_cast<double>(x[j + l]) * static_cast<double>(x[j + l]);
  for (; j < n; ++j) part[j & 7u] += static_cast<double>(x[j]) * static_cast<double>(x[j]);
  return static_cast<float>(std::sqrt(combine8(part)));
}

LGRECO_CPU_CLONES float bucket_l1_mean(std::span<const float> b) {
  if (b.empty()) return 0.0f;
  double part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  const float* x = b.data();
  const std::size_t n = b.size();
  std::size_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) part[l] += static_cast<double>(std::fabs(x[j + l]));
  for (; j < n; ++j) part[j & 7u] += static_cast<double>(std::fabs(x[j]));
  return static_cast<float>(combine8(part) / static_cast<double>(n));
}

void maxmin_compress(std::span<const float> x, const MaxMinParams& p, std::uint64_t seed, std::uint64_t stream,
                     std::span<std::uint8_t> codes, std::span<float> mins, std::span<float> units) {
  zero(codes);
  const std::uint64_t n = x.size();
  const auto d = static_cast<std::uint64_t>(p.bucket_size);
  const std::uint32_t max_level = (1u << p.bits) - 1u;
  const bool stochastic = p.rounding == Rounding::kStochastic;
  Scratch s(std::min(d, n));
  for (std::uint64_t b = 0, start = 0; start < n; ++b, start += d) {
    const std::uint64_t cnt = std::min(d, n - start);
    const float* v = x.data() + start;
    prefetch_next(x.data(), start, d, n);
    float mn, mx;
    ordered_minmax(v, cnt, mn, mx);
    const float unit = maxmin_unit(mn, mx, p.bits);
    mins[b] = mn;
    units[b] = unit;
    bucket_uniforms(stochastic, seed, stream, start, cnt, s.u.data());
    maxmin_levels(v, cnt, mn, unit, s.u.data(), max_level, s.codes.data());
    pack_run(s.codes.data(), cnt, p.bits, codes.data(), start);
  }
}

void maxmin_decompress(std::span<const std::uint8_t> codes, std::span<const float> mins, std::span<const float> units,
                       const MaxMinParams& p, std::span<float> out) {
  const std::uint64_t n = out.size();
  const auto d = static_cast<std::uint64_t>(p.bucket_size);
  std::vector<std::uint16_t> c(std::min(d, n));
  for (std::uint64_t b = 0, start = 0; start < n; ++b, start += d) {
    const std::uint64_t cnt = std::min(d, n - start);
    unpack_run(codes.data(), start, cnt, p.bits, c.data());
    const float mn = mins[b], unit = units[b];
    float* o = out.data() + start;
    maxmin_decode_run(c.data(), cnt, mn, unit, o);
  }
}

std::uint64_t qsgd_compress(std::span<const float> x, const QsgdParams& p, std::uint64_t seed, std::uint64_t stream,
                            std::span<std::uint8_t> codes, std::span<float> norms) {
  zero(codes);
  const std::uint64_t n = x.size();
  const auto d = static_cast<std::uint64_t>(p.bucket_size);
  const int s = p.levels;
  const int bits = qsgd_code_bits(s);
  std::uint64_t elias = 0;
  Scratch sc(std::min(d, n));
  for (std::uint64_t b = 0, start = 0; start < n; ++b, start += d) {
    const std::uint64_t cnt = std::min(d, n - start);
    const float* v = x.data() + start;
    prefetch_next(x.data(), start, d, n);
    float norm;
    if (p.norm == QsgdNorm::kL2) {
      norm = bucket_l2_norm({v, cnt});
    } else {
      norm = max_abs(v, cnt);
    }
    norms[b] = norm;
    fill_uniform(seed, stream, start, cnt, sc.u.data());
    qsgd_codes(v, cnt, norm, s, sc.u.data(), sc.codes.data());
    if (p.encoding == QsgdEncoding::kElias)
      for (std::uint64_t j = 0; j < cnt; ++j) {
        const std::uint64_t xi = static_cast<std::uint64_t>(std::abs(static_cast<int>(sc.codes[j]) - s));
        elias += elias_gamma_bits(xi + 1) + (xi != 0 ? 1u : 0u);
      }
    pack_run(sc.codes.data(), cnt, bits, codes.data(), start);
  }
  return elias;
}

void qsgd_decompress(std::span<const std::uint8_t> codes, std::span<const float> norms, const QsgdParams& p,
                     std::span<float> out) {
  const std::uint64_t n = out.size();
  const auto d = static_cast<std::uint64_t>(p.bucket_size);
  const int bits = qsgd_code_bits(p.levels);
  std::vector<std::uint16_t> c(std::min(d, n));
  for (std::uint64_t b = 0, start = 0; start < n; ++b, start += d) {
    const std::uint64_t cnt = std::min(d, n - start);
    unpack_run(codes.data(), start, cnt, bits, c.data());
    float* o = out.data() + start;
    qsgd_decode_run(c.data(), cnt, p.levels, norms[b], o);
  }
}

void sign_compress(std::span<const float> x, const SignParams& p, std::span<std::uint8_t> codes,
                   std::span<float> scales) {
  zero(codes);
  const std::uint64_t n = x.size();
  const auto d = static_cast<std::uint64_t>(p.bucket_size);
  std::vector<std::uint16_t> c(std::min(d, n));
  for (std::uint64_t b = 0, start = 0; start < n; ++b, start += d) {
    const std::uint64_t cnt = std::min(d, n - start);
    const float* v = x.data() + start;
    prefetch_next(x.data(), start, d, n);
    scales[b] = bucket_l1_mean({v, cnt});
    std::uint64_t j = 0;
    if ((start & 7u) == 0) {
      // Byte-aligned: build each byte of 8 sign bits directly (same layout as pack_run).
      sign_bytes(v, cnt / 8, codes.data() + (start >> 3));
      j = cnt / 8 * 8;
    }
    for (std::uint64_t t = j; t < cnt; ++t) c[t - j] = static_cast<std::uint16_t>(sign_code(v[t]));
    pack_run(c.data(), cnt - j, 1, codes.data(), start + j);
  }
}

void sign_decompress(std::span<const std::uint8_t> codes, std::span<const float> scales, const SignParams& p,
                     std::span<float> out) {
  const std::uint64_t n = out.size();
  const auto d = static_cast<std::uint64_t>(p.bucket_size);
  std::vector<std::uint16_t> c(std::min(d, n));
  for (std::uint64_t b = 0, start = 0; start < n; ++b, start += d) {
    const std::uint64_t cnt = std::min(d, n - start);
    unpack_run(codes.data(), start, cnt, 1, c.data());
    const float sc = scales[b];
    float* o = out.data() + start;
    sign_decode_run(c.data(), cnt, sc, o);
  }
}

float terngrad_compress(std::span<const float> x, std::uint64_t seed, std::uint64_t stream, std::span<std::uint8_t> codes) {
  zero(codes);
  const float s = max_abs(x.data(), x.size());
  const std::uint64_t n = x.size();
  constexpr std::uint64_t kChunk = 4096;
  Scratch sc(std::min(kChunk, n));
  for (std::uint64_t start = 0; start < n; start += kChunk) {
    const std::uint64_t cnt = std::min(kChunk, n - start);
    fill_uniform(seed, stream, start, cnt, sc.u.data());
    terngrad_codes(x.data() + start, cnt, s, sc.u.data(), sc.codes.data());
    pack_run(sc.codes.data(), cnt, 2, codes.data(), start);
  }
  return s;
}

void terngrad_decompress(std::span<const std::uint8_t> codes, float scale, std::span<float> out) {
  const std::uint64_t n = out.size();
  constexpr std::uint64_t kChunk = 4096;
  std::vector<std::uint16_t> c(std::min(kChunk, n));
  for (std::uint64_t start = 0; start < n; start += kChunk) {
    const std::uint64_t cnt = std::min(kChunk, n - start);
    unpack_run(codes.data(), start, cnt, 2, c.data());
    for (std::uint64_t j = 0; j < cnt; ++j)
      out[start + j] = c[j] == 1 ? 0.0f : (c[j] == 2 ? scale : -scale);
  }
}

void nuqsgd_compress(std::span<const float> x, const NuqsgdParams& p, std::uint64_t seed, std::uint64_t stream,
                     std::span<std::uint8_t> codes, std::span<float> norms) {
  zero(codes);
  const std::uint64_t n = x.size();
  const auto d = static_cast<std::uint64_t>(p.bucket_size);
  const int bits = nuqsgd_code_bits(p.levels);
  const int mbits = bits - 1;
  Scratch sc(std::min(d, n));
  for (std::uint64_t b = 0, start = 0; start < n; ++b, start += d) {
    const std::uint64_t cnt = std::min(d, n - start);
    const float* v = x.data() + start;
    prefetch_next(x.data(), start, d, n);
    const float norm = bucket_l2_norm({v, cnt});
    norms[b] = norm;
    fill_uniform(seed, stream, start, cnt, sc.u.data());
    nuqsgd_codes(v, cnt, norm, p.levels, mbits, sc.u.data(), sc.codes.data());
    pack_run(sc.codes.data(), cnt, bits, codes.data(), start);
  }
}

void nuqsgd_decompress(std::span<const std::uint8_t> codes, std::span<const float> norms, const NuqsgdParams& p,
                       std::span<float> out) {
  const std::uint64_t n = out.size();
  const auto d = static_cast<std::uint64_t>(p.bucket_size);
  const int bits = nuqsgd_code_bits(p.levels);
  std::vector<std::uint16_t> c(std::min(d, n));
  for (std::uint64_t b = 0, start = 0; start < n; ++b, start += d) {
    const std::uint64_t cnt = std::min(d, n - start);
    unpack_run(codes.data(), start, cnt, bits, c.data());
    float* o = out.data() + start;
    nuqsgd_decode_run(c.data(), cnt, p.levels, bits - 1, norms[b], o);
  }
}

}  // namespace lgreco::kernels::cpu
