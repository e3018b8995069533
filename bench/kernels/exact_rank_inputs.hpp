#pragma once
// Inputs of the exact-rank benchmark (bench_exact_rank.cpp): a Gaussian-noise layer and a layer
// with a known, decaying spectrum. Standard library + core/rng.hpp only.
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/rng.hpp"

namespace lgreco::bench {

/// n×m i.i.d. N(0, 1) entries (seed 11, stream 1), row-major float.
inline std::vector<float> noise_layer(std::int64_t n, std::int64_t m) {
  std::vector<float> a(static_cast<std::size_t>(n * m));
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(rng::normal_at(11, 1, i));
  return a;
}

// Applies the Householder reflection I − 2·u·uᵀ (unit u of length rows) to the columns of a
// rows×cols row-major double matrix, from the left.
inline void reflect_left(std::vector<double>& x, std::int64_t rows, std::int64_t cols, const std::vector<double>& u) {
  std::vector<double> d(static_cast<std::size_t>(cols), 0.0);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) d[j] += u[i] * x[i * cols + j];
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) x[i * cols + j] -= 2 * u[i] * d[j];
}

inline std::vector<double> unit_gaussian(std::int64_t len, std::uint64_t stream) {
  std::vector<double> u(static_cast<std::size_t>(len));
  double nn = 0;
  for (std::int64_t i = 0; i < len; ++i) nn += (u[i] = rng::normal_at(12, stream, i)) * u[i];
  for (auto& v : u) v /= std::sqrt(nn);
  return u;
}

/// n×m (n ≥ m) A = U·[diag(σ)·Vᵀ; 0] with U, V products of 4 random Householder reflections, so
/// the singular values are exactly σ (before rounding to float); σ_i = (1 + i)^−0.75.
inline std::vector<float> decaying_layer(std::int64_t n, std::int64_t m, std::vector<double>& sigma) {
  sigma.resize(static_cast<std::size_t>(m));
  for (std::int64_t i = 0; i < m; ++i) sigma[i] = std::pow(1.0 + static_cast<double>(i), -0.75);
  // Vᵀ (m×m) = H_4·…·H_1 applied to I; then scale row i by σ_i; then embed and apply U.
  std::vector<double> x(static_cast<std::size_t>(n * m), 0.0);
  for (std::int64_t i = 0; i < m; ++i) x[i * m + i] = 1.0;
  std::vector<double> vt(static_cast<std::size_t>(m * m), 0.0);
  for (std::int64_t i = 0; i < m; ++i) vt[i * m + i] = 1.0;
  for (int h = 0; h < 4; ++h) reflect_left(vt, m, m, unit_gaussian(m, 100 + h));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < m; ++j) x[i * m + j] = sigma[i] * vt[i * m + j];
  for (int h = 0; h < 4; ++h) reflect_left(x, n, m, unit_gaussian(n, 200 + h));
  return std::vector<float>(x.begin(), x.end());
}

}  // namespace lgreco::bench
