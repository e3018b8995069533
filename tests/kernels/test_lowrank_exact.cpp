// exact_rank_errors on its Krylov path (min(n, m) > dense_limit) against dense references: matrices
// of known singular values A = U·diag(σ)·Vᵀ (random orthonormal U, V), Eigen's SVDs on random
// matrices, and the stated guarantee: e_k ≤ ê_k ≤ max((1+δ)·e_k, e_k + 1e-3·δ·‖A‖_F), lower ≤ e_k.
#include <catch2/catch.hpp>

#include <Eigen/Dense>
#include <Eigen/SVD>
#include <cmath>

#include "core/rng.hpp"
#include "kernels/cpu/powersgd.hpp"

namespace cpu = lgreco::kernels::cpu;
namespace rng = lgreco::rng;

namespace {

Eigen::MatrixXd gaussian(std::int64_t rows, std::int64_t cols, std::uint64_t seed, std::uint64_t stream) {
  Eigen::MatrixXd g(rows, cols);
  for (std::int64_t i = 0; i < rows * cols; ++i) g.data()[i] = rng::normal_at(seed, stream, static_cast<std::uint64_t>(i));
  return g;
}

Eigen::MatrixXd orthonormal(std::int64_t rows, std::int64_t cols, std::uint64_t seed, std::uint64_t stream) {
  const Eigen::HouseholderQR<Eigen::MatrixXd> qr(gaussian(rows, cols, seed, stream));
  return qr.householderQ() * Eigen::MatrixXd::Identity(rows, cols);
}

struct Layer {
  std::int64_t n = 0, m = 0;
  std::vector<float> a;     // row-major float (what the function sees)
  Eigen::VectorXd sigma;    // singular values of the stored float matrix (BDCSVD, double)
  double rounding_fro = 0;  // ‖A_float − A_exact‖_F when A was built from a known σ
};

Layer from_double(const Eigen::MatrixXd& x) {
  Layer l;
  l.n = x.rows();
  l.m = x.cols();
  l.a.resize(static_cast<std::size_t>(l.n * l.m));
  Eigen::MatrixXd stored(l.n, l.m);
  double r = 0;
  for (std::int64_t i = 0; i < l.n; ++i)
    for (std::int64_t j = 0; j < l.m; ++j) {
      const float f = static_cast<float>(x(i, j));
      l.a[i * l.m + j] = f;
      stored(i, j) = f;
      r += (f - x(i, j)) * (f - x(i, j));
    }
  l.rounding_fro = std::sqrt(r);
  l.sigma = Eigen::BDCSVD<Eigen::MatrixXd>(stored).singularValues();
  return l;
}

Layer with_sigma(std::int64_t n, std::int64_t m, const std::vector<double>& sigma, std::uint64_t seed) {
  const std::int64_t p = std::min(n, m);
  const Eigen::MatrixXd u = orthonormal(n, p, seed, 1), v = orthonormal(m, p, seed, 2);
  Eigen::VectorXd s(p);
  for (std::int64_t i = 0; i < p; ++i) s[i] = sigma[i];
  return from_double(u * s.asDiagonal() * v.transpose());
}

double tail_norm(const Eigen::VectorXd& s, std::int64_t k) {
  double t = 0;
  for (std::int64_t i = k; i < s.size(); ++i) t += s[i] * s[i];
  return std::sqrt(t);
}

// Checks the guarantee of exact_rank_errors for every k in [k_min, k_max] against the reference
// errors e_k of the stored matrix. `slack` absorbs the reference's and double rounding (≪ the bound).
void check_guarantee(const Layer& l, std::int64_t k_min, std::int64_t k_max, const cpu::ExactRankOptions& opt,
                     const std::vector<double>* exact_formula = nullptr) {
  const auto r = cpu::exact_rank_errors(l.a, l.n, l.m, k_min, k_max, opt);
  const double fro = std::sqrt(r.frobenius_sq);
  const double delta = opt.tolerance;
  const double slack = 1e-6 * fro;  // sqrt(1e-12·F): rounding of F − Σθ and of the reference SVD
  CAPTURE(l.n, l.m, k_min, k_max, delta, r.iterations, r.certificate_iterations, r.converged);
  REQUIRE(r.converged);
  REQUIRE(r.errors.size() == static_cast<std::size_t>(k_max - k_min + 1));
  REQUIRE(std::fabs(fro - l.sigma.norm()) <= 1e-9 * fro);
  for (std::int64_t k = k_min; k <= k_max; ++k) {
    const double e = tail_norm(l.sigma, k), est = r.errors[k - k_min], lo = r.lower[k - k_min];
    CAPTURE(k, e, est, lo);
    CHECK(est >= e - slack);
    CHECK(est <= std::max((1 + delta) * e, e + 1e-3 * delta * fro) + slack);
    CHECK(lo <= e + slack);
    CHECK(lo <= est);
    if (exact_formula) {  // the model's value, off by at most the float rounding of A (Mirsky)
      const double f = (*exact_formula)[k - k_min];
      CAPTURE(f, l.rounding_fro);
      CHECK(std::fabs(est - f) <= delta * f + 1e-3 * delta * fro + l.rounding_fro + slack);
    }
  }
}

}  // namespace

TEST_CASE("exact rank errors: flat spectrum, e_k = σ·sqrt(p − k)", "[powersgd][exact][krylov]") {
  for (auto [n, m] : {std::pair<std::int64_t, std::int64_t>{200, 160}, {160, 300}, {700, 520}}) {
    const std::int64_t p = std::min(n, m);
    const double s = 0.37;
    const auto l = with_sigma(n, m, std::vector<double>(p, s), 31 + n);
    std::vector<double> formula;
    for (std::int64_t k = 0; k <= 32; ++k) formula.push_back(s * std::sqrt(static_cast<double>(p - k)));
    check_guarantee(l, 0, 32, {}, &formula);
  }
}

TEST_CASE("exact rank errors: slowly decaying, clustered and rank-deficient spectra", "[powersgd][exact][krylov]") {
  SECTION("slow decay σ_i = 0.99^i") {
    std::vector<double> s(170);
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = std::pow(0.99, static_cast<double>(i));
    check_guarantee(with_sigma(400, 170, s, 5), 1, 24, {});
    check_guarantee(with_sigma(170, 400, s, 6), 1, 24, {});
  }
  SECTION("clusters of repeated values across k") {
    std::vector<double> s(150);
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = 4.0 / (1.0 + static_cast<double>(i / 6));  // groups of 6
    check_guarantee(with_sigma(300, 150, s, 7), 0, 32, {});
  }
  SECTION("a strong cluster above a flat noise floor") {
    std::vector<double> s(260, 0.5);
    for (int i = 0; i < 10; ++i) s[i] = 3.0 + 1e-4 * i;
    check_guarantee(with_sigma(260, 400, s, 8), 2, 16, {});
  }
  SECTION("rank-deficient: rank 20 < k_max") {
    std::vector<double> s(140, 0.0);
    for (int i = 0; i < 20; ++i) s[i] = 1.0 + 0.1 * i;
    const auto l = with_sigma(250, 140, s, 9);
    check_guarantee(l, 1, 32, {});
    const auto r = cpu::exact_rank_errors(l.a, l.n, l.m, 20, 32);
    for (double e : r.errors) CHECK(e <= 1e-5 * std::sqrt(r.frobenius_sq));  // only float rounding remains
  }
  SECTION("tight tolerance δ = 1e-6") {
    std::vector<double> s(180);
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = 1.0 / std::sqrt(1.0 + static_cast<double>(i));
    cpu::ExactRankOptions opt;
    opt.tolerance = 1e-6;
    check_guarantee(with_sigma(240, 180, s, 10), 1, 12, opt);
  }
}

TEST_CASE("exact rank errors: tall and wide shapes just above the dense limit", "[powersgd][exact][krylov]") {
  for (auto [n, m] : {std::pair<std::int64_t, std::int64_t>{600, 129}, {129, 600}, {130, 130}, {2000, 140}}) {
    const std::int64_t p = std::min(n, m);
    std::vector<double> s(p);
    for (std::int64_t i = 0; i < p; ++i) s[i] = 2.0 * std::exp(-0.02 * static_cast<double>(i)) + 0.1;
    check_guarantee(with_sigma(n, m, s, 40 + m), 1, 32, {});
  }
}

TEST_CASE("exact rank errors agree with Eigen's SVDs on random matrices", "[powersgd][exact][krylov]") {
  // Gaussian noise (the flat-spectrum case of real layers), against BDCSVD inside check_guarantee,
  // and directly against JacobiSVD.
  for (auto [n, m] : {std::pair<std::int64_t, std::int64_t>{400, 180}, {180, 350}, {300, 300}}) {
    const Layer l = from_double(gaussian(n, m, 77, 3));
    check_guarantee(l, 1, 32, {});
    Eigen::MatrixXd stored(n, m);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < m; ++j) stored(i, j) = l.a[i * m + j];
    const Eigen::VectorXd js = Eigen::JacobiSVD<Eigen::MatrixXd>(stored).singularValues();
    const auto r = cpu::exact_rank_errors(l.a, n, m, 1, 32);
    for (std::int64_t k = 1; k <= 32; ++k) {
      const double e = tail_norm(js, k);
      CAPTURE(n, m, k, e, r.errors[k - 1]);
      CHECK(std::fabs(r.errors[k - 1] - e) <= 1e-3 * e + 1e-6 * std::sqrt(r.frobenius_sq));
    }
  }
  // A low-rank signal plus noise (decaying head, flat tail).
  Eigen::MatrixXd x = 0.05 * gaussian(320, 200, 78, 4) + gaussian(320, 6, 78, 5) * gaussian(6, 200, 78, 6);
  check_guarantee(from_double(x), 1, 32, {});
}

TEST_CASE("exact rank errors: all-zero and zero-size matrices, bad arguments", "[powersgd][exact][krylov]") {
  const auto z = cpu::exact_rank_errors(std::vector<float>(200 * 150, 0.0f), 200, 150, 0, 32);
  CHECK(z.converged);
  for (double e : z.errors) CHECK(e == 0.0);
  for (auto [n, m] : {std::pair<std::int64_t, std::int64_t>{0, 0}, {0, 7}, {7, 0}}) {
    const auto r = cpu::exact_rank_errors({}, n, m, 0, 4);
    CAPTURE(n, m);
    CHECK(r.converged);
    REQUIRE(r.errors.size() == 5);
    for (double e : r.errors) CHECK(e == 0.0);
  }
  CHECK_THROWS(cpu::exact_rank_errors(std::vector<float>(6, 1.0f), 2, 4, 0, 1));
  CHECK_THROWS(cpu::exact_rank_errors(std::vector<float>(6, 1.0f), 2, 3, 2, 1));
  cpu::ExactRankOptions bad;
  bad.tolerance = 0;
  CHECK_THROWS(cpu::exact_rank_errors(std::vector<float>(6, 1.0f), 2, 3, 0, 1, bad));
}

TEST_CASE("exact rank errors: Krylov path on small matrices, determinism, honest non-convergence",
          "[powersgd][exact][krylov]") {
  // dense_limit 0 forces the Krylov path; tiny p exhausts R^p and gives the eigenvalues.
  cpu::ExactRankOptions opt;
  opt.dense_limit = 0;
  std::vector<double> s = {3, 2, 2, 1, 0.5, 0.25, 0.1, 0.0};
  check_guarantee(with_sigma(20, 8, s, 3), 0, 10, opt);
  check_guarantee(with_sigma(8, 30, s, 4), 1, 5, opt);
  // Same seed, same result; another seed changes only rounding-level digits.
  const Layer l = from_double(gaussian(300, 200, 9, 9));
  const auto r1 = cpu::exact_rank_errors(l.a, 300, 200, 1, 16), r2 = cpu::exact_rank_errors(l.a, 300, 200, 1, 16);
  CHECK(r1.errors == r2.errors);
  CHECK(r1.iterations == r2.iterations);
  // A budget too small for the certificate is reported as not converged (ê_k still ≥ e_k).
  cpu::ExactRankOptions tiny;
  tiny.tolerance = 1e-12;
  tiny.max_iterations = 2;
  const auto r3 = cpu::exact_rank_errors(l.a, 300, 200, 1, 16, tiny);
  CHECK_FALSE(r3.converged);
  CHECK(r3.iterations == 2);
  for (std::int64_t k = 1; k <= 16; ++k) CHECK(r3.errors[k - 1] >= tail_norm(l.sigma, k) - 1e-6 * l.sigma.norm());
}

TEST_CASE("symmetric_eigen agrees with Jacobi and diagonalises", "[powersgd][exact][eigen]") {
  for (std::int64_t p : {1, 2, 3, 7, 40, 150}) {
    for (int kind = 0; kind < 3; ++kind) {
      Eigen::MatrixXd g = gaussian(p, p, 5 + kind, p);
      Eigen::MatrixXd sym = g + g.transpose();
      if (kind == 1) sym = g * g.transpose();  // PSD
      if (kind == 2) {                         // repeated eigenvalues: Q·diag(1,1,1,2,2,…)·Qᵀ
        const Eigen::MatrixXd q = orthonormal(p, p, 6, p);
        Eigen::VectorXd d(p);
        for (std::int64_t i = 0; i < p; ++i) d[i] = static_cast<double>(i / 3);
        sym = q * d.asDiagonal() * q.transpose();
      }
      std::vector<double> flat(sym.data(), sym.data() + p * p);
      std::vector<double> vecs;
      const auto ev = cpu::symmetric_eigen(flat, p, &vecs);
      const auto ref = cpu::jacobi_eigen(flat, p);
      const double scale = sym.norm();
      CAPTURE(p, kind);
      for (std::int64_t i = 0; i < p; ++i) CHECK(std::fabs(ev[i] - ref[i]) <= 1e-12 * scale);
      Eigen::MatrixXd v(p, p);
      for (std::int64_t i = 0; i < p; ++i)
        for (std::int64_t c = 0; c < p; ++c) v(i, c) = vecs[i * p + c];
      Eigen::VectorXd lam(p);
      for (std::int64_t i = 0; i < p; ++i) lam[i] = ev[i];
      CHECK((sym * v - v * lam.asDiagonal()).norm() <= 1e-11 * scale);
      CHECK((v.transpose() * v - Eigen::MatrixXd::Identity(p, p)).norm() <= 1e-11 * std::sqrt(static_cast<double>(p)));
    }
  }
}

TEST_CASE("symmetric_eigen deflates at zero eigenvalues", "[powersgd][exact][eigen]") {
  // Eigenvalues 0,0,0,1,1,1,2,…: the off-diagonal entries next to the zero eigenvalues can never
  // pass a test relative to their (zero) diagonal neighbours; the QR iteration must still deflate
  // them (absolute floor eps·‖T‖) and agree with Jacobi to rounding.
  for (std::int64_t p : {40, 100, 150, 200}) {
    for (int seed = 0; seed < 8; ++seed) {
      const Eigen::MatrixXd q = orthonormal(p, p, 100 + seed, p);
      Eigen::VectorXd d(p);
      for (std::int64_t i = 0; i < p; ++i) d[i] = static_cast<double>(i / 3);
      const Eigen::MatrixXd sym = q * d.asDiagonal() * q.transpose();
      std::vector<double> flat(sym.data(), sym.data() + p * p);
      const auto ev = cpu::symmetric_eigen(flat, p);
      CAPTURE(p, seed);
      for (std::int64_t i = 0; i < p; ++i) CHECK(std::fabs(ev[i] - d[p - 1 - i]) <= 1e-11 * sym.norm());
    }
  }
}
