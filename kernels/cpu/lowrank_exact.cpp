// Exact best-rank-k errors from the singular values (see kernels/cpu/powersgd.hpp for the method,
// the accuracy statement and the certificate).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "kernels/cpu/lowrank_blocks.hpp"
#include "kernels/cpu/powersgd.hpp"

namespace lgreco::kernels::cpu {
namespace {

using lowrank::Basis;

constexpr std::int64_t kCertWidth = 8;   // columns of the certificate's block Krylov run
constexpr int kCertMaxBlocks = 64;       // its depth limit per attempt
constexpr int kCertMaxAttempts = 20;     // attempt a is allotted failure probability η·2^−a

// Dense Gram (p ≤ dense_limit) in double: G = AᵀA (ata) or A·Aᵀ.
std::vector<double> dense_gram(const float* a, std::int64_t n, std::int64_t m, bool ata) {
  const std::int64_t p = ata ? m : n;
  std::vector<double> g(static_cast<std::size_t>(p * p), 0.0);
  if (ata) {
    for (std::int64_t i = 0; i < n; ++i) {
      const float* row = a + i * m;
      for (std::int64_t j = 0; j < m; ++j) {
        const double v = row[j];
        for (std::int64_t l = j; l < m; ++l) g[j * m + l] += v * row[l];
      }
    }
  } else {
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t l = i; l < n; ++l) {
        double s = 0;
        for (std::int64_t j = 0; j < m; ++j) s += static_cast<double>(a[i * m + j]) * a[l * m + j];
        g[i * n + l] = s;
      }
  }
  for (std::int64_t i = 0; i < p; ++i)
    for (std::int64_t l = 0; l < i; ++l) g[i * p + l] = g[l * p + i];
  return g;
}

// Out (p×cols) = Σ_j B_j·V[off_j .. off_j + w_j, 0 .. cols) for the blocks of a basis (V is s×s).
std::vector<double> combine(const std::vector<std::vector<double>>& blocks, const std::vector<std::int64_t>& widths,
                            std::int64_t p, const std::vector<double>& v, std::int64_t s, std::int64_t cols) {
  std::vector<double> out(static_cast<std::size_t>(p * cols), 0.0);
  std::int64_t off = 0;
  for (std::size_t j = 0; j < blocks.size(); ++j) {
    const std::int64_t w = widths[j];
    for (std::int64_t i = 0; i < p; ++i) {
      double* o = out.data() + i * cols;
      for (std::int64_t e = 0; e < w; ++e) {
        const double q = blocks[j][i * w + e];
        const double* vr = v.data() + (off + e) * s;
        for (std::int64_t c = 0; c < cols; ++c) o[c] += q * vr[c];
      }
    }
    off += w;
  }
  return out;
}

// Dense projected matrix (s×s) from the recorded coefficients coef[l][j] = B_jᵀ·G·B_l (j ≤ l),
// symmetrised from the upper blocks.
std::vector<double> assemble(const std::vector<std::vector<std::vector<double>>>& coef, const std::vector<std::int64_t>& widths,
                             std::size_t first, std::int64_t& s) {
  std::vector<std::int64_t> off(widths.size() + 1, 0);
  for (std::size_t j = first; j < widths.size(); ++j) off[j + 1] = off[j] + widths[j];
  s = off[widths.size()];
  std::vector<double> t(static_cast<std::size_t>(s * s), 0.0);
  for (std::size_t l = first; l < widths.size(); ++l)
    for (std::size_t j = first; j <= l; ++j) {
      const auto& c = coef[l][j];  // widths[j] × widths[l]
      for (std::int64_t x = 0; x < widths[j]; ++x)
        for (std::int64_t y = 0; y < widths[l]; ++y) {
          const double v = c[x * widths[l] + y];
          t[(off[j] + x) * s + off[l] + y] = v;
          t[(off[l] + y) * s + off[j] + x] = v;
        }
    }
  return t;
}

// Kuczyński–Woźniakowski (1992): Lanczos with k ≥ 1 products from a start uniform on the sphere of a
// d-dimensional space underestimates λ_max of a PSD operator by a factor below 1 − ε with
// probability ≤ 1.648·√d·exp(−√ε·(2k − 1)). A block of w independent starts contains each single
// start's Krylov space, so failure needs all w to fail: ≤ (that)^w. Returns the ε giving failure η.
double kw_epsilon(std::int64_t d, int k, std::int64_t w, double eta) {
  if (k < 1) return 1.0;
  const double root = (std::log(1.648 * std::sqrt(static_cast<double>(std::max<std::int64_t>(d, 1)))) -
                       std::log(eta) / static_cast<double>(w)) /
                      (2.0 * k - 1.0);
  return std::max(0.0, root) * std::max(0.0, root);
}

// The Ky Fan certificate (see powersgd.hpp): for each τ of a grid, μ(τ) = eig(Θ + RᵀR/τ), and
// Σ_{i≤k} λ_i(G) ≤ Σ_{i≤k} max(μ_i(τ), c + τ) whenever c ≥ λ_max(C) (C = G compressed to Y⊥).
struct KyFanBound {
  std::vector<double> taus;
  std::vector<std::vector<double>> mu;  // per τ, decreasing
  std::int64_t t = 0;                   // ranks bounded: 1..t
  // Upper bounds U_k, k = 1..t (index k − 1), for a bound c on λ_max(C).
  std::vector<double> upper(double c) const {
    std::vector<double> best(static_cast<std::size_t>(t), std::numeric_limits<double>::infinity());
    for (std::size_t j = 0; j < taus.size(); ++j) {
      double sum = 0;
      for (std::int64_t k = 0; k < t; ++k) {
        sum += std::max(mu[j][k], c + taus[j]);
        best[k] = std::min(best[k], sum);
      }
    }
    return best;
  }
};

KyFanBound make_bound(const std::vector<double>& theta, const std::vector<double>& rtr, std::int64_t sy, std::int64_t t) {
  KyFanBound kb;
  kb.t = t;
  const double scale = std::max(theta[0], std::numeric_limits<double>::min());
  for (int j = 0; j <= 52; j += 1) {
    const double tau = scale * std::ldexp(1.0, -j);
    std::vector<double> h(static_cast<std::size_t>(sy * sy));
    for (std::int64_t x = 0; x < sy; ++x)
      for (std::int64_t y = 0; y < sy; ++y) h[x * sy + y] = rtr[x * sy + y] / tau + (x == y ? theta[x] : 0.0);
    kb.taus.push_back(tau);
    kb.mu.push_back(jacobi_eigen(std::move(h), sy));
  }
  return kb;
}

bool certified(const std::vector<double>& upper, const std::vector<double>& prefix, double fro_sq, double tol,
               std::int64_t k_lo, std::int64_t t) {
  for (std::int64_t k = std::max<std::int64_t>(k_lo, 1); k <= t; ++k) {
    const double est_sq = std::max(0.0, fro_sq - prefix[k]);
    const double allow = std::max(est_sq * (1 - 1 / ((1 + tol) * (1 + tol))), (1e-3 * tol) * (1e-3 * tol) * fro_sq);
    if (!(upper[k - 1] - prefix[k] <= allow)) return false;
  }
  return true;
}

// Certificate run: block Krylov on C = P·G·P (P = I − Y·Yᵀ) from kCertWidth Gaussian columns of a
// fresh stream. Returns an upper bound on λ_max(C) valid with probability ≥ 1 − eta, as soon as it is
// ≤ c_needed; +inf when the run shows that it cannot be (a Ritz value exceeds c_needed) or runs out.
double certify_complement(const float* a, std::int64_t n, std::int64_t m, bool ata, const std::vector<double>& y,
                          std::int64_t sy, double c_needed, double eta, std::uint64_t seed, std::uint64_t stream,
                          int& blocks_used) {
  const std::int64_t p = ata ? m : n;
  Basis basis;
  basis.p = p;
  basis.blocks.push_back(y);
  basis.widths.push_back(sy);
  std::uint64_t counter = static_cast<std::uint64_t>(p * kCertWidth);
  std::vector<double> z(static_cast<std::size_t>(p * kCertWidth));
  for (std::size_t i = 0; i < z.size(); ++i) z[i] = rng::normal_at(seed, stream, i);
  std::int64_t w = lowrank::orthonormalize_against(basis, z, kCertWidth, seed, stream, counter);
  if (w == 0) return 0.0;  // Y spans everything: C = 0
  basis.blocks.push_back(std::move(z));
  basis.widths.push_back(w);
  std::vector<std::vector<std::vector<double>>> coef(1);
  std::vector<double> gz, scratch;
  int next_check = 2;
  for (int l = 1; l <= kCertMaxBlocks; ++l) {
    lowrank::apply_gram(a, n, m, ata, basis.blocks.back(), basis.widths.back(), gz, scratch);
    std::vector<std::vector<double>> first;
    const std::int64_t kept = lowrank::orthonormalize_against(basis, gz, basis.widths.back(), seed, stream, counter, &first);
    coef.push_back(std::move(first));
    ++blocks_used;
    const bool exhausted = kept == 0;
    if (exhausted || l == next_check || l == kCertMaxBlocks) {
      next_check = std::max(l + 1, l * 3 / 2);
      std::int64_t s = 0;
      auto proj = assemble(coef, basis.widths, 1, s);
      const double theta = symmetric_eigen(std::move(proj), s)[0];
      if (exhausted) return std::max(0.0, theta);  // the complement is spanned: exact
      if (theta > c_needed) return std::numeric_limits<double>::infinity();
      const double eps = kw_epsilon(p - sy, l - 1, kCertWidth, eta);
      if (eps < 1) {
        const double c = std::max(0.0, theta) / (1 - eps);
        if (c <= c_needed) return c;
      }
    }
    basis.blocks.push_back(std::move(gz));
    basis.widths.push_back(kept);
    gz.clear();
  }
  return std::numeric_limits<double>::infinity();
}

}  // namespace

ExactRankErrors exact_rank_errors(std::span<const float> a, std::int64_t n, std::int64_t m, std::int64_t k_min,
                                  std::int64_t k_max, const ExactRankOptions& opt) {
  if (n < 0 || m < 0 || static_cast<std::uint64_t>(n * m) != a.size())
    throw InputError("exact_rank_errors: matrix " + std::to_string(n) + "×" + std::to_string(m) + " does not match " +
                     std::to_string(a.size()) + " values");
  if (k_min < 0 || k_max < k_min)
    throw InputError("exact_rank_errors: rank range [" + std::to_string(k_min) + ", " + std::to_string(k_max) + "] is empty or negative");
  if (!(opt.tolerance > 0) || !(opt.failure_probability > 0 && opt.failure_probability < 1))
    throw InputError("exact_rank_errors: tolerance must be > 0 and failure_probability in (0, 1)");
  ExactRankErrors r;
  for (std::int64_t i = 0; i < n; ++i) {  // row sums, then their sum: rounding ≲ (n + m)·u·‖A‖²
    double row = 0;
    for (std::int64_t j = 0; j < m; ++j) row += static_cast<double>(a[i * m + j]) * a[i * m + j];
    r.frobenius_sq += row;
  }
  const std::int64_t p = std::min(n, m);
  const std::int64_t t = std::min(k_max, p);  // singular values needed
  const bool ata = m <= n;                    // Gram side = p
  std::vector<double> theta;                  // Ritz values (lower bounds on σ_i²), decreasing
  std::vector<double> upper;                  // U_k ≥ Σ_{i≤k} σ_i², k = 1..t (empty: exact)
  if (t > 0 && r.frobenius_sq > 0) {
    if (p <= opt.dense_limit) {
      theta = jacobi_eigen(dense_gram(a.data(), n, m, ata), p);
    } else {
      const std::int64_t b = std::min(p, t + std::max<std::int64_t>(8, t / 4));
      Basis q;
      q.p = p;
      std::vector<std::vector<double>> gq;
      std::vector<std::vector<std::vector<double>>> coef;
      std::uint64_t counter = static_cast<std::uint64_t>(p * b);
      const std::uint64_t stream = rng::stream_of(0, 0xFFFFFF);
      std::vector<double> x(static_cast<std::size_t>(p * b));
      for (std::size_t i = 0; i < x.size(); ++i) x[i] = rng::normal_at(opt.seed, stream, i);
      const std::int64_t w0 = lowrank::orthonormalize_against(q, x, b, opt.seed, stream, counter);
      q.blocks.push_back(std::move(x));
      q.widths.push_back(w0);
      r.converged = false;
      int next_check = 2, attempts = 0;
      std::vector<double> w, scratch;
      for (int it = 1; it <= opt.max_iterations; ++it) {
        lowrank::apply_gram(a.data(), n, m, ata, q.blocks.back(), q.widths.back(), w, scratch);
        gq.push_back(w);
        std::vector<std::vector<double>> first;
        const std::int64_t kept = lowrank::orthonormalize_against(q, w, q.widths.back(), opt.seed, stream, counter, &first);
        coef.push_back(std::move(first));
        r.iterations = it;
        const bool exhausted = kept == 0;  // the basis spans R^p: Ritz values are the eigenvalues
        if (exhausted || it == next_check || it == opt.max_iterations) {
          next_check = std::max(it + 1, it * 7 / 5);
          std::int64_t s = 0;
          std::vector<double> vecs;
          auto proj = assemble(coef, q.widths, 0, s);
          theta = symmetric_eigen(std::move(proj), s, exhausted ? nullptr : &vecs);
          if (exhausted) {
            upper.clear();
            r.converged = true;
            break;
          }
          const std::int64_t sy = std::min(s, b);
          if (sy >= t) {
            // Ritz vectors Y = Q·V, residuals R = G·Y − Y·Θ, and RᵀR.
            const auto y = combine(q.blocks, q.widths, p, vecs, s, sy);
            auto res = combine(gq, q.widths, p, vecs, s, sy);
            for (std::int64_t i = 0; i < p; ++i)
              for (std::int64_t c = 0; c < sy; ++c) res[i * sy + c] -= theta[c] * y[i * sy + c];
            const auto rtr = lowrank::block_dot(res, sy, res, sy, p);
            const auto bound = make_bound(theta, rtr, sy, t);
            std::vector<double> prefix(static_cast<std::size_t>(t + 1), 0.0);
            for (std::int64_t k = 1; k <= t; ++k) prefix[k] = prefix[k - 1] + theta[k - 1];
            // Largest c that still certifies every k (bisection; U is monotone in c).
            const double lower_c = sy < s ? std::max(0.0, theta[sy]) : 0.0;  // λ_max(C) ≥ θ_{sy+1}
            if (certified(bound.upper(lower_c), prefix, r.frobenius_sq, opt.tolerance, k_min, t) &&
                attempts < kCertMaxAttempts) {
              double lo = lower_c, hi = std::max(theta[0], lower_c) * 2 + 1e-300;
              for (int bis = 0; bis < 60; ++bis) {
                const double mid = 0.5 * (lo + hi);
                (certified(bound.upper(mid), prefix, r.frobenius_sq, opt.tolerance, k_min, t) ? lo : hi) = mid;
              }
              ++attempts;
              const double c = certify_complement(a.data(), n, m, ata, y, sy, lo, std::ldexp(opt.failure_probability, -attempts),
                                                  opt.seed, rng::stream_of(attempts, 0xFFFFFE), r.certificate_iterations);
              if (c <= lo) {
                upper = bound.upper(c);
                r.converged = true;
                break;
              }
            }
          }
        }
        q.blocks.push_back(std::move(w));
        q.widths.push_back(kept);
        w.clear();
      }
    }
  }
  r.sigma.assign(static_cast<std::size_t>(t), 0.0);
  for (std::int64_t i = 0; i < t && i < static_cast<std::int64_t>(theta.size()); ++i)
    r.sigma[i] = std::sqrt(std::max(0.0, theta[i]));
  const std::size_t count = static_cast<std::size_t>(k_max - k_min + 1);
  r.errors.assign(count, 0.0);
  r.lower.assign(count, 0.0);
  double captured = 0;
  std::int64_t next = 0;
  for (std::int64_t k = k_min; k <= k_max; ++k) {
    if (k >= p) continue;  // rank ≥ min(n, m): error 0
    for (; next < k; ++next) captured += std::max(0.0, next < static_cast<std::int64_t>(theta.size()) ? theta[next] : 0.0);
    r.errors[k - k_min] = std::sqrt(std::max(0.0, r.frobenius_sq - captured));
    const double bound = (k == 0 || upper.empty()) ? captured : upper[k - 1];
    r.lower[k - k_min] = r.converged ? std::sqrt(std::max(0.0, r.frobenius_sq - bound)) : 0.0;
  }
  return r;
}

}  // namespace lgreco::kernels::cpu
