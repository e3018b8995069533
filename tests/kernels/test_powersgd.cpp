// PowerSGD: exact reconstruction at full rank, rank-1 hand case, warm start, and the exact
// best-rank-k errors on matrices built with known singular values.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/rng.hpp"
#include "kernels/compressor.hpp"
#include "kernels/cpu/powersgd.hpp"
#include "test_util.hpp"

using namespace lgreco::kernels;
namespace rng = lgreco::rng;

namespace {
double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den += static_cast<double>(a[i]) * a[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// Orthonormal columns (rows×cols, double) by Gram-Schmidt of Gaussian draws.
std::vector<double> random_orthonormal(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  std::vector<double> q(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = rng::normal_at(seed, 1, i);
  for (int pass = 0; pass < 2; ++pass)
    for (std::int64_t c = 0; c < cols; ++c) {
      for (std::int64_t d = 0; d < c; ++d) {
        double dot = 0;
        for (std::int64_t i = 0; i < rows; ++i) dot += q[i * cols + c] * q[i * cols + d];
        for (std::int64_t i = 0; i < rows; ++i) q[i * cols + c] -= dot * q[i * cols + d];
      }
      double nn = 0;
      for (std::int64_t i = 0; i < rows; ++i) nn += q[i * cols + c] * q[i * cols + c];
      for (std::int64_t i = 0; i < rows; ++i) q[i * cols + c] /= std::sqrt(nn);
    }
  return q;
}

// A = U·diag(σ)·Vᵀ (n×m, fp32) with the given singular values.
std::vector<float> with_singular_values(std::int64_t n, std::int64_t m, const std::vector<double>& sigma, std::uint64_t seed) {
  const auto p = static_cast<std::int64_t>(sigma.size());
  const auto u = random_orthonormal(n, p, seed), v = random_orthonormal(m, p, seed + 1);
  std::vector<float> a(static_cast<std::size_t>(n * m));
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < m; ++j) {
      double s = 0;
      for (std::int64_t k = 0; k < p; ++k) s += u[i * p + k] * sigma[k] * v[j * p + k];
      a[i * m + j] = static_cast<float>(s);
    }
  return a;
}

std::vector<float> run_powersgd(const std::vector<float>& a, std::vector<std::int64_t> shape, ParamList params,
                                LayerState& st, std::uint64_t step = 0) {
  auto c = make_compressor(parse_method("powersgd", params));
  std::vector<float> out(a.size());
  LayerContext ctx;
  ctx.name = "w";
  ctx.shape = shape;
  ctx.step = step;
  c->compress(a, out, st, ctx);
  return out;
}
}  // namespace

TEST_CASE("PowerSGD at full rank reconstructs the matrix", "[powersgd]") {
  // r = min(n, m): P = M·Q spans M's column space, so M̂ = P·Pᵀ·M = M up to fp32 rounding. The
  // matrix has singular values in [1, 10] (κ = 10): tolerance 1e-4 relative (≈ ε·κ·√r·100).
  constexpr double kTol = 1e-4;
  for (const char* orth : {"gram-schmidt", "qr"})
    for (auto [n, m] : std::vector<std::pair<int, int>>{{6, 5}, {5, 9}, {2, 2}, {40, 7}}) {
      const int r = std::min(n, m);
      std::vector<double> sigma(r);
      for (int i = 0; i < r; ++i) sigma[i] = 10.0 - 9.0 * i / std::max(1, r - 1);
      const auto a = with_singular_values(n, m, sigma, 21);
      LayerState st;
      const auto out = run_powersgd(a, {n, m},
                                    {{"rank", std::to_string(r)}, {"min_compression_rate", "0.01"}, {"orthogonalization", orth}}, st);
      CAPTURE(orth, n, m, rel_err(a, out));
      CHECK(rel_err(a, out) < kTol);
    }
}

TEST_CASE("PowerSGD rank 1 reconstructs a rank-1 matrix; all-zero and 1-D layers", "[powersgd]") {
  // M = u·vᵀ: P = M·q = u·(vᵀq), normalised; Q = Mᵀ·P = v·|u|·sign → P·Qᵀ = u·vᵀ.
  const int n = 8, m = 12;
  std::vector<float> a(n * m);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < m; ++j) a[i * m + j] = static_cast<float>((i + 1) * (j % 5 - 2.0));
  LayerState st;
  const auto out = run_powersgd(a, {n, m}, {{"rank", "1"}}, st);
  CHECK(rel_err(a, out) < 1e-6);
  CHECK(st.q_rows == m);
  CHECK(st.q_cols == 1);

  LayerState z;
  const auto zo = run_powersgd(std::vector<float>(n * m, 0.0f), {n, m}, {{"rank", "2"}}, z);
  for (float v : zo) CHECK(v == 0.0f);
  LayerState zq;
  const auto zq_out = run_powersgd(std::vector<float>(64 * 64, 0.0f), {64, 64}, {{"rank", "4"}}, zq);
  for (float v : zq_out) REQUIRE(v == 0.0f);

  // 1-D: never compressed, sent as is.
  LayerState b;
  const std::vector<float> bias = {1, 2, 3};
  auto c = make_compressor(parse_method("powersgd"));
  std::vector<float> o(3);
  LayerContext ctx;
  const CompressInfo info = c->compress(bias, o, b, ctx);
  CHECK_FALSE(info.compressed);
  CHECK(o == bias);
  CHECK(info.wire.bytes == 12);
}

TEST_CASE("PowerSGD warm start: repeated steps on the same matrix do not increase the error", "[powersgd]") {
  // Each warm-started step is one more subspace iteration on the same M: the best rank-r error is
  // approached monotonically (up to fp32 noise, 1e-5 relative).
  const int n = 60, m = 50;
  std::vector<double> sigma(20);
  for (int i = 0; i < 20; ++i) sigma[i] = std::pow(0.8, i);
  const auto a = with_singular_values(n, m, sigma, 5);
  LayerState st;
  double prev = 1e9;
  for (int step = 0; step < 6; ++step) {
    const auto out = run_powersgd(a, {n, m}, {{"rank", "3"}}, st, step);
    const double e = rel_err(a, out);
    CAPTURE(step, e, prev);
    CHECK(e <= prev * (1 + 1e-5));
    prev = e;
  }
  // After 6 iterations with gap σ_4/σ_3 = 0.8 the error is close to the optimum sqrt(Σ_{i>3} σ_i²)/‖A‖.
  double tail = 0, all = 0;
  for (int i = 0; i < 20; ++i) (i >= 3 ? tail : all) += sigma[i] * sigma[i];
  const double best = std::sqrt(tail / (tail + all));
  CHECK(prev < best * 1.05);
  // Without warm start every step draws a fresh Q and does a single iteration.
  LayerState cold;
  const auto s0 = run_powersgd(a, {n, m}, {{"rank", "3"}, {"warm_start", "false"}}, cold, 0);
  const auto s1 = run_powersgd(a, {n, m}, {{"rank", "3"}, {"warm_start", "false"}}, cold, 1);
  CHECK(s0 != s1);
}

TEST_CASE("exact best-rank-k errors equal sqrt of the tail of known singular values", "[powersgd][exact]") {
  // A built from σ (fp32 storage perturbs each entry by ≤ ε·|a|, hence σ_i by ≤ ε·‖A‖_F): errors
  // compared with relative tolerance 1e-5 of ‖A‖_F.
  struct Case {
    std::int64_t n, m;
    std::int64_t dense_limit;
  };
  for (const Case c : {Case{30, 20, 256}, Case{20, 45, 256}, Case{300, 280, 256}, Case{120, 90, 0}, Case{70, 150, 0}}) {
    const std::int64_t p = std::min(c.n, c.m);
    std::vector<double> sigma(p);
    for (std::int64_t i = 0; i < p; ++i) sigma[i] = 5.0 * std::pow(0.85, static_cast<double>(i)) + (i < 3 ? 4.0 : 0.0);
    const auto a = with_singular_values(c.n, c.m, sigma, 100 + c.n);
    cpu::ExactRankOptions opt;
    opt.dense_limit = c.dense_limit;
    opt.tolerance = 1e-6;  // certified relative accuracy of e_k (≤ 1e-6·‖A‖_F), far inside the check below
    const std::int64_t kmax = std::min<std::int64_t>(p + 2, 12);
    const auto r = cpu::exact_rank_errors(a, c.n, c.m, 0, kmax, opt);
    double fro = 0;
    for (double s : sigma) fro += s * s;
    CAPTURE(c.n, c.m, c.dense_limit, r.iterations, r.converged);
    CHECK(r.converged);
    for (std::int64_t k = 0; k <= kmax; ++k) {
      double tail = 0;
      for (std::int64_t i = k; i < p; ++i) tail += sigma[i] * sigma[i];
      CAPTURE(k, r.errors[k], std::sqrt(tail));
      CHECK(std::fabs(r.errors[k] - std::sqrt(tail)) <= 1e-5 * std::sqrt(fro));
    }
  }
  // Layers thinner than k: error 0 from k = min(n, m) on.
  const std::vector<float> thin = {1, 2, 3, 4, 5, 6};  // 3×2, rank ≤ 2
  const auto r = cpu::exact_rank_errors(thin, 3, 2, 1, 5);
  CHECK(r.errors[1] == 0.0);  // k = 2
  CHECK(r.errors[4] == 0.0);  // k = 5
  CHECK(r.errors[0] > 0.0);
  const auto z = cpu::exact_rank_errors(std::vector<float>(12, 0.0f), 3, 4, 0, 3);
  for (double e : z.errors) CHECK(e == 0.0);
}
