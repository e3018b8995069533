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
  double tolerance = 1e-3;              ///< δ: certified relative accuracy of every error (see exact_rank_errors)
  double failure_probability = 1e-9;    ///< η: probability (over the seeded draws) that a certificate is wrong
  int max_iterations = 64;              ///< block Krylov steps (products G·block) before giving up uncertified
  std::int64_t dense_limit = 128;       ///< min(n, m) ≤ this: dense Gram + cyclic Jacobi (all σ exactly)
  std::uint64_t seed = 0;               ///< start block of the Krylov space and of the certificate runs
};

/// Result: error(k) for k = k_min..k_max.
struct ExactRankErrors {
  std::vector<double> errors;       ///< ê_k: errors[k − k_min] = sqrt(max(0, ‖A‖_F² − Σ_{i≤k} θ_i)) ≥ e_k
  std::vector<double> lower;        ///< certified lower bounds on e_k (0 where not converged)
  std::vector<double> sigma;        ///< the top min(k_max, min(n, m)) singular values (sqrt θ_i), decreasing
  double frobenius_sq = 0;          ///< ‖A‖_F² (double accumulation)
  int iterations = 0;               ///< block Krylov steps of the main space (0 for the dense path)
  int certificate_iterations = 0;   ///< block steps of the certificate runs (all attempts together)
  bool converged = true;            ///< the accuracy below is certified; false: max_iterations reached first
};

/// Best rank-k approximation errors e_k = ‖A − A_k‖_F = sqrt(Σ_{i>k} σ_i²) for all k in
/// [k_min, k_max] of A (n×m row-major), t = min(k_max, p) singular values needed, p = min(n, m),
/// Gram G = AᵀA or A·Aᵀ (side p), F = ‖A‖_F² = tr G. For k ≥ p the error is 0.
///
/// p ≤ dense_limit: G formed in double and diagonalised by cyclic Jacobi (exact up to rounding).
///
/// Otherwise randomized block Krylov (Musco & Musco 2015): the space K = span{X, G·X, …, G^{q−1}·X},
/// X Gaussian p×b, b = t + max(8, ⌊t/4⌋), orthonormalised block by block against all earlier blocks
/// (block Gram-Schmidt twice, i.e. block Lanczos with full reorthogonalisation), G applied as
/// Aᵀ(A·X) without forming it. Rayleigh-Ritz on K (T = QᵀGQ, Householder + implicit QR) gives Ritz
/// values θ_1 ≥ θ_2 ≥ …; by Cauchy interlacing θ_i ≤ σ_i², so ê_k² = F − Σ_{i≤k} θ_i ≥ e_k². Musco &
/// Musco show ê_k ≤ (1 + ε)·e_k already for q = O(log p / √ε) whatever the gaps σ_{k+1}/σ_k (a flat
/// spectrum is the easy case for this measure), which is why the depth needed stays small.
///
/// Certificate (checked at q = 2, 3, 4, 5, 7, 9, …, until it holds): Y = the top b Ritz vectors,
/// Θ = diag(θ_1..θ_b), R = G·Y − Y·Θ (R ⟂ Y). In the basis [Y, Y⊥], G = [[Θ, R̃ᵀ], [R̃, C]] with
/// R̃ᵀR̃ = RᵀR and C = G compressed to Y⊥. For any τ > 0, [[0, R̃ᵀ], [R̃, 0]] ≼ diag(RᵀR/τ, τ·I), so
/// G ≼ diag(Θ + RᵀR/τ, C + τ·I) and by Weyl + Ky Fan, with μ(τ) = eig(Θ + RᵀR/τ) and c ≥ λ_max(C),
///     Σ_{i≤k} σ_i² ≤ U_k = min over τ of Σ_{i≤k} max(μ_i(τ), c + τ)        (τ = θ_1·2^−j, j ≤ 52).
/// c comes from a separate block Krylov run on C = (I − YYᵀ)·G·(I − YYᵀ) with 8 fresh Gaussian
/// columns (independent stream; attempt a uses stream_of(a, 0xFFFFFE)): Kuczyński & Woźniakowski
/// (1992) bound the chance that Lanczos with k products from a uniform random start underestimates
/// λ_max of a PSD d×d operator by a factor < 1 − ε by 1.648·√d·e^{−√ε(2k−1)}; a block contains each
/// column's Krylov space, so with 8 independent columns the failure is ≤ that to the 8th power. We
/// take c = θ_max(run)/(1 − ε) with ε solved for failure η·2^−a (Σ over attempts ≤ η); if the run
/// spans all of Y⊥, c is exact. Then 0 ≤ ê_k² − e_k² ≤ Δ_k := U_k − Σ_{i≤k} θ_i, and `converged`
/// means that for every k in [k_min, k_max]
///     Δ_k ≤ max(ê_k²·(1 − (1+δ)^−2), (10^−3·δ)²·F),   hence   e_k ≤ ê_k ≤ max((1+δ)·e_k, e_k + 10^−3·δ·‖A‖_F)
/// with probability ≥ 1 − η over the seeded draws (δ = tolerance), up to double rounding of the
/// products (~1e-13·F in ê_k²). `lower` = sqrt(max(0, F − U_k)) is the matching certified lower
/// bound. If the Krylov basis reaches dimension p, the Ritz values are the eigenvalues (exact).
/// Deterministic for a given seed.
ExactRankErrors exact_rank_errors(std::span<const float> a, std::int64_t n, std::int64_t mcols, std::int64_t k_min,
                                  std::int64_t k_max, const ExactRankOptions& opt = {});

/// Symmetric eigenvalues (decreasing) of a p×p row-major double matrix by cyclic Jacobi; if
/// `vectors` is non-null it receives the eigenvectors as columns (row-major p×p, same order).
std::vector<double> jacobi_eigen(std::vector<double> g, std::int64_t p, std::vector<double>* vectors = nullptr);

/// The same by Householder tridiagonalisation and implicit symmetric QR with Wilkinson shifts
/// (Golub & Van Loan §8.3), O(p³) with a small constant: for the larger projected problems.
std::vector<double> symmetric_eigen(std::vector<double> g, std::int64_t p, std::vector<double>* vectors = nullptr);

}  // namespace lgreco::kernels::cpu
