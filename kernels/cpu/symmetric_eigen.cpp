// Dense symmetric eigensolvers of the small projected problems (see kernels/cpu/powersgd.hpp):
// cyclic Jacobi, and Householder tridiagonalisation followed by implicit symmetric QR.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "kernels/cpu/powersgd.hpp"

namespace lgreco::kernels::cpu {
namespace {

// Sorts eigenvalues decreasingly; rows of `v` (when given, row i = eigenvector of value i) follow.
std::vector<double> sort_decreasing(const std::vector<double>& d, std::int64_t p, const std::vector<double>* v_rows,
                                    std::vector<double>* vectors) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(p));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](auto x, auto y) { return d[x] > d[y]; });
  std::vector<double> eig(static_cast<std::size_t>(p));
  for (std::int64_t i = 0; i < p; ++i) eig[i] = d[order[i]];
  if (vectors && v_rows) {
    vectors->assign(static_cast<std::size_t>(p * p), 0.0);  // columns = eigenvectors
    for (std::int64_t c = 0; c < p; ++c)
      for (std::int64_t i = 0; i < p; ++i) (*vectors)[i * p + c] = (*v_rows)[order[c] * p + i];
  }
  return eig;
}

// Rotation of rows x and y of a row-major matrix with `cols` columns in [lo, hi):
// x ← c·x + s·y, y ← −s·x + c·y.
inline void rotate_rows(double* a, std::int64_t cols, std::int64_t x, std::int64_t y, double c, double s, std::int64_t lo,
                        std::int64_t hi) {
  double* rx = a + x * cols;
  double* ry = a + y * cols;
  for (std::int64_t j = lo; j < hi; ++j) {
    const double u = rx[j], w = ry[j];
    rx[j] = c * u + s * w;
    ry[j] = -s * u + c * w;
  }
}

}  // namespace

std::vector<double> jacobi_eigen(std::vector<double> g, std::int64_t p, std::vector<double>* vectors) {
  std::vector<double> v;  // rows = eigenvectors (transposed accumulation)
  if (vectors) {
    v.assign(static_cast<std::size_t>(p * p), 0.0);
    for (std::int64_t i = 0; i < p; ++i) v[i * p + i] = 1.0;
  }
  double total = 0;
  for (double x : g) total += x * x;
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0;
    for (std::int64_t i = 0; i < p; ++i)
      for (std::int64_t j = i + 1; j < p; ++j) off += g[i * p + j] * g[i * p + j];
    if (off <= 1e-30 * total || off == 0) break;
    for (std::int64_t i = 0; i < p; ++i)
      for (std::int64_t j = i + 1; j < p; ++j) {
        const double aij = g[i * p + j];
        if (aij == 0) continue;
        const double aii = g[i * p + i], ajj = g[j * p + j];
        const double theta = (ajj - aii) / (2 * aij);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::fabs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        // G ← Jᵀ G J with J the rotation (c, s) in the (i, j) plane: rows, then columns.
        rotate_rows(g.data(), p, i, j, c, -s, 0, p);
        for (std::int64_t k = 0; k < p; ++k) {
          const double gki = g[k * p + i], gkj = g[k * p + j];
          g[k * p + i] = c * gki - s * gkj;
          g[k * p + j] = s * gki + c * gkj;
        }
        if (vectors) rotate_rows(v.data(), p, i, j, c, -s, 0, p);
      }
  }
  std::vector<double> d(static_cast<std::size_t>(p));
  for (std::int64_t i = 0; i < p; ++i) d[i] = g[i * p + i];
  return sort_decreasing(d, p, vectors ? &v : nullptr, vectors);
}

std::vector<double> symmetric_eigen(std::vector<double> t, std::int64_t p, std::vector<double>* vectors) {
  if (p <= 2) return jacobi_eigen(std::move(t), p, vectors);
  const std::vector<double> original = t;  // for the Jacobi fallback below
  // V holds Qᵀ (rows), with t_original = Q·T·Qᵀ throughout.
  std::vector<double> v;
  if (vectors) {
    v.assign(static_cast<std::size_t>(p * p), 0.0);
    for (std::int64_t i = 0; i < p; ++i) v[i * p + i] = 1.0;
  }
  // 1. Householder: for column k, H = I − 2·u·uᵀ on indices > k zeroes t[k+2.., k];
  //    T ← H·T·H = T − 2·u·wᵀ − 2·w·uᵀ with q = T·u, w = q − (uᵀq)·u.
  std::vector<double> u(static_cast<std::size_t>(p)), q(static_cast<std::size_t>(p));
  for (std::int64_t k = 0; k + 2 < p; ++k) {
    double norm = 0;
    for (std::int64_t i = k + 1; i < p; ++i) norm += t[i * p + k] * t[i * p + k];
    norm = std::sqrt(norm);
    if (norm == 0) continue;
    const double x0 = t[(k + 1) * p + k];
    const double alpha = x0 >= 0 ? -norm : norm;
    std::fill(u.begin(), u.end(), 0.0);
    for (std::int64_t i = k + 1; i < p; ++i) u[i] = t[i * p + k];
    u[k + 1] -= alpha;
    double un = 0;
    for (std::int64_t i = k + 1; i < p; ++i) un += u[i] * u[i];
    if (un == 0) continue;
    un = 1 / std::sqrt(un);
    for (std::int64_t i = k + 1; i < p; ++i) u[i] *= un;
    double uq = 0;
    for (std::int64_t i = k; i < p; ++i) {
      double s = 0;
      for (std::int64_t j = k + 1; j < p; ++j) s += t[i * p + j] * u[j];
      q[i] = s;
      if (i > k) uq += u[i] * s;
    }
    for (std::int64_t i = k; i < p; ++i) q[i] -= uq * u[i];  // w (u[k] = 0)
    for (std::int64_t i = k; i < p; ++i)
      for (std::int64_t j = k; j < p; ++j) t[i * p + j] -= 2 * (u[i] * q[j] + q[i] * u[j]);
    if (vectors) {  // Qᵀ ← H·Qᵀ
      for (std::int64_t j = 0; j < p; ++j) q[j] = 0;
      for (std::int64_t i = k + 1; i < p; ++i)
        for (std::int64_t j = 0; j < p; ++j) q[j] += u[i] * v[i * p + j];
      for (std::int64_t i = k + 1; i < p; ++i)
        for (std::int64_t j = 0; j < p; ++j) v[i * p + j] -= 2 * u[i] * q[j];
    }
  }
  for (std::int64_t i = 0; i < p; ++i)  // exact tridiagonal form
    for (std::int64_t j = 0; j < p; ++j)
      if (std::abs(i - j) > 1) t[i * p + j] = 0;
  // 2. Implicit symmetric QR with Wilkinson shift (Golub & Van Loan §8.3), bulge chased by
  //    rotations J acting on rows/columns (k, k+1): T ← J·T·Jᵀ, Qᵀ ← J·Qᵀ.
  const double eps = std::numeric_limits<double>::epsilon();
  auto at = [&](std::int64_t i, std::int64_t j) -> double& { return t[i * p + j]; };
  // An off-diagonal entry is negligible relative to its two diagonal neighbours or, for
  // eigenvalues at or near zero (where the relative test can never pass), to the whole matrix:
  // eps·‖T‖_F is the backward error the Householder step has already made.
  double norm = 0;
  for (double x : t) norm += x * x;
  norm = std::sqrt(norm);
  auto negligible = [&](std::int64_t i) {
    const double e = std::fabs(at(i, i - 1));
    return e <= eps * (std::fabs(at(i, i)) + std::fabs(at(i - 1, i - 1))) || e <= eps * norm;
  };
  std::int64_t hi = p - 1;
  for (std::int64_t guard = 0; hi > 0 && guard < 60 * p; ++guard) {
    if (negligible(hi)) {
      at(hi, hi - 1) = at(hi - 1, hi) = 0;
      --hi;
      continue;
    }
    std::int64_t lo = hi - 1;
    while (lo > 0 && !negligible(lo)) --lo;
    if (lo > 0) at(lo, lo - 1) = at(lo - 1, lo) = 0;
    const double e = at(hi, hi - 1);
    const double delta = (at(hi - 1, hi - 1) - at(hi, hi)) / 2;
    const double mu = at(hi, hi) - e * e / (delta + (delta >= 0 ? 1.0 : -1.0) * std::hypot(delta, e));
    double x = at(lo, lo) - mu, z = at(lo + 1, lo);
    for (std::int64_t k = lo; k < hi; ++k) {
      const double r = std::hypot(x, z);
      const double c = r > 0 ? x / r : 1.0, s = r > 0 ? z / r : 0.0;
      const std::int64_t b0 = std::max(lo, k - 1), b1 = std::min(hi + 1, k + 3);
      rotate_rows(t.data(), p, k, k + 1, c, s, b0, b1);
      for (std::int64_t i = b0; i < b1; ++i) {
        const double a = at(i, k), b = at(i, k + 1);
        at(i, k) = c * a + s * b;
        at(i, k + 1) = -s * a + c * b;
      }
      if (vectors) rotate_rows(v.data(), p, k, k + 1, c, s, 0, p);
      if (k + 1 < hi) {
        x = at(k + 1, k);
        z = at(k + 2, k);
      }
    }
  }
  // QR did not converge within its budget (never seen once the test above has its absolute
  // floor): Jacobi always converges, slowly.
  if (hi > 0) return jacobi_eigen(original, p, vectors);
  std::vector<double> d(static_cast<std::size_t>(p));
  for (std::int64_t i = 0; i < p; ++i) d[i] = at(i, i);
  return sort_decreasing(d, p, vectors ? &v : nullptr, vectors);
}

}  // namespace lgreco::kernels::cpu
