#pragma once
/// Robust Levenberg–Marquardt in log-parameter space, shared by the single-sweep calibration (fit.hpp)
/// and the corpus fit (corpus_fit.hpp).
///
/// Minimises Σ_i w_i·r_i(x)² + Σ_j (λ·(x_j − μ_j)/σ_j)² over x (ln of the parameters) within [lo, hi],
/// with Cauchy IRLS weights w_i = 1/√(1 + (r_i/c)²) recomputed from the current point every iteration
/// (a single bad row cannot pull the fit), a numeric forward-difference Jacobian (lm_jacobian) and
/// multiplicative damping. Deterministic: the same start gives the same end point.
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

namespace lgreco::net {

/// The problem: data residuals r(x) and the log-normal priors and bounds of each parameter.
struct LmProblem {
  std::function<std::vector<double>(const std::vector<double>&)> residuals;
  /// Optional, for the Jacobian: the residuals at `x`, which differs from a point whose residuals are `r` in
  /// x_j alone. It must return exactly residuals(x); a problem whose rows each depend on few parameters
  /// recomputes only the rows x_j reaches. Unset: residuals(x).
  std::function<std::vector<double>(const std::vector<double>& x, std::size_t j, const std::vector<double>& r)> residuals_after_change;
  std::vector<double> centre;   ///< μ_j = ln(prior centre)
  std::vector<double> sigma;    ///< σ_j
  std::vector<double> lo, hi;   ///< bounds of x_j (ln units)
  double prior_weight = 0.05;   ///< λ: one σ costs as much as a 5 % error on one row
  double cauchy_scale = 0.05;   ///< c: the ln-error at which a row's weight falls to 1/√2
  int max_iterations = 200;
};

/// Cauchy weights of residuals `r`.
std::vector<double> lm_weights(const LmProblem& pb, const std::vector<double>& r);
/// The objective at `x` with weights `w`.
double lm_objective(const LmProblem& pb, const std::vector<double>& x, const std::vector<double>& w);
/// Clamps `x` into the bounds.
void lm_clamp(const LmProblem& pb, std::vector<double>& x);
/// The Jacobian at `x`, whose residuals are `r`: jac[j][i] = ∂r_i/∂x_j by a forward difference of step
/// kLmJacobianStep (through residuals_after_change when set). What each Levenberg–Marquardt iteration uses.
std::vector<std::vector<double>> lm_jacobian(const LmProblem& pb, const std::vector<double>& x, const std::vector<double>& r);
inline constexpr double kLmJacobianStep = 1e-4;
/// The curvature the fit's objective has in each x_j alone (the Gauss–Newton diagonal at `x`), split into
/// its parts: data[j][i] = w_i·(∂r_i/∂x_j)², the Cauchy weights w of the residuals at `x`, and prior[j] =
/// (λ/σ_j)². The share of a row (or a set of rows) in data[j] plus prior[j] is how much of what pins x_j,
/// the others held, comes from it.
struct LmCurvature {
  std::vector<std::vector<double>> data;
  std::vector<double> prior;
  std::vector<std::vector<double>> jacobian;  ///< jacobian[j][i] = ∂r_i/∂x_j at `x`
  std::vector<double> residuals, weights;     ///< r_i and w_i at `x`
};
LmCurvature lm_curvature(const LmProblem& pb, const std::vector<double>& x);
/// The inverse of a symmetric positive definite matrix (Gauss–Jordan with partial pivoting); a singular one
/// gives non-finite entries.
std::vector<std::vector<double>> lm_inverse(std::vector<std::vector<double>> a);
/// The rows' Gauss–Newton matrix Σ_i w_i·∇r_i·∇r_iᵀ at the point of `c`, over the rows `take` admits (every
/// row when unset); the priors are not in it.
std::vector<std::vector<double>> lm_gram(const LmCurvature& c, const std::function<bool(std::size_t)>& take = {});
/// s² = Σ_i w_i·r_i² / (rows − parameters), at least one degree of freedom: the weighted residuals' spread.
double lm_residual_variance(const LmCurvature& c);
/// Standard errors of x (ln of the parameters), every parameter fitted together: √(s2·[(gram + diag(prior))⁻¹]_jj),
/// a local (Laplace) approximation that takes the weighted residuals as noise of variance s2 and the priors as the
/// objective weighs them. With gram = lm_gram(c) and s2 = lm_residual_variance(c): the fit's own uncertainty.
std::vector<double> lm_standard_errors(const LmCurvature& c, const std::vector<std::vector<double>>& gram, double s2);
/// Runs Levenberg–Marquardt from `x` (clamped first by the caller); returns the end point.
std::vector<double> levenberg_marquardt(const LmProblem& pb, std::vector<double> x);
/// The objective at `x` with the weights of its own residuals: what a search compares end points by.
double lm_end_objective(const LmProblem& pb, const std::vector<double>& x);

/// An end point of a search and its lm_end_objective.
struct LmEnd {
  std::vector<double> x;
  double objective = 0;
};

/// Monotonic basin hopping from the end point `from`: `hops` times, Levenberg–Marquardt from the best end
/// point so far moved by a normal step of scale·min(σ_j, 1) in every x_j (drawn from `gen`, then clamped);
/// an end point with a lower objective becomes the best. A model with kinks (the corpus fit's: where the
/// fastest algorithm or protocol changes) stops Levenberg–Marquardt at a kink; a hop from the best point
/// crosses it, where independent random starts each end at a kink of their own.
LmEnd lm_basin_hopping(const LmProblem& pb, LmEnd from, int hops, double scale, std::mt19937_64& gen);

/// A standard normal draw from 53-bit uniforms (Box–Muller; portable across standard libraries).
double lm_gaussian(std::mt19937_64& g);

}  // namespace lgreco::net
