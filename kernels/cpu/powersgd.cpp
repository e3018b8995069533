#include "kernels/cpu/powersgd.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace lgreco::kernels::cpu {
namespace {

// Dot product with 8 interleaved fp32 partial sums (vectorised by the compiler without reassociation).
inline float dot8(const float* a, const float* b, std::int64_t n) {
  float p[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) p[l] += a[j + l] * b[j + l];
  for (; j < n; ++j) p[j & 7] += a[j] * b[j];
  return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
}

void transpose(const float* a, std::int64_t rows, std::int64_t cols, float* t) {
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t c = 0; c < cols; ++c) t[c * rows + i] = a[i * cols + c];
}

// Modified Gram-Schmidt on the columns of a row-major rows×cols double matrix.
void gram_schmidt(std::vector<double>& a, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t c = 0; c < cols; ++c) {
    double nn = 0;
    for (std::int64_t i = 0; i < rows; ++i) nn += a[i * cols + c] * a[i * cols + c];
    const double norm = std::sqrt(nn);
    const double inv = norm > 0 ? 1.0 / norm : 0.0;
    for (std::int64_t i = 0; i < rows; ++i) a[i * cols + c] *= inv;
    for (std::int64_t d = c + 1; d < cols; ++d) {
      double dot = 0;
      for (std::int64_t i = 0; i < rows; ++i) dot += a[i * cols + c] * a[i * cols + d];
      for (std::int64_t i = 0; i < rows; ++i) a[i * cols + d] -= dot * a[i * cols + c];
    }
  }
}

// Householder QR: replaces a (rows×cols, rows ≥ cols) by the thin Q factor; columns whose R
// diagonal is zero (rank deficiency) become zero.
void householder_q(std::vector<double>& a, std::int64_t rows, std::int64_t cols) {
  std::vector<double> vs(static_cast<std::size_t>(rows * cols), 0.0);  // reflector k in column k
  std::vector<double> rdiag(static_cast<std::size_t>(cols), 0.0);
  for (std::int64_t k = 0; k < cols; ++k) {
    double nn = 0;
    for (std::int64_t i = k; i < rows; ++i) nn += a[i * cols + k] * a[i * cols + k];
    const double norm = std::sqrt(nn);
    if (norm == 0) continue;  // zero column: no reflector, R[k][k] = 0
    const double x0 = a[k * cols + k];
    const double alpha = x0 >= 0 ? -norm : norm;
    rdiag[k] = alpha;
    // v = x − alpha·e1, normalised.
    double vn = 0;
    for (std::int64_t i = k; i < rows; ++i) {
      const double v = a[i * cols + k] - (i == k ? alpha : 0.0);
      vs[i * cols + k] = v;
      vn += v * v;
    }
    const double inv = 1.0 / std::sqrt(vn);
    for (std::int64_t i = k; i < rows; ++i) vs[i * cols + k] *= inv;
    for (std::int64_t c = k; c < cols; ++c) {
      double dot = 0;
      for (std::int64_t i = k; i < rows; ++i) dot += vs[i * cols + k] * a[i * cols + c];
      for (std::int64_t i = k; i < rows; ++i) a[i * cols + c] -= 2.0 * dot * vs[i * cols + k];
    }
  }
  // Q = H_0 ⋯ H_{cols−1} · [I; 0]
  std::fill(a.begin(), a.end(), 0.0);
  for (std::int64_t c = 0; c < cols; ++c) a[c * cols + c] = 1.0;
  for (std::int64_t k = cols; k-- > 0;) {
    if (rdiag[k] == 0) continue;
    for (std::int64_t c = 0; c < cols; ++c) {
      double dot = 0;
      for (std::int64_t i = k; i < rows; ++i) dot += vs[i * cols + k] * a[i * cols + c];
      for (std::int64_t i = k; i < rows; ++i) a[i * cols + c] -= 2.0 * dot * vs[i * cols + k];
    }
  }
  for (std::int64_t k = 0; k < cols; ++k)
    if (rdiag[k] == 0)
      for (std::int64_t i = 0; i < rows; ++i) a[i * cols + k] = 0.0;
}

}  // namespace

void orthogonalize(std::span<float> a, std::int64_t rows, std::int64_t cols, Orthogonalization method) {
  if (rows == 0 || cols == 0) return;
  std::vector<double> d(a.begin(), a.begin() + rows * cols);
  const bool gs = method == Orthogonalization::kGramSchmidt || (method == Orthogonalization::kAuto && cols <= 2);
  if (gs) gram_schmidt(d, rows, cols);
  else householder_q(d, rows, cols);
  for (std::int64_t i = 0; i < rows * cols; ++i) a[i] = static_cast<float>(d[i]);
}

void matmul_mq(std::span<const float> m, std::int64_t n, std::int64_t mcols, std::span<const float> q, std::int64_t r,
               std::span<float> p) {
  std::vector<float> qt(static_cast<std::size_t>(mcols * r));
  transpose(q.data(), mcols, r, qt.data());
  for (std::int64_t i = 0; i < n; ++i) {
    const float* row = m.data() + i * mcols;
    for (std::int64_t c = 0; c < r; ++c) p[i * r + c] = dot8(row, qt.data() + c * mcols, mcols);
  }
}

void matmul_mtp(std::span<const float> m, std::int64_t n, std::int64_t mcols, std::span<const float> p, std::int64_t r,
                std::span<float> q) {
  std::vector<float> qt(static_cast<std::size_t>(mcols * r), 0.0f);
  for (std::int64_t i = 0; i < n; ++i) {
    const float* row = m.data() + i * mcols;
    for (std::int64_t c = 0; c < r; ++c) {
      const float a = p[i * r + c];
      float* dst = qt.data() + c * mcols;
      for (std::int64_t j = 0; j < mcols; ++j) dst[j] += a * row[j];
    }
  }
  transpose(qt.data(), r, mcols, q.data());
}

void matmul_pqt(std::span<const float> p, std::int64_t n, std::span<const float> q, std::int64_t mcols, std::int64_t r,
                std::span<float> out) {
  std::vector<float> qt(static_cast<std::size_t>(mcols * r));
  transpose(q.data(), mcols, r, qt.data());
  for (std::int64_t i = 0; i < n; ++i) {
    float* row = out.data() + i * mcols;
    std::fill(row, row + mcols, 0.0f);
    for (std::int64_t c = 0; c < r; ++c) {
      const float a = p[i * r + c];
      const float* src = qt.data() + c * mcols;
      for (std::int64_t j = 0; j < mcols; ++j) row[j] += a * src[j];
    }
  }
}

void powersgd_step(std::span<const float> m, std::int64_t n, std::int64_t mcols, std::int64_t r, const PowerSgdParams& prm,
                   std::uint64_t layer, std::uint64_t step, std::vector<float>& q, std::vector<float>& p_out,
                   std::span<float> out) {
  if (r == 0) {
    std::fill(out.begin(), out.end(), 0.0f);
    q.clear();
    p_out.clear();
    return;
  }
  const auto qsize = static_cast<std::size_t>(mcols * r);
  if (!prm.warm_start || q.size() != qsize) {
    const std::uint64_t t = prm.warm_start ? 0 : step;
    q.resize(qsize);
    const std::uint64_t stream = rng::stream_of(t, layer);
    for (std::size_t i = 0; i < qsize; ++i) q[i] = static_cast<float>(rng::normal_at(prm.seed, stream, i));
  }
  p_out.resize(static_cast<std::size_t>(n * r));
  for (int it = 0; it < prm.power_iterations; ++it) {
    orthogonalize(q, mcols, r, prm.orthogonalization);
    matmul_mq(m, n, mcols, q, r, p_out);
    orthogonalize(p_out, n, r, prm.orthogonalization);
    matmul_mtp(m, n, mcols, p_out, r, q);
  }
  matmul_pqt(p_out, n, q, mcols, r, out);
}

}  // namespace lgreco::kernels::cpu
