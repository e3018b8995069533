// Quantisers: packing layout, hand-derived small cases, unbiasedness and the QSGD variance bound.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/rng.hpp"
#include "kernels/cpu/bitpack.hpp"
#include "kernels/cpu/quantize.hpp"
#include "kernels/quant_math.hpp"
#include "kernels/wire.hpp"
#include "test_util.hpp"

using namespace lgreco::kernels;
using namespace lgreco::kernels::test;
namespace rng = lgreco::rng;

namespace {
std::vector<float> qsgd_rt(const std::vector<float>& x, const QsgdParams& p, std::uint64_t seed, std::uint64_t stream) {
  std::vector<std::uint8_t> codes(cpu::packed_bytes(x.size(), qsgd_code_bits(p.levels)));
  std::vector<float> norms(cpu::bucket_count(x.size(), p.bucket_size)), out(x.size());
  cpu::qsgd_compress(x, p, seed, stream, codes, norms);
  cpu::qsgd_decompress(codes, norms, p, out);
  return out;
}
std::vector<float> maxmin_rt(const std::vector<float>& x, const MaxMinParams& p, std::uint64_t seed, std::uint64_t stream) {
  std::vector<std::uint8_t> codes(cpu::packed_bytes(x.size(), p.bits));
  std::vector<float> mins(cpu::bucket_count(x.size(), p.bucket_size)), units(mins.size()), out(x.size());
  cpu::maxmin_compress(x, p, seed, stream, codes, mins, units);
  cpu::maxmin_decompress(codes, mins, units, p, out);
  return out;
}
std::vector<float> nuq_rt(const std::vector<float>& x, const NuqsgdParams& p, std::uint64_t seed, std::uint64_t stream) {
  std::vector<std::uint8_t> codes(cpu::packed_bytes(x.size(), nuqsgd_code_bits(p.levels)));
  std::vector<float> norms(cpu::bucket_count(x.size(), p.bucket_size)), out(x.size());
  cpu::nuqsgd_compress(x, p, seed, stream, codes, norms);
  cpu::nuqsgd_decompress(codes, norms, p, out);
  return out;
}
}  // namespace

TEST_CASE("packing layout: little-endian bit order, element i at bit i*b", "[quant][packing]") {
  // b = 3, codes 1..5: bits (LSB first) 100 010 110 001 101 → byte0 = bits 0..7 = 1,0,0,0,1,0,1,1
  // = 0b11010001 = 0xD1; byte1 = bits 8..14 = 0,0,0,1,1,0,1 → 0b1011000 = 0x58.
  const std::vector<std::uint16_t> codes = {1, 2, 3, 4, 5};
  std::vector<std::uint8_t> bytes(2, 0);
  cpu::pack_run(codes.data(), codes.size(), 3, bytes.data(), 0);
  CHECK(bytes[0] == 0xD1);
  CHECK(bytes[1] == 0x58);
  // Same through the element-wise put_code, and runs that start mid-byte.
  for (int b : {1, 2, 3, 4, 5, 7, 8, 11, 16}) {
    const std::uint64_t n = 77;
    std::vector<std::uint16_t> c(n), back(n);
    for (std::uint64_t i = 0; i < n; ++i) c[i] = static_cast<std::uint16_t>(rng::bits_at(1, b, i) & ((1u << b) - 1));
    std::vector<std::uint8_t> ref(cpu::packed_bytes(n, b), 0), run(ref.size(), 0);
    for (std::uint64_t i = 0; i < n; ++i) put_code(ref.data(), i, b, c[i]);
    cpu::pack_run(c.data(), 13, b, run.data(), 0);
    cpu::pack_run(c.data() + 13, n - 13, b, run.data(), 13);
    CAPTURE(b);
    REQUIRE(run == ref);
    cpu::unpack_run(run.data(), 5, n - 5, b, back.data());
    for (std::uint64_t i = 5; i < n; ++i) REQUIRE(back[i - 5] == c[i]);
    for (std::uint64_t i = 0; i < n; ++i) REQUIRE(get_code(ref.data(), i, b) == c[i]);
  }
}

TEST_CASE("max-min: hand-derived cases", "[quant][maxmin]") {
  MaxMinParams p;
  p.bits = 2;
  p.bucket_size = 4;
  p.rounding = Rounding::kNearest;
  // Bucket {0, 1, 2, 3}: unit = 3/3 = 1, levels 0..3, exact. Bucket {5, 5, 5, 5}: unit 0 → exact.
  // Bucket {0, 0.4, 0.6, 3}: unit 1, nearest levels 0, 0, 1, 3.
  const std::vector<float> x = {0, 1, 2, 3, 5, 5, 5, 5, 0, 0.4f, 0.6f, 3};
  std::vector<std::uint8_t> codes(cpu::packed_bytes(x.size(), 2));
  std::vector<float> mins(3), units(3), out(x.size());
  cpu::maxmin_compress(x, p, 0, 0, codes, mins, units);
  CHECK(units == std::vector<float>{1, 0, 1});
  CHECK(mins == std::vector<float>{0, 5, 0});
  // levels 0,1,2,3 | 0,0,0,0 | 0,0,1,3 → bytes 0b11100100, 0x00, 0b11010000
  CHECK(codes == std::vector<std::uint8_t>{0xE4, 0x00, 0xD0});
  cpu::maxmin_decompress(codes, mins, units, p, out);
  CHECK(out == std::vector<float>{0, 1, 2, 3, 5, 5, 5, 5, 0, 0, 1, 3});
  // Stochastic: x = 0.25 in a bucket {0, 0.25, 1} with 1 bit (unit 1) goes up iff u < 0.25.
  MaxMinParams s;
  s.bits = 1;
  s.bucket_size = 3;
  const std::vector<float> y = {0, 0.25f, 1};
  const auto r = maxmin_rt(y, s, 77, 5);
  const float u = rng::uniform_at(77, 5, 1);
  CHECK(r[1] == (u < 0.25f ? 1.0f : 0.0f));
  CHECK(r[0] == 0.0f);
  CHECK(r[2] == 1.0f);
  // Bucket min/max in the ordered-key order: −0 < +0, so {+0, −0} has min −0 and max +0.
  const std::vector<float> zeros = {0.0f, -0.0f, 0.0f, 0.0f};
  std::vector<std::uint8_t> zc(cpu::packed_bytes(4, 2));
  std::vector<float> zmin(1), zunit(1), zout(4);
  cpu::maxmin_compress(zeros, p, 0, 0, zc, zmin, zunit);
  CHECK(same_bits(zmin[0], -0.0f));
  CHECK(zunit[0] == 0.0f);
  cpu::maxmin_decompress(zc, zmin, zunit, p, zout);
  for (float z : zout) CHECK(z == 0.0f);
}

TEST_CASE("max-min, QSGD, NUQSGD, TernGrad are unbiased over seeds", "[quant][unbiased]") {
  // Each element's decoded value is a two-point random variable between neighbouring levels a ≤ x
  // ≤ b with E = x (unbiased), range b − a ≤ step (variance ≤ step²/4). By Hoeffding, the mean of
  // T independent draws deviates from x by t = 3·step/√T with probability ≤ 2·exp(−2T t²/step²) =
  // 2·exp(−18) ≈ 3e-8 per element; over 4 methods × 300 elements a false alarm has probability
  // < 5e-5 (and the seeds are fixed, so the outcome is reproducible). Steps: QSGD norm/s, max-min
  // unit, NUQSGD at most norm/2 (between 1/2 and 1), TernGrad s = max|g| (bounded here by 2s).
  const std::uint64_t n = 300;
  const int T = 2000;
  const auto x = make_input(n, Dist::kNormal, 3);
  QsgdParams qp;
  qp.levels = 3;
  qp.bucket_size = 64;
  MaxMinParams mp;
  mp.bits = 3;
  mp.bucket_size = 64;
  NuqsgdParams np;
  np.levels = 3;
  np.bucket_size = 64;
  std::vector<double> sq(n, 0), sm(n, 0), sn(n, 0), st(n, 0);
  for (int t = 0; t < T; ++t) {
    const auto a = qsgd_rt(x, qp, 1000 + t, 1), b = maxmin_rt(x, mp, 1000 + t, 1), c = nuq_rt(x, np, 1000 + t, 1);
    std::vector<std::uint8_t> tc(cpu::packed_bytes(n, 2));
    std::vector<float> d(n);
    const float s = cpu::terngrad_compress(x, 1000 + t, 1, tc);
    cpu::terngrad_decompress(tc, s, d);
    for (std::uint64_t i = 0; i < n; ++i) {
      sq[i] += a[i];
      sm[i] += b[i];
      sn[i] += c[i];
      st[i] += d[i];
    }
  }
  float gmax = 0;
  for (float v : x) gmax = std::max(gmax, std::fabs(v));
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::span<const float> bucket(x.data() + (i / 64) * 64, std::min<std::uint64_t>(64, n - (i / 64) * 64));
    const double norm = cpu::bucket_l2_norm(bucket);
    float lo = bucket[0], hi = bucket[0];
    for (float v : bucket) lo = std::min(lo, v), hi = std::max(hi, v);
    const double k = 6.0 / (2.0 * std::sqrt(static_cast<double>(T)));
    CAPTURE(i, x[i]);
    REQUIRE(std::fabs(sq[i] / T - x[i]) <= k * norm / qp.levels + 1e-6);     // step norm/s
    REQUIRE(std::fabs(sm[i] / T - x[i]) <= k * (hi - lo) / 7.0 + 1e-6);      // step unit
    REQUIRE(std::fabs(sn[i] / T - x[i]) <= k * norm / 2.0 + 1e-6);           // widest NUQSGD step: 1/2
    REQUIRE(std::fabs(st[i] / T - x[i]) <= k * 2.0 * gmax + 1e-6);           // ternary step s (two-sided: 2s bound)
  }
}

TEST_CASE("QSGD variance is within the QSGD bound min(d/s^2, sqrt(d)/s)·||v||^2", "[quant][qsgd]") {
  // Per bucket, E||Q(v) − v||² ≤ min(d/s², √d/s)·||v||² (QSGD Lemma 3.1). Averaged over T seeds the
  // empirical value fluctuates; the bound holds with large slack for Gaussian v (the expected value
  // is about Σ r(1−r)/s²·||v||² with r = s|v_i|/||v||), so we check mean ≤ bound directly.
  for (int s : {1, 3, 7}) {
    QsgdParams p;
    p.levels = s;
    p.bucket_size = 256;
    const auto x = make_input(256, Dist::kHeavyTailed, 8);
    double norm2 = 0;
    for (float v : x) norm2 += static_cast<double>(v) * v;
    const int T = 200;
    double err = 0;
    for (int t = 0; t < T; ++t) {
      const auto q = qsgd_rt(x, p, 50 + t, 2);
      for (std::size_t i = 0; i < x.size(); ++i) err += (q[i] - x[i]) * static_cast<double>(q[i] - x[i]);
    }
    const double d = 256;
    const double bound = std::min(d / (s * s), std::sqrt(d) / s) * norm2;
    CAPTURE(s, err / T, bound);
    CHECK(err / T <= bound);
  }
}

TEST_CASE("QSGD and NUQSGD hand-derived cases", "[quant][qsgd][nuqsgd]") {
  // v = (3, −4): ||v|| = 5, s = 1: r = (0.6, 0.8): element i becomes ±5 iff u_i < r_i, else 0.
  QsgdParams p;
  p.levels = 1;
  p.bucket_size = 2;
  const std::vector<float> v = {3, -4};
  const auto q = qsgd_rt(v, p, 9, 4);
  CHECK(q[0] == (rng::uniform_at(9, 4, 0) < 0.6f ? 5.0f : 0.0f));
  CHECK(q[1] == (rng::uniform_at(9, 4, 1) < 0.8f ? -5.0f : 0.0f));
  // Max norm (QSGDinf), s = 2: scale 4: r = (1.5, 2) → 3 is 2 or 4, −4 is exactly −4.
  p.levels = 2;
  p.norm = QsgdNorm::kMax;
  const auto qi = qsgd_rt(v, p, 9, 4);
  CHECK(qi[0] == (rng::uniform_at(9, 4, 0) < 0.5f ? 4.0f : 2.0f));
  CHECK(qi[1] == -4.0f);
  // NUQSGD s = 2: levels {0, 1/4, 1/2, 1}; r = (0.6, 0.8) in [1/2, 1]: p = (0.2, 0.6).
  NuqsgdParams np;
  np.levels = 2;
  np.bucket_size = 2;
  const auto nq = nuq_rt(v, np, 9, 4);
  const float p0 = (0.6f - 0.5f) / 0.5f, p1 = (0.8f - 0.5f) / 0.5f;
  CHECK(nq[0] == (rng::uniform_at(9, 4, 0) < p0 ? 5.0f : 2.5f));
  CHECK(nq[1] == (rng::uniform_at(9, 4, 1) < p1 ? -5.0f : -2.5f));
  // A value below the smallest level 2^−s = 1/4 rounds between 0 and 1/4: bucket (0.1, 1).
  const std::vector<float> w = {0.1f, 1.0f};
  const float nw_norm = cpu::bucket_l2_norm(w);
  const float r = 0.1f / nw_norm, pw = (r - 0.0f) / 0.25f;
  const auto nw = nuq_rt(w, np, 3, 3);
  CHECK(nw[0] == (rng::uniform_at(3, 3, 0) < pw ? 0.25f * nw_norm : 0.0f));
}

TEST_CASE("sign and TernGrad hand-derived cases", "[quant][sign][terngrad]") {
  SignParams sp;
  sp.bucket_size = 2;
  const std::vector<float> x = {1, -3, 0, -0.0f, 2};  // buckets {1,−3}, {0,−0}, {2}
  std::vector<std::uint8_t> codes(1);
  std::vector<float> scales(3), out(5);
  cpu::sign_compress(x, sp, codes, scales);
  CHECK(scales == std::vector<float>{2, 0, 2});
  CHECK(codes[0] == 0b11101);  // 1, 0, 1 (+0), 1 (−0 counts as ≥ 0), 1
  cpu::sign_decompress(codes, scales, sp, out);
  CHECK(out == std::vector<float>{2, -2, 0, 0, 2});
  // TernGrad: s = max|x| = 4; the element at ±s is kept with probability 1.
  const std::vector<float> t = {4, -4, 0, 1};
  std::vector<std::uint8_t> tc(1);
  std::vector<float> to(4);
  const float s = cpu::terngrad_compress(t, 5, 6, tc);
  cpu::terngrad_decompress(tc, s, to);
  CHECK(s == 4.0f);
  CHECK(to[0] == 4.0f);
  CHECK(to[1] == -4.0f);
  CHECK(to[2] == 0.0f);
  CHECK(to[3] == (rng::uniform_at(5, 6, 3) < 0.25f ? 4.0f : 0.0f));
}

TEST_CASE("all-zero buckets decode to exact zeros", "[quant]") {
  const std::vector<float> z(100, 0.0f);
  for (float v : qsgd_rt(z, QsgdParams{}, 1, 1)) CHECK(v == 0.0f);
  for (float v : maxmin_rt(z, MaxMinParams{}, 1, 1)) CHECK(v == 0.0f);
  for (float v : nuq_rt(z, NuqsgdParams{}, 1, 1)) CHECK(v == 0.0f);
}

TEST_CASE("block-wise uniforms equal rng::uniform_at element by element", "[quant][rng]") {
  // fill_uniform may use a vectorised Philox; it must match the scalar definition bit for bit,
  // from any starting element, including block counters that cross a 2^32 boundary.
  for (std::uint64_t first : {0ull, 1ull, 3ull, 4ull, 37ull, (1ull << 34) - 40})
    for (std::uint64_t count : {0ull, 5ull, 31ull, 32ull, 33ull, 100ull, 1000ull}) {
      std::vector<float> u(count);
      cpu::fill_uniform(12345678901ull, rng::stream_of(9, 4), first, count, u.data());
      std::vector<std::uint32_t> w(count);
      cpu::fill_bits(12345678901ull, rng::stream_of(9, 4), first, count, w.data());
      for (std::uint64_t j = 0; j < count; ++j) {
        CAPTURE(first, count, j);
        REQUIRE(same_bits(u[j], rng::uniform_at(12345678901ull, rng::stream_of(9, 4), first + j)));
        REQUIRE(w[j] == rng::bits_at(12345678901ull, rng::stream_of(9, 4), first + j));
      }
    }
}

TEST_CASE("NUQSGD index equals the level search written out directly", "[quant][nuqsgd]") {
  // Reference: levels L_0 = 0, L_j = 2^(j−s−1); find the interval [L_j, L_{j+1}] of r = |v|/norm
  // by scanning, then round up with probability (r − L_j)/(L_{j+1} − L_j); r ≥ 1 → s + 1.
  for (int s : {1, 2, 4, 7, 30}) {
    std::vector<float> lv(s + 2, 0.0f);
    for (int j = 1; j <= s + 1; ++j) lv[j] = std::ldexp(1.0f, j - s - 1);
    for (std::uint64_t i = 0; i < 20000; ++i) {
      const float norm = 1.0f + rng::uniform_at(5, 1, i) * 3.0f;
      const float v = (rng::uniform_at(5, 2, i) * 2.0f - 1.0f) * norm * (i % 7 == 0 ? 1e-6f : 1.0f) * (i % 11 == 0 ? 1.5f : 1.0f);
      const float u = rng::uniform_at(5, 3, i);
      const float r = std::fabs(v) / norm;
      std::uint32_t expect;
      if (r >= 1.0f) {
        expect = s + 1;
      } else {
        int j = 0;
        while (j + 1 <= s && lv[j + 1] <= r) ++j;
        const float p = (r - lv[j]) / (lv[j + 1] - lv[j]);
        expect = j + (u < p ? 1 : 0);
      }
      CAPTURE(s, v, norm, r, u);
      REQUIRE(nuqsgd_index(v, norm, s, u) == expect);
    }
  }
}
