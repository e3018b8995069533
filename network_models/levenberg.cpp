// Robust Levenberg–Marquardt (stated in levenberg.hpp).
#include "network_models/levenberg.hpp"

#include <algorithm>
#include <cmath>

namespace lgreco::net {
namespace {

/// Solves A x = b (A symmetric positive definite after damping) by Gaussian elimination with pivoting.
std::vector<double> solve(std::vector<std::vector<double>> a, std::vector<double> b) {
  const std::size_t n = b.size();
  for (std::size_t c = 0; c < n; ++c) {
    std::size_t piv = c;
    for (std::size_t r = c + 1; r < n; ++r) if (std::abs(a[r][c]) > std::abs(a[piv][c])) piv = r;
    std::swap(a[c], a[piv]);
    std::swap(b[c], b[piv]);
    if (std::abs(a[c][c]) < 1e-300) a[c][c] = 1e-300;
    for (std::size_t r = c + 1; r < n; ++r) {
      const double f = a[r][c] / a[c][c];
      for (std::size_t k = c; k < n; ++k) a[r][k] -= f * a[c][k];
      b[r] -= f * b[c];
    }
  }
  std::vector<double> x(n);
  for (std::size_t i = n; i-- > 0;) {
    double s = b[i];
    for (std::size_t k = i + 1; k < n; ++k) s -= a[i][k] * x[k];
    x[i] = s / a[i][i];
  }
  return x;
}

// Σ_i w_i·jac[j][i]·jac[k][i] over the rows `take` admits (all when unset): each sum over the nonzero rows of the
// sparser column, in row order (the corpus fit's columns reach few files). With finite residuals a skipped term is
// ±0, and adding ±0 to a sum that starts at +0 changes nothing, so the sums are those over every row.
std::vector<std::vector<double>> gram(const std::vector<std::vector<double>>& jac, const std::vector<double>& w,
                                      const std::function<bool(std::size_t)>& take) {
  const std::size_t n = jac.size();
  std::vector<std::vector<std::size_t>> nonzero(n);
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t i = 0; i < w.size(); ++i)
      if (jac[j][i] != 0 && (!take || take(i))) nonzero[j].push_back(i);
  std::vector<std::vector<double>> a(n, std::vector<double>(n, 0));
  for (std::size_t j = 0; j < n; ++j) {
    for (std::size_t k = 0; k <= j; ++k) {
      double s = 0;
      for (std::size_t i : nonzero[nonzero[j].size() <= nonzero[k].size() ? j : k]) s += w[i] * jac[j][i] * jac[k][i];
      a[j][k] = a[k][j] = s;
    }
  }
  return a;
}

double prior_residual(const LmProblem& pb, const std::vector<double>& x, std::size_t j) {
  return pb.prior_weight * (x[j] - pb.centre[j]) / pb.sigma[j];
}

// Σ w_i·r_i² + Σ_j prior_j² for residuals `r` at `x`.
double objective_of(const LmProblem& pb, const std::vector<double>& x, const std::vector<double>& r, const std::vector<double>& w) {
  double f = 0;
  for (std::size_t i = 0; i < r.size(); ++i) f += w[i] * r[i] * r[i];
  for (std::size_t j = 0; j < x.size(); ++j) f += prior_residual(pb, x, j) * prior_residual(pb, x, j);
  return f;
}

}  // namespace

std::vector<double> lm_weights(const LmProblem& pb, const std::vector<double>& r) {
  std::vector<double> w;
  for (double v : r) w.push_back(1.0 / std::sqrt(1.0 + (v / pb.cauchy_scale) * (v / pb.cauchy_scale)));
  return w;
}

double lm_objective(const LmProblem& pb, const std::vector<double>& x, const std::vector<double>& w) {
  return objective_of(pb, x, pb.residuals(x), w);
}

void lm_clamp(const LmProblem& pb, std::vector<double>& x) {
  for (std::size_t j = 0; j < x.size(); ++j) x[j] = std::clamp(x[j], pb.lo[j], pb.hi[j]);
}

std::vector<std::vector<double>> lm_jacobian(const LmProblem& pb, const std::vector<double>& x, const std::vector<double>& r) {
  std::vector<std::vector<double>> jac(x.size());
  for (std::size_t j = 0; j < x.size(); ++j) {
    auto xh = x;
    xh[j] += kLmJacobianStep;
    const auto rh = pb.residuals_after_change ? pb.residuals_after_change(xh, j, r) : pb.residuals(xh);
    jac[j].resize(r.size());
    for (std::size_t i = 0; i < r.size(); ++i) jac[j][i] = (rh[i] - r[i]) / kLmJacobianStep;
  }
  return jac;
}

LmCurvature lm_curvature(const LmProblem& pb, const std::vector<double>& x) {
  LmCurvature c;
  c.residuals = pb.residuals(x);
  c.weights = lm_weights(pb, c.residuals);
  c.jacobian = lm_jacobian(pb, x, c.residuals);
  c.data = c.jacobian;
  for (std::size_t j = 0; j < x.size(); ++j) {
    for (std::size_t i = 0; i < c.residuals.size(); ++i) c.data[j][i] = c.weights[i] * c.data[j][i] * c.data[j][i];
    const double ps = pb.prior_weight / pb.sigma[j];
    c.prior.push_back(ps * ps);
  }
  return c;
}

std::vector<std::vector<double>> lm_inverse(std::vector<std::vector<double>> a) {
  const std::size_t n = a.size();
  std::vector<std::vector<double>> inv(n, std::vector<double>(n, 0));
  for (std::size_t i = 0; i < n; ++i) inv[i][i] = 1;
  for (std::size_t c = 0; c < n; ++c) {
    std::size_t piv = c;
    for (std::size_t r = c + 1; r < n; ++r)
      if (std::abs(a[r][c]) > std::abs(a[piv][c])) piv = r;
    std::swap(a[c], a[piv]);
    std::swap(inv[c], inv[piv]);
    const double d = a[c][c];
    for (std::size_t k = 0; k < n; ++k) a[c][k] /= d, inv[c][k] /= d;
    for (std::size_t r = 0; r < n; ++r) {
      if (r == c || a[r][c] == 0) continue;
      const double f = a[r][c];
      for (std::size_t k = 0; k < n; ++k) a[r][k] -= f * a[c][k], inv[r][k] -= f * inv[c][k];
    }
  }
  return inv;
}

std::vector<std::vector<double>> lm_gram(const LmCurvature& c, const std::function<bool(std::size_t)>& take) {
  return gram(c.jacobian, c.weights, take);
}

double lm_residual_variance(const LmCurvature& c) {
  double rss = 0;
  for (std::size_t i = 0; i < c.residuals.size(); ++i) rss += c.weights[i] * c.residuals[i] * c.residuals[i];
  const std::size_t rows = c.residuals.size(), n = c.jacobian.size();
  return rss / static_cast<double>(rows > n + 1 ? rows - n : 1);
}

std::vector<double> lm_standard_errors(const LmCurvature& c, const std::vector<std::vector<double>>& gram, double s2) {
  auto h = gram;
  for (std::size_t a = 0; a < h.size(); ++a) h[a][a] += c.prior[a];
  const auto cov = lm_inverse(std::move(h));
  std::vector<double> se;
  for (std::size_t a = 0; a < cov.size(); ++a) se.push_back(std::sqrt(s2 * cov[a][a]));
  return se;
}

std::vector<double> levenberg_marquardt(const LmProblem& pb, std::vector<double> x) {
  const std::size_t n = x.size();
  double mu = 1e-2;
  for (int it = 0; it < pb.max_iterations; ++it) {
    const auto r = pb.residuals(x);
    const auto w = lm_weights(pb, r);
    const double f0 = lm_objective(pb, x, w);
    const auto jac = lm_jacobian(pb, x, r);  // jac[j][i] = ∂r_i/∂x_j
    // JᵀWJ (the rows' Gauss–Newton matrix, as lm_gram) and JᵀWr, both over each column's nonzero rows in row order.
    auto a = gram(jac, w, {});
    std::vector<double> g(n, 0);
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t i = 0; i < r.size(); ++i)
        if (jac[j][i] != 0) g[j] += w[i] * jac[j][i] * r[i];
      const double ps = pb.prior_weight / pb.sigma[j];
      a[j][j] += ps * ps;
      g[j] += ps * prior_residual(pb, x, j);
    }
    bool improved = false;
    for (int tries = 0; tries < 12 && !improved; ++tries) {
      auto damped = a;
      for (std::size_t j = 0; j < n; ++j) damped[j][j] += mu * (a[j][j] + 1e-9);
      std::vector<double> neg(n);
      for (std::size_t j = 0; j < n; ++j) neg[j] = -g[j];
      auto step = solve(damped, neg);
      auto xn = x;
      for (std::size_t j = 0; j < n; ++j) xn[j] += std::isfinite(step[j]) ? step[j] : 0;
      lm_clamp(pb, xn);
      const double f1 = lm_objective(pb, xn, w);
      if (f1 < f0) {
        improved = true;
        const double gain = (f0 - f1) / std::max(f0, 1e-300);
        x = xn;
        mu = std::max(mu / 3, 1e-9);
        if (gain < 1e-9) return x;
      } else {
        mu *= 4;
      }
    }
    if (!improved) return x;
  }
  return x;
}

double lm_end_objective(const LmProblem& pb, const std::vector<double>& x) {
  const auto r = pb.residuals(x);  // once: the weights and the sum are of the same residuals
  return objective_of(pb, x, r, lm_weights(pb, r));
}

LmEnd lm_basin_hopping(const LmProblem& pb, LmEnd from, int hops, double scale, std::mt19937_64& gen) {
  for (int h = 0; h < hops; ++h) {
    std::vector<double> x = from.x;
    for (std::size_t j = 0; j < x.size(); ++j) x[j] += lm_gaussian(gen) * scale * std::min(pb.sigma[j], 1.0);
    lm_clamp(pb, x);
    x = levenberg_marquardt(pb, x);
    const double f = lm_end_objective(pb, x);
    if (f < from.objective) from = {std::move(x), f};
  }
  return from;
}

double lm_gaussian(std::mt19937_64& g) {
  const double u1 = (static_cast<double>(g() >> 11) + 1.0) / 9007199254740993.0;
  const double u2 = static_cast<double>(g() >> 11) / 9007199254740992.0;
  return std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace lgreco::net
