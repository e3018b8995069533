#pragma once
/// Block operations of the Krylov method of exact_rank_errors (kernels/cpu/lowrank_exact.cpp):
/// cache-blocked products with the Gram of a float matrix and block orthogonalisation, in double.
/// Blocks are row-major p×b double matrices (row i = coordinate i of the b vectors).
#include <cstdint>
#include <vector>

namespace lgreco::kernels::cpu::lowrank {

/// Y = G·X for a block X (p×b), G = AᵀA (ata, p = m) or A·Aᵀ (p = n) of A (n×m row-major float),
/// without forming G: A is read in tiles of 8 rows, each A element is used for b products, and the
/// per-tile partial products stay in L1. `z` is scratch (resized). Y is resized to p×b.
void apply_gram(const float* a, std::int64_t n, std::int64_t m, bool ata, const std::vector<double>& x, std::int64_t b,
                std::vector<double>& y, std::vector<double>& z);

/// An orthonormal basis stored as blocks (each p×width, row-major).
struct Basis {
  std::int64_t p = 0;
  std::vector<std::vector<double>> blocks;
  std::vector<std::int64_t> widths;
  std::int64_t size() const;  ///< total number of vectors
};

/// C = Bᵀ·W (bw×w) for a p×bw block B and a p×w block W.
std::vector<double> block_dot(const std::vector<double>& bl, std::int64_t bw, const std::vector<double>& w, std::int64_t wcols,
                              std::int64_t p);

/// Makes the columns of W (p×w) orthonormal and orthogonal to `basis` (block Gram-Schmidt against the
/// basis twice, then modified Gram-Schmidt twice inside W). A column that loses more than all but
/// 1e-10 of its norm (W is rank-deficient against the basis) is replaced by a Gaussian vector from
/// (seed, stream, counter++) and orthogonalised again; if the basis already spans everything
/// (basis.size() + kept ≥ p) such columns are dropped. Returns the kept width (W shrinks to it).
/// If `first_pass` is given it receives, per basis block j, B_jᵀ·W of the original W (bw_j×w).
std::int64_t orthonormalize_against(const Basis& basis, std::vector<double>& w, std::int64_t wcols, std::uint64_t seed,
                                    std::uint64_t stream, std::uint64_t& counter,
                                    std::vector<std::vector<double>>* first_pass = nullptr);

}  // namespace lgreco::kernels::cpu::lowrank
