// Exact best-rank-k errors from the singular values (see kernels/cpu/powersgd.hpp).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "kernels/cpu/powersgd.hpp"
#include "kernels/cpu/simd.hpp"

namespace lgreco::kernels::cpu {
namespace {

// Orthonormalises the columns of a row-major rows×cols double matrix by modified Gram-Schmidt,
// twice ("twice is enough"), zeroing columns that vanish.
void mgs2(std::vector<double>& a, std::int64_t rows, std::int64_t cols) {
  for (int pass = 0; pass < 2; ++pass) {
    for (std::int64_t c = 0; c < cols; ++c) {
      for (std::int64_t d = 0; d < c; ++d) {
        double dot = 0;
        for (std::int64_t i = 0; i < rows; ++i) dot += a[i * cols + d] * a[i * cols + c];
        for (std::int64_t i = 0; i < rows; ++i) a[i * cols + c] -= dot * a[i * cols + d];
      }
      double nn = 0;
      for (std::int64_t i = 0; i < rows; ++i) nn += a[i * cols + c] * a[i * cols + c];
      const double inv = nn > 0 ? 1.0 / std::sqrt(nn) : 0.0;
      for (std::int64_t i = 0; i < rows; ++i) a[i * cols + c] *= inv;
    }
  }
}

// y = G·x for a block x (p×b, row-major), G = AᵀA (side m) or AAᵀ (side n); z is scratch of the
// intermediate side × b. Compiled as target clones: noexcept, no allocation.
LGRECO_CPU_CLONES void apply_gram_kernel(const float* a, std::int64_t n, std::int64_t m, bool ata, const double* x,
                                         std::int64_t b, double* y, double* z) noexcept {
  const std::int64_t inner = ata ? n : m;  // the intermediate side
  std::fill(z, z + inner * b, 0.0);
  if (ata) {
    // z = A·x (n×b): row i of A dotted with x's columns.
    for (std::int64_t i = 0; i < n; ++i) {
      const float* row = a + i * m;
      double* zi = z + i * b;
      for (std::int64_t j = 0; j < m; ++j) {
        const double v = row[j];
        const double* xj = x + j * b;
        for (std::int64_t c = 0; c < b; ++c) zi[c] += v * xj[c];
      }
    }
    // y = Aᵀ·z (m×b)
    std::fill(y, y + m * b, 0.0);
    for (std::int64_t i = 0; i < n; ++i) {
      const float* row = a + i * m;
      const double* zi = z + i * b;
      for (std::int64_t j = 0; j < m; ++j) {
        const double v = row[j];
        double* yj = y + j * b;
        for (std::int64_t c = 0; c < b; ++c) yj[c] += v * zi[c];
      }
    }
  } else {
    // z = Aᵀ·x (m×b), then y = A·z (n×b).
    for (std::int64_t i = 0; i < n; ++i) {
      const float* row = a + i * m;
      const double* xi = x + i * b;
      for (std::int64_t j = 0; j < m; ++j) {
        const double v = row[j];
        double* zj = z + j * b;
        for (std::int64_t c = 0; c < b; ++c) zj[c] += v * xi[c];
      }
    }
    for (std::int64_t i = 0; i < n; ++i) {
      const float* row = a + i * m;
      double* yi = y + i * b;
      std::fill(yi, yi + b, 0.0);
      for (std::int64_t j = 0; j < m; ++j) {
        const double v = row[j];
        const double* zj = z + j * b;
        for (std::int64_t c = 0; c < b; ++c) yi[c] += v * zj[c];
      }
    }
  }
}

void apply_gram(const float* a, std::int64_t n, std::int64_t m, bool ata, const std::vector<double>& x, std::int64_t b,
                std::vector<double>& y, std::vector<double>& z) {
  z.resize(static_cast<std::size_t>((ata ? n : m) * b));
  apply_gram_kernel(a, n, m, ata, x.data(), b, y.data(), z.data());
}

}  // namespace

std::vector<double> jacobi_eigen(std::vector<double> g, std::int64_t p, std::vector<double>* vectors) {
  std::vector<double> v;
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
        for (std::int64_t k = 0; k < p; ++k) {  // columns i, j
          const double gki = g[k * p + i], gkj = g[k * p + j];
          g[k * p + i] = c * gki - s * gkj;
          g[k * p + j] = s * gki + c * gkj;
        }
        for (std::int64_t k = 0; k < p; ++k) {  // rows i, j
          const double gik = g[i * p + k], gjk = g[j * p + k];
          g[i * p + k] = c * gik - s * gjk;
          g[j * p + k] = s * gik + c * gjk;
        }
        if (vectors)
          for (std::int64_t k = 0; k < p; ++k) {
            const double vki = v[k * p + i], vkj = v[k * p + j];
            v[k * p + i] = c * vki - s * vkj;
            v[k * p + j] = s * vki + c * vkj;
          }
      }
  }
  std::vector<std::int64_t> order(static_cast<std::size_t>(p));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](auto x, auto y) { return g[x * p + x] > g[y * p + y]; });
  std::vector<double> eig(static_cast<std::size_t>(p));
  for (std::int64_t i = 0; i < p; ++i) eig[i] = g[order[i] * p + order[i]];
  if (vectors) {
    vectors->assign(static_cast<std::size_t>(p * p), 0.0);
    for (std::int64_t k = 0; k < p; ++k)
      for (std::int64_t i = 0; i < p; ++i) (*vectors)[k * p + i] = v[k * p + order[i]];
  }
  return eig;
}

ExactRankErrors exact_rank_errors(std::span<const float> a, std::int64_t n, std::int64_t m, std::int64_t k_min,
                                  std::int64_t k_max, const ExactRankOptions& opt) {
  if (n < 0 || m < 0 || static_cast<std::uint64_t>(n * m) != a.size())
    throw InputError("exact_rank_errors: matrix " + std::to_string(n) + "×" + std::to_string(m) + " does not match " +
                     std::to_string(a.size()) + " values");
  if (k_min < 0 || k_max < k_min)
    throw InputError("exact_rank_errors: rank range [" + std::to_string(k_min) + ", " + std::to_string(k_max) + "] is empty or negative");
  ExactRankErrors r;
  for (float v : a) r.frobenius_sq += static_cast<double>(v) * static_cast<double>(v);
  const std::int64_t p = std::min(n, m);
  const std::int64_t t = std::min(k_max, p);  // singular values needed
  std::vector<double> lambda;                 // eigenvalues of the Gram, decreasing (≥ t of them)
  const bool ata = m <= n;                    // Gram side = p
  if (t > 0 && r.frobenius_sq > 0) {
    if (p <= opt.dense_limit) {
      std::vector<double> g(static_cast<std::size_t>(p * p), 0.0);
      if (ata) {
        for (std::int64_t i = 0; i < n; ++i) {
          const float* row = a.data() + i * m;
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
      lambda = jacobi_eigen(std::move(g), p);
    } else {
      const std::int64_t b = std::min(p, k_max + std::max<std::int64_t>(8, k_max));
      std::vector<double> x(static_cast<std::size_t>(p * b)), y(x.size()), z;
      for (std::size_t i = 0; i < x.size(); ++i) x[i] = rng::normal_at(opt.seed, rng::stream_of(0, 0xFFFFFF), i);
      mgs2(x, p, b);
      std::vector<double> prev(static_cast<std::size_t>(t), -1.0);
      r.converged = false;
      for (int it = 1; it <= opt.max_iterations; ++it) {
        apply_gram(a.data(), n, m, ata, x, b, y, z);
        // Rayleigh-Ritz: H = Xᵀ G X = Xᵀ Y (b×b), then X ← orth(Y·V).
        std::vector<double> h(static_cast<std::size_t>(b * b), 0.0);
        for (std::int64_t i = 0; i < p; ++i)
          for (std::int64_t c = 0; c < b; ++c)
            for (std::int64_t d = 0; d < b; ++d) h[c * b + d] += x[i * b + c] * y[i * b + d];
        for (std::int64_t c = 0; c < b; ++c)
          for (std::int64_t d = 0; d < c; ++d) h[c * b + d] = h[d * b + c] = 0.5 * (h[c * b + d] + h[d * b + c]);
        std::vector<double> vecs;
        lambda = jacobi_eigen(h, b, &vecs);
        for (std::int64_t i = 0; i < p; ++i) {
          std::vector<double> row(y.begin() + i * b, y.begin() + (i + 1) * b);
          for (std::int64_t c = 0; c < b; ++c) {
            double s = 0;
            for (std::int64_t d = 0; d < b; ++d) s += row[d] * vecs[d * b + c];
            x[i * b + c] = s;
          }
        }
        mgs2(x, p, b);
        double change = 0;
        for (std::int64_t i = 0; i < t; ++i) change = std::max(change, std::fabs(lambda[i] - prev[i]));
        std::copy(lambda.begin(), lambda.begin() + t, prev.begin());
        r.iterations = it;
        if (change <= opt.tolerance * r.frobenius_sq) {
          r.converged = true;
          break;
        }
      }
    }
  }
  r.sigma.assign(static_cast<std::size_t>(t), 0.0);
  for (std::int64_t i = 0; i < t && i < static_cast<std::int64_t>(lambda.size()); ++i)
    r.sigma[i] = std::sqrt(std::max(0.0, lambda[i]));
  r.errors.resize(static_cast<std::size_t>(k_max - k_min + 1));
  double captured = 0;
  std::int64_t next = 0;
  for (std::int64_t k = k_min; k <= k_max; ++k) {
    if (k >= p) {
      r.errors[k - k_min] = 0.0;
      continue;
    }
    for (; next < k; ++next) captured += r.sigma[next] * r.sigma[next];
    r.errors[k - k_min] = std::sqrt(std::max(0.0, r.frobenius_sq - captured));
  }
  return r;
}

}  // namespace lgreco::kernels::cpu
