// Exact best-rank-k errors (PowerSGD planning mode, error_mode "exact"), k = 1..32, one thread:
// a 4096×4096 Gaussian-noise layer (flat spectrum, tiny gaps) and a 4096×1024 layer with a known
// decaying spectrum σ_i = (1 + i)^−0.75. Before timing, each result is checked: it must be certified
// (converged), its certified lower bounds must bracket it within the stated accuracy
// (lower_k ≤ ê_k ≤ max((1+δ)·lower_k, lower_k + 1e-3·δ·‖A‖_F)), and on the known spectrum ê_k must
// match sqrt(Σ_{i>k} σ_i²) within that accuracy plus the float rounding of A.
#include <benchmark/benchmark.h>

#include <cmath>

#include "bench/kernels/exact_rank_inputs.hpp"
#include "kernels/cpu/powersgd.hpp"

namespace cpu = lgreco::kernels::cpu;

namespace {

constexpr std::int64_t kMaxRank = 32;

bool check(const cpu::ExactRankErrors& r, const std::vector<double>* sigma, std::string& why) {
  const double fro = std::sqrt(r.frobenius_sq), delta = cpu::ExactRankOptions{}.tolerance;
  if (!r.converged) return why = "not certified", false;
  for (std::int64_t k = 1; k <= kMaxRank; ++k) {
    const double est = r.errors[k - 1], lo = r.lower[k - 1];
    if (!(lo <= est && est <= std::max((1 + delta) * lo, lo + 1e-3 * delta * fro) + 1e-6 * fro))
      return why = "certificate does not bracket rank " + std::to_string(k), false;
    if (sigma) {
      double tail = 0;
      for (std::size_t i = k; i < sigma->size(); ++i) tail += (*sigma)[i] * (*sigma)[i];
      const double e = std::sqrt(tail);
      if (!(std::fabs(est - e) <= delta * e + 1e-3 * delta * fro + 1e-7 * fro))
        return why = "rank " + std::to_string(k) + " differs from the known spectrum", false;
    }
  }
  return true;
}

void run(benchmark::State& st, std::int64_t n, std::int64_t m, const std::vector<float>& a, const std::vector<double>* sigma) {
  auto r = cpu::exact_rank_errors(a, n, m, 1, kMaxRank);
  std::string why;
  if (!check(r, sigma, why)) {
    st.SkipWithError(why.c_str());
    return;
  }
  for (auto _ : st) {
    r = cpu::exact_rank_errors(a, n, m, 1, kMaxRank);
    benchmark::DoNotOptimize(r.errors.data());
  }
  st.counters["krylov_steps"] = r.iterations;
  st.counters["certificate_steps"] = r.certificate_iterations;
  st.counters["e32_over_fro"] = r.errors[kMaxRank - 1] / std::sqrt(r.frobenius_sq);
}

void BM_exact_rank_noise_4096x4096(benchmark::State& st) {
  static const auto a = lgreco::bench::noise_layer(4096, 4096);
  run(st, 4096, 4096, a, nullptr);
}

void BM_exact_rank_decaying_4096x1024(benchmark::State& st) {
  static std::vector<double> sigma;
  static const auto a = lgreco::bench::decaying_layer(4096, 1024, sigma);
  run(st, 4096, 1024, a, &sigma);
}

}  // namespace

BENCHMARK(BM_exact_rank_noise_4096x4096)->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(3);
BENCHMARK(BM_exact_rank_decaying_4096x1024)->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(3);
BENCHMARK_MAIN();
