#pragma once
/// CPU reference of PowerSGD (PyTorch DDP hook semantics, one worker) and of the exact best
/// rank-k errors used for planning.
///
/// Matrix view: M = acc viewed row-major as n × m (n = shape[0], m = N/n), r = r_eff.
/// One step, q = power_iterations:
///   Q ← warm-start Q (m×r) of the layer state, or, when absent / shape changed / warm_start off,
///       Q[i] = rng::normal_at(seed, rng::stream_of(t, layer), i), i = row·r + col (row-major m×r),
///       t = 0 with warm start, t = step without (a fresh Q every step); generated on the host.
///   repeat q times: orthogonalise Q; P = M·Q; orthogonalise P; Q = Mᵀ·P
///   M̂ = P·Qᵀ; the state keeps Q (not orthogonalised: the next step orthogonalises it first).
/// Orthogonalisation (column-wise, in place, of an a×r matrix): modified Gram-Schmidt for r ≤ 2
/// (kAuto) or kGramSchmidt; Householder QR returning the thin Q factor for r > 2 (kAuto) or kQr.
/// A column whose norm is 0 after the projections (rank-deficient or all-zero input) is set to 0
/// instead of dividing by zero (PyTorch would produce NaN with epsilon 0); hence an all-zero layer
/// reconstructs to exact zeros. Column signs are not normalised: M̂ = P·Qᵀ does not depend on them.
/// Precision: fp32 storage, fp32 products with 8 interleaved partial sums in the dot products;
/// orthogonalisation in double. With r = min(n, m) and a full-rank M, M̂ = M up to rounding: the
/// relative Frobenius error is O(ε_fp32·κ(M)·sqrt(r)) (tests use 1e-4 for well-conditioned M).
/// Rank 0 (compressible by definition when N > 0) sends nothing: M̂ = 0.
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/method.hpp"

namespace lgreco::kernels::cpu {

/// Orthonormalises the r columns of a row-major a×r matrix in place (see above), in double.
void orthogonalize(std::span<float> a, std::int64_t rows, std::int64_t cols, Orthogonalization method);

/// P = M·Q: M n×m, Q m×r, P n×r (row-major). P must not alias M or Q.
void matmul_mq(std::span<const float> m, std::int64_t n, std::int64_t mcols, std::span<const float> q, std::int64_t r,
               std::span<float> p);
/// Q = Mᵀ·P: M n×m, P n×r, Q m×r (row-major).
void matmul_mtp(std::span<const float> m, std::int64_t n, std::int64_t mcols, std::span<const float> p, std::int64_t r,
                std::span<float> q);
/// out = P·Qᵀ: P n×r, Q m×r, out n×m (row-major).
void matmul_pqt(std::span<const float> p, std::int64_t n, std::span<const float> q, std::int64_t mcols, std::int64_t r,
                std::span<float> out);

/// One PowerSGD step on M (n×m): uses and updates `q` (m×r; empty = draw the first Q as above),
/// writes P (n×r) and M̂ (n×m). `stream_step` is the t of the rule above.
void powersgd_step(std::span<const float> m, std::int64_t n, std::int64_t mcols, std::int64_t r, const PowerSgdParams& p,
                   std::uint64_t layer, std::uint64_t step, std::vector<float>& q, std::vector<float>& p_out,
                   std::span<float> out);

/// Options of the exact best-rank-k error computation.
struct ExactRankOptions {
  double tolerance = 1e-9;        ///< stop when every tracked eigenvalue of the Gram changes < tol·‖A‖_F²
  int max_iterations = 500;       ///< subspace iterations
  std::int64_t dense_limit = 128; ///< min(n, m) ≤ this: dense Gram + cyclic Jacobi (all σ exactly)
  std::uint64_t seed = 0;         ///< start block of the subspace iteration
};

/// Result: error(k) for k = k_min..k_max.
struct ExactRankErrors {
  std::vector<double> errors;       ///< errors[k − k_min] = sqrt(max(0, ‖A‖_F² − Σ_{i≤k} σ_i²))
  std::vector<double> sigma;        ///< the top min(k_max, min(n, m)) singular values, decreasing
  double frobenius_sq = 0;          ///< ‖A‖_F² (double accumulation)
  int iterations = 0;               ///< subspace iterations used (0 for the dense path)
  bool converged = true;            ///< false if max_iterations was reached
};

/// Best rank-k approximation errors ‖A − A_k‖_F = sqrt(Σ_{i>k} σ_i²) for all k in [k_min, k_max]
/// of A (n×m row-major). Gram G = AᵀA or AAᵀ (the smaller side p = min(n, m)); p ≤ dense_limit:
/// G formed in double and diagonalised by cyclic Jacobi; else block subspace iteration on G
/// (applied as Aᵀ(A·X) without forming it) with block b = min(p, k_max + max(8, k_max)), Gram-Schmidt (twice)
/// re-orthonormalisation and Rayleigh-Ritz (Jacobi on b×b) each iteration, until the top k_max Ritz
/// values move less than tolerance·‖A‖_F² in one iteration (e(k)² then changes by less than that
/// per iteration; slowly decaying spectra converge slowly). For k ≥ p the error is 0. Accuracy:
/// errors below about sqrt(1e-12)·‖A‖_F are dominated by cancellation and reported as ≈ 0.
ExactRankErrors exact_rank_errors(std::span<const float> a, std::int64_t n, std::int64_t mcols, std::int64_t k_min,
                                  std::int64_t k_max, const ExactRankOptions& opt = {});

/// Symmetric eigenvalues (decreasing) of a p×p row-major double matrix by cyclic Jacobi; if
/// `vectors` is non-null it receives the eigenvectors as columns (row-major p×p, same order).
std::vector<double> jacobi_eigen(std::vector<double> g, std::int64_t p, std::vector<double>* vectors = nullptr);

}  // namespace lgreco::kernels::cpu
