// Block products and orthogonalisation of the Krylov method (see kernels/cpu/lowrank_blocks.hpp).
#include "kernels/cpu/lowrank_blocks.hpp"

#include <algorithm>
#include <cmath>

#include "core/rng.hpp"
#include "kernels/cpu/simd.hpp"

namespace lgreco::kernels::cpu::lowrank {
namespace {

constexpr std::int64_t kTile = 8;  // rows of A per tile

// out[r·b + c] += Σ_j A[r, j]·in[j·b + c] for the rows r < rows of the tile (rows ≤ kTile).
LGRECO_CPU_CLONES void tile_times_block(const float* a, std::int64_t m, std::int64_t rows, const double* in,
                                        std::int64_t b, double* out) noexcept {
  for (std::int64_t j = 0; j < m; ++j) {
    const double* xj = in + j * b;
    for (std::int64_t r = 0; r < rows; ++r) {
      const double v = a[r * m + j];
      double* o = out + r * b;
      for (std::int64_t c = 0; c < b; ++c) o[c] += v * xj[c];
    }
  }
}

// out[j·b + c] += Σ_r A[r, j]·in[r·b + c] over the tile's rows (Aᵀ times the tile's block).
LGRECO_CPU_CLONES void tile_transpose_times(const float* a, std::int64_t m, std::int64_t rows, const double* in,
                                            std::int64_t b, double* out) noexcept {
  for (std::int64_t j = 0; j < m; ++j) {
    double* oj = out + j * b;
    for (std::int64_t r = 0; r < rows; ++r) {
      const double v = a[r * m + j];
      const double* zr = in + r * b;
      for (std::int64_t c = 0; c < b; ++c) oj[c] += v * zr[c];
    }
  }
}

// C (bw×w) += Bᵀ·W over rows [0, p).
LGRECO_CPU_CLONES void dot_kernel(const double* bl, std::int64_t bw, const double* w, std::int64_t wcols, std::int64_t p,
                                  double* c) noexcept {
  for (std::int64_t i = 0; i < p; ++i) {
    const double* bi = bl + i * bw;
    const double* wi = w + i * wcols;
    for (std::int64_t a = 0; a < bw; ++a) {
      const double v = bi[a];
      double* ca = c + a * wcols;
      for (std::int64_t d = 0; d < wcols; ++d) ca[d] += v * wi[d];
    }
  }
}

// W −= B·C over rows [0, p) (B p×bw, C bw×w).
LGRECO_CPU_CLONES void subtract_kernel(const double* bl, std::int64_t bw, const double* c, std::int64_t wcols, std::int64_t p,
                                       double* w) noexcept {
  for (std::int64_t i = 0; i < p; ++i) {
    const double* bi = bl + i * bw;
    double* wi = w + i * wcols;
    for (std::int64_t a = 0; a < bw; ++a) {
      const double v = bi[a];
      const double* ca = c + a * wcols;
      for (std::int64_t d = 0; d < wcols; ++d) wi[d] -= v * ca[d];
    }
  }
}

double column_norm_sq(const std::vector<double>& w, std::int64_t wcols, std::int64_t p, std::int64_t c) {
  double s = 0;
  for (std::int64_t i = 0; i < p; ++i) s += w[i * wcols + c] * w[i * wcols + c];
  return s;
}

}  // namespace

std::int64_t Basis::size() const {
  std::int64_t s = 0;
  for (auto v : widths) s += v;
  return s;
}

void apply_gram(const float* a, std::int64_t n, std::int64_t m, bool ata, const std::vector<double>& x, std::int64_t b,
                std::vector<double>& y, std::vector<double>& z) {
  if (ata) {
    // Per tile: z = A_tile·X (8×b, in L1), then Y += A_tileᵀ·z: one pass over A.
    y.assign(static_cast<std::size_t>(m * b), 0.0);
    z.resize(static_cast<std::size_t>(kTile * b));
    for (std::int64_t i0 = 0; i0 < n; i0 += kTile) {
      const std::int64_t rows = std::min(kTile, n - i0);
      std::fill(z.begin(), z.end(), 0.0);
      tile_times_block(a + i0 * m, m, rows, x.data(), b, z.data());
      tile_transpose_times(a + i0 * m, m, rows, z.data(), b, y.data());
    }
  } else {
    // z = Aᵀ·X (m×b) tile by tile, then Y = A·z: two passes over A.
    z.assign(static_cast<std::size_t>(m * b), 0.0);
    for (std::int64_t i0 = 0; i0 < n; i0 += kTile)
      tile_transpose_times(a + i0 * m, m, std::min(kTile, n - i0), x.data() + i0 * b, b, z.data());
    y.assign(static_cast<std::size_t>(n * b), 0.0);
    for (std::int64_t i0 = 0; i0 < n; i0 += kTile)
      tile_times_block(a + i0 * m, m, std::min(kTile, n - i0), z.data(), b, y.data() + i0 * b);
  }
}

std::vector<double> block_dot(const std::vector<double>& bl, std::int64_t bw, const std::vector<double>& w, std::int64_t wcols,
                              std::int64_t p) {
  std::vector<double> c(static_cast<std::size_t>(bw * wcols), 0.0);
  dot_kernel(bl.data(), bw, w.data(), wcols, p, c.data());
  return c;
}

std::int64_t orthonormalize_against(const Basis& basis, std::vector<double>& w, std::int64_t wcols, std::uint64_t seed,
                                    std::uint64_t stream, std::uint64_t& counter,
                                    std::vector<std::vector<double>>* first_pass) {
  const std::int64_t p = basis.p;
  std::vector<double> before(static_cast<std::size_t>(wcols));
  for (std::int64_t c = 0; c < wcols; ++c) before[c] = column_norm_sq(w, wcols, p, c);
  if (first_pass) first_pass->clear();
  auto project_out = [&](bool record) {
    for (std::size_t j = 0; j < basis.blocks.size(); ++j) {
      auto c = block_dot(basis.blocks[j], basis.widths[j], w, wcols, p);
      subtract_kernel(basis.blocks[j].data(), basis.widths[j], c.data(), wcols, p, w.data());
      if (record && first_pass) first_pass->push_back(std::move(c));
    }
  };
  project_out(true);
  project_out(false);
  // Column by column: modified Gram-Schmidt (twice) against the kept columns of W.
  std::int64_t kept = 0;
  const std::int64_t room = p - basis.size();
  for (std::int64_t c = 0; c < wcols && kept < room; ++c) {
    for (int attempt = 0; attempt < 4; ++attempt) {
      for (int pass = 0; pass < 2; ++pass)
        for (std::int64_t d = 0; d < kept; ++d) {
          double dot = 0;
          for (std::int64_t i = 0; i < p; ++i) dot += w[i * wcols + d] * w[i * wcols + c];
          for (std::int64_t i = 0; i < p; ++i) w[i * wcols + c] -= dot * w[i * wcols + d];
        }
      const double nn = column_norm_sq(w, wcols, p, c);
      if (nn > 1e-20 * before[c] && nn > 0) {
        const double inv = 1 / std::sqrt(nn);
        for (std::int64_t i = 0; i < p; ++i) w[i * wcols + kept] = w[i * wcols + c] * inv;
        ++kept;
        break;
      }
      // Degenerate: a fresh Gaussian direction, orthogonalised against the basis (twice).
      for (std::int64_t i = 0; i < p; ++i) w[i * wcols + c] = rng::normal_at(seed, stream, counter++);
      before[c] = column_norm_sq(w, wcols, p, c);
      std::vector<double> col(static_cast<std::size_t>(p));
      for (int pass = 0; pass < 2; ++pass)
        for (std::size_t j = 0; j < basis.blocks.size(); ++j) {
          const auto& bl = basis.blocks[j];
          const std::int64_t bw = basis.widths[j];
          for (std::int64_t i = 0; i < p; ++i) col[i] = w[i * wcols + c];
          auto dots = block_dot(bl, bw, col, 1, p);
          for (std::int64_t i = 0; i < p; ++i) {
            double s = 0;
            for (std::int64_t e = 0; e < bw; ++e) s += bl[i * bw + e] * dots[e];
            w[i * wcols + c] -= s;
          }
        }
    }
  }
  if (kept < wcols) {  // compact to p×kept
    for (std::int64_t i = 0; i < p; ++i)
      for (std::int64_t d = 0; d < kept; ++d) w[i * kept + d] = w[i * wcols + d];
    w.resize(static_cast<std::size_t>(p * kept));
  }
  return kept;
}

}  // namespace lgreco::kernels::cpu::lowrank
