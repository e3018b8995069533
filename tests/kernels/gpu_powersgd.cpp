// CUDA PowerSGD against the CPU reference (kernels/cpu/powersgd.hpp).
// Model and tolerances:
// - products (cuBLAS sgemm vs the reference's 8-partial dot products): both are fp32 sums of K
//   products, each within γ_K·(|A|·|B|)_ij of the exact value, γ_K = K·u/(1 − K·u), u = 2^−24
//   (Higham, Thm 3.5); so |gpu − cpu| ≤ 2·γ_K·(|A|·|B|)_ij — a tolerance growing with K;
// - orthogonalisation (double MGS on both sides for r ≤ 2; the reference uses Householder for r > 2):
//   columns orthonormal up to float storage, |QᵀQ − I| ≤ 4u, and the same column space as the
//   reference: ‖P_gpu·P_gpuᵀ·p − p‖ ≤ kSpanTol for each reference column p;
// - a full step: M̂ = P·Pᵀ·M depends only on the column space, so M̂ agrees up to the products'
//   rounding amplified by the spectral gap of the test matrices (singular values halve from one
//   to the next, gap ≥ σ_r/2): per element ≤ kStepAbsTol·max|M| and normalised MSE ≤ kStepNmse.
// - an all-zero layer reconstructs to exact zeros on both sides.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/powersgd.hpp"
#include "kernels/cuda/powersgd.hpp"
#include "tests/kernels/gpu_util.hpp"

namespace {

using namespace lgreco;
using namespace lgreco::gputest;
namespace cpu = lgreco::kernels::cpu;
using kernels::Orthogonalization;
using kernels::PowerSgdParams;

constexpr double kU = 1.0 / 16777216.0;  // fp32 unit roundoff 2^-24
constexpr double kSpanTol = 1e-4;        // subspace distance of two orthogonalisations of a κ ≤ 1e2 matrix, ≈ κ·√rows·u
constexpr double kStepAbsTol = 1e-3;     // 2^r (gap) · √K · u ≈ 1e-4 for r ≤ 8, K ≤ 4096, with a 10× margin
constexpr double kStepNmse = 1e-6;       // (kStepAbsTol)² · 1: the error is spread, not concentrated

struct Shape {
  std::int64_t n, m, r;
};
const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s = {{1, 1, 1},    {32, 33, 1},    {256, 257, 2}, {1000, 31, 4},
                                       {64, 4097, 8}, {255, 1, 1},   {2048, 2048, 4}};
  return s;
}

/// M = Σ_l 2^−l a_l b_lᵀ (l < 12) + 1e-4 noise: singular values roughly halve, so every rank
/// tested has a gap.
std::vector<float> make_matrix(std::int64_t n, std::int64_t m, std::uint64_t seed) {
  std::vector<double> a(static_cast<std::size_t>(n) * 12), b(static_cast<std::size_t>(m) * 12);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = rng::normal_at(seed, 1, i);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = rng::normal_at(seed, 2, i);
  std::vector<float> M(static_cast<std::size_t>(n * m));
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < m; ++j) {
      double v = 1e-4 * rng::normal_at(seed, 3, static_cast<std::uint64_t>(i * m + j));
      for (int l = 0; l < 12; ++l) v += std::ldexp(a[i * 12 + l] * b[j * 12 + l], -l);
      M[static_cast<std::size_t>(i * m + j)] = static_cast<float>(v / std::sqrt(static_cast<double>(m)));
    }
  return M;
}

/// (|A|·|B|)_ij for row-major A (a×k), B (k×b) — the scale of the product's rounding error.
void expect_product(const std::vector<float>& got, const std::vector<float>& want, const std::vector<float>& absab,
                    std::int64_t k, const std::string& what, const std::string& ctx) {
  const double gamma = k * kU / (1 - k * kU);
  for (std::size_t i = 0; i < got.size(); ++i)
    LGRECO_EXPECT(std::fabs(static_cast<double>(got[i]) - want[i]) <= 2 * gamma * absab[i] + 1e-30,
                  what << "[" << i << "] = " << got[i] << ", reference " << want[i] << ", bound "
                       << 2 * gamma * absab[i] << " [" << ctx << "]");
}

std::vector<float> abs_product(const std::vector<float>& a, std::int64_t rows, std::int64_t k, const std::vector<float>& b,
                               std::int64_t cols, bool a_transposed) {
  // a_transposed: a is stored k×rows (use aᵀ).
  std::vector<float> out(static_cast<std::size_t>(rows * cols));
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      double s = 0;
      for (std::int64_t t = 0; t < k; ++t)
        s += std::fabs(a_transposed ? a[t * rows + i] : a[i * k + t]) * std::fabs(b[t * cols + j]);
      out[static_cast<std::size_t>(i * cols + j)] = static_cast<float>(s);
    }
  return out;
}

std::vector<float> transpose(const std::vector<float>& a, std::int64_t rows, std::int64_t cols) {
  std::vector<float> t(a.size());
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) t[j * rows + i] = a[i * cols + j];
  return t;
}

void run_products() {
  kc::BlasHandle blas;
  for (const Shape& s : shapes()) {
    if (s.n * s.m > 300000) continue;  // the |A|·|B| oracle is O(n·m·r) in double on the host
    const std::string ctx = Ctx()("n", s.n)("m", s.m)("r", s.r).str();
    const auto M = make_matrix(s.n, s.m, 5);
    std::vector<float> Q(static_cast<std::size_t>(s.m * s.r)), P(static_cast<std::size_t>(s.n * s.r));
    for (std::size_t i = 0; i < Q.size(); ++i) Q[i] = static_cast<float>(rng::normal_at(6, 0, i));
    Dev<float> dM(M), dQ(Q), dP(P.size()), dQ2(Q.size()), dOut(M.size());
    blas.set_stream(nullptr);
    cpu::matmul_mq(M, s.n, s.m, Q, s.r, P);
    kc::matmul_mq(blas, dM.get(), s.n, s.m, dQ.get(), s.r, dP.get());
    expect_product(dP.host(), P, abs_product(M, s.n, s.m, Q, s.r, false), s.m, "M·Q", ctx);
    // Continue from the reference's P on both sides so each product is checked on its own.
    Dev<float> dPref(P);
    std::vector<float> Q2(Q.size());
    cpu::matmul_mtp(M, s.n, s.m, P, s.r, Q2);
    kc::matmul_mtp(blas, dM.get(), s.n, s.m, dPref.get(), s.r, dQ2.get());
    expect_product(dQ2.host(), Q2, abs_product(M, s.m, s.n, P, s.r, true), s.n, "Mt·P", ctx);
    std::vector<float> out(M.size());
    cpu::matmul_pqt(P, s.n, Q, s.m, s.r, out);
    kc::matmul_pqt(blas, dPref.get(), s.n, dQ.get(), s.m, s.r, dOut.get());
    expect_product(dOut.host(), out, abs_product(P, s.n, s.r, transpose(Q, s.m, s.r), s.m, false), s.r, "P·Qt", ctx);
  }
}

void expect_orthonormal_same_span(const std::vector<float>& got, const std::vector<float>& ref, std::int64_t rows,
                                  std::int64_t cols, const std::string& ctx) {
  for (std::int64_t a = 0; a < cols; ++a)
    for (std::int64_t b = 0; b < cols; ++b) {
      double d = 0;
      for (std::int64_t i = 0; i < rows; ++i) d += static_cast<double>(got[i * cols + a]) * got[i * cols + b];
      LGRECO_EXPECT(std::fabs(d - (a == b ? 1.0 : 0.0)) <= 4 * kU + 1e-12,
                    "(QtQ)[" << a << "," << b << "] = " << d << " [" << ctx << "]");
    }
  for (std::int64_t c = 0; c < cols; ++c) {
    std::vector<double> coef(static_cast<std::size_t>(cols), 0.0);
    for (std::int64_t a = 0; a < cols; ++a)
      for (std::int64_t i = 0; i < rows; ++i) coef[a] += static_cast<double>(got[i * cols + a]) * ref[i * cols + c];
    double err2 = 0;
    for (std::int64_t i = 0; i < rows; ++i) {
      double proj = 0;
      for (std::int64_t a = 0; a < cols; ++a) proj += coef[a] * got[i * cols + a];
      err2 += (proj - ref[i * cols + c]) * (proj - ref[i * cols + c]);
    }
    LGRECO_EXPECT(std::sqrt(err2) <= kSpanTol, "reference column " << c << " is " << std::sqrt(err2)
                                                                    << " away from the span [" << ctx << "]");
  }
}

void run_orthogonalize() {
  for (std::int64_t rows : {1, 31, 32, 257, 4097, 100000})
    for (std::int64_t cols : {1, 2, 3, 8})
      for (auto method : {Orthogonalization::kGramSchmidt, Orthogonalization::kQr}) {
        if (cols > rows) continue;
        const std::string ctx = Ctx()("rows", rows)("cols", cols)("method", method == Orthogonalization::kQr ? "qr" : "gs").str();
        std::vector<float> a(static_cast<std::size_t>(rows * cols));
        for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(rng::normal_at(rows, cols, i));
        std::vector<float> ref = a;
        cpu::orthogonalize(ref, rows, cols, method);
        Dev<float> da(a);
        Dev<double> scratch(kc::orthogonalize_scratch_doubles(rows, cols));
        kc::orthogonalize(da.get(), rows, cols, method, scratch.get(), nullptr);
        expect_orthonormal_same_span(da.host(), ref, rows, cols, ctx);
        // All-zero input: zero columns stay exactly zero.
        Dev<float> dz(std::vector<float>(a.size(), 0.0f));
        kc::orthogonalize(dz.get(), rows, cols, method, scratch.get(), nullptr);
        expect_bits(dz.host(), std::vector<float>(a.size(), 0.0f), "orthogonalised zeros", ctx);
      }
}

void run_steps() {
  kc::BlasHandle blas;
  for (const Shape& s : shapes())
    for (bool zero : {false, true}) {
      PowerSgdParams prm;
      prm.rank = static_cast<int>(s.r);
      prm.seed = 17;
      const std::int64_t r = std::min({s.n, s.m, s.r});
      const std::string ctx = Ctx()("n", s.n)("m", s.m)("r", r)("zero", zero)("seed", prm.seed).str();
      std::vector<float> q_cpu, p_cpu, out_cpu(static_cast<std::size_t>(s.n * s.m));
      std::vector<float> q0(static_cast<std::size_t>(s.m * r));
      for (std::size_t i = 0; i < q0.size(); ++i)
        q0[i] = static_cast<float>(rng::normal_at(prm.seed, rng::stream_of(0, 4), i));
      Dev<float> dq(q0), dp(static_cast<std::uint64_t>(s.n * r)), dout(out_cpu.size());
      Dev<double> scratch(kc::orthogonalize_scratch_doubles(std::max(s.n, s.m), r));
      for (std::uint64_t step = 0; step < 3; ++step) {
        const auto M = zero ? std::vector<float>(out_cpu.size(), 0.0f) : make_matrix(s.n, s.m, 100 + step);
        cpu::powersgd_step(M, s.n, s.m, r, prm, 4, step, q_cpu, p_cpu, out_cpu);
        Dev<float> dM(M);
        kc::powersgd_step(blas, dM.get(), s.n, s.m, r, prm, dq.get(), dp.get(), dout.get(), scratch.get(), nullptr);
        const std::string c = ctx + "step=" + std::to_string(step);
        if (zero) {
          expect_bits(dout.host(), out_cpu, "M̂ of a zero layer", c);
          continue;
        }
        double mx = 0;
        for (float v : M) mx = std::max(mx, static_cast<double>(std::fabs(v)));
        expect_close(dout.host(), out_cpu, kStepAbsTol * mx, 0.0, kStepNmse, "M̂", c);
      }
    }
}

}  // namespace

int main() {
  return lgreco::testing::run_gpu_tests(lgreco::kernels::cuda::device_count(),
                                        {{"cuBLAS products within 2·γ_K of the reference", run_products},
                                         {"orthogonalisation: orthonormal, same span, zeros stay zero", run_orthogonalize},
                                         {"three warm-started steps: M̂ vs reference", run_steps}});
}
