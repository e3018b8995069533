#include "kernels/cpu/quantize.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/bitpack.hpp"
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

void zero(std::span<std::uint8_t> codes) { std::memset(codes.data(), 0, codes.size()); }

// u for a bucket: uniforms, or the constant 0.5 (nearest rounding).
void bucket_uniforms(bool stochastic, std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::uint64_t count,
                     float* u) {
  if (stochastic) fill_uniform(seed, stream, first, count, u);
  else std::fill(u, u + count, 0.5f);
}

}  // namespace

float bucket_l2_norm(std::span<const float> b) {
  double part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  const float* x = b.data();
  const std::size_t n = b.size();
  std::size_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) part[l] += static_cast<double>(x[j + l]) * static_cast<double>(x[j + l]);
  for (; j < n; ++j) part[j & 7u] += static_cast<double>(x[j]) * static_cast<double>(x[j]);
  return static_cast<float>(std::sqrt(combine8(part)));
}

float bucket_l1_mean(std::span<const float> b) {
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
    float lo[8], hi[8];
    for (int l = 0; l < 8; ++l) lo[l] = hi[l] = v[0];
    std::uint64_t j = 0;
    for (; j + 8 <= cnt; j += 8)
      for (int l = 0; l < 8; ++l) {
        lo[l] = v[j + l] < lo[l] ? v[j + l] : lo[l];
        hi[l] = v[j + l] > hi[l] ? v[j + l] : hi[l];
      }
    for (; j < cnt; ++j) {
      lo[0] = v[j] < lo[0] ? v[j] : lo[0];
      hi[0] = v[j] > hi[0] ? v[j] : hi[0];
    }
    float mn = lo[0], mx = hi[0];
    for (int l = 1; l < 8; ++l) {
      mn = lo[l] < mn ? lo[l] : mn;
      mx = hi[l] > mx ? hi[l] : mx;
    }
    const float unit = maxmin_unit(mn, mx, p.bits);
    mins[b] = mn;
    units[b] = unit;
    bucket_uniforms(stochastic, seed, stream, start, cnt, s.u.data());
    for (j = 0; j < cnt; ++j) s.codes[j] = static_cast<std::uint16_t>(maxmin_level(v[j], mn, unit, s.u[j], max_level));
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
    for (std::uint64_t j = 0; j < cnt; ++j) o[j] = maxmin_decode(mn, unit, c[j]);
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
    float norm;
    if (p.norm == QsgdNorm::kL2) {
      norm = bucket_l2_norm({v, cnt});
    } else {
      float m = 0.0f;
      for (std::uint64_t j = 0; j < cnt; ++j) m = std::fabs(v[j]) > m ? std::fabs(v[j]) : m;
      norm = m;
    }
    norms[b] = norm;
    fill_uniform(seed, stream, start, cnt, sc.u.data());
    for (std::uint64_t j = 0; j < cnt; ++j) {
      const std::uint32_t xi = qsgd_level(v[j], norm, s, sc.u[j]);
      sc.codes[j] = static_cast<std::uint16_t>(qsgd_code(v[j], xi, s));
    }
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
    for (std::uint64_t j = 0; j < cnt; ++j) o[j] = qsgd_decode(c[j], p.levels, norms[b]);
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
    scales[b] = bucket_l1_mean({v, cnt});
    for (std::uint64_t j = 0; j < cnt; ++j) c[j] = static_cast<std::uint16_t>(sign_code(v[j]));
    pack_run(c.data(), cnt, 1, codes.data(), start);
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
    for (std::uint64_t j = 0; j < cnt; ++j) o[j] = c[j] ? sc : -sc;
  }
}

float terngrad_compress(std::span<const float> x, std::uint64_t seed, std::uint64_t stream, std::span<std::uint8_t> codes) {
  zero(codes);
  float s = 0.0f;
  for (float v : x) s = std::fabs(v) > s ? std::fabs(v) : s;
  const std::uint64_t n = x.size();
  constexpr std::uint64_t kChunk = 4096;
  Scratch sc(std::min(kChunk, n));
  for (std::uint64_t start = 0; start < n; start += kChunk) {
    const std::uint64_t cnt = std::min(kChunk, n - start);
    fill_uniform(seed, stream, start, cnt, sc.u.data());
    for (std::uint64_t j = 0; j < cnt; ++j)
      sc.codes[j] = static_cast<std::uint16_t>(terngrad_code(x[start + j], s, sc.u[j]));
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
    const float norm = bucket_l2_norm({v, cnt});
    norms[b] = norm;
    fill_uniform(seed, stream, start, cnt, sc.u.data());
    for (std::uint64_t j = 0; j < cnt; ++j)
      sc.codes[j] = static_cast<std::uint16_t>(nuqsgd_code(v[j], nuqsgd_index(v[j], norm, p.levels, sc.u[j]), mbits));
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
    for (std::uint64_t j = 0; j < cnt; ++j) o[j] = nuqsgd_decode(c[j], p.levels, bits - 1, norms[b]);
  }
}

}  // namespace lgreco::kernels::cpu
