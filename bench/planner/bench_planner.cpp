// Planner engines on one core. Each benchmark builds its instance, solves it once and checks the
// result against a second implementation (the plain transcription of the reference rules in
// tests/planner/naive_reference.hpp, and the budget) before timing; a mismatch aborts the run.
//
// Instances (seeded): per layer a matrix n × m with singular values σ_i ∝ i^(−0.8); candidate rank r
// has error sqrt(Σ_{i>r} σ_i²) (the SVD-mode error) and bytes 4·r·(n+m); the budget is the total
// error of the uniform default rank (α = 1), as in the reference.
//   transformer_xl: 81 layers × 121 candidates (ranks 8..128, default 32), B = 10,000
//   large:          2,000 layers × 64 candidates (ranks 1..64, default 16), B = 10,000
//   unpruned:       81 × 121 with errors c_l·(129 − r) and bytes 4·r·(n+m): every step of rank changes
//                   ẽ by more than one bucket (c_l ≥ w), so no candidate is dominated and the
//                   min-plus kernel does all 81·121·10,001 updates (worst case of the same size)
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "naive_reference.hpp"
#include "planner/knapsack.hpp"

namespace {

using namespace lgreco::planner;

Knapsack make_instance(int layers, int rank_lo, int rank_hi, int rank_default, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> dim(256, 4096);
  std::uniform_real_distribution<double> scale(0.5, 2.0);
  Knapsack k;
  double uniform = 0;
  for (int l = 0; l < layers; ++l) {
    const int n = dim(rng), m = dim(rng), q = std::min(n, m);
    const double a = scale(rng);
    std::vector<double> tail(q + 2, 0);  // tail[r] = Σ_{i>r} σ_i²
    for (int i = q; i >= 1; --i) tail[i - 1] = tail[i] + std::pow(a * std::pow(i, -0.8), 2);
    KnapsackLayer layer;
    for (int r = rank_lo; r <= rank_hi; ++r) {
      layer.error.push_back(std::sqrt(tail[std::min(r, q)]));
      layer.bytes.push_back(4.0 * r * (n + m));
    }
    uniform += layer.error[rank_default - rank_lo];
    k.layers.push_back(std::move(layer));
  }
  k.budget = uniform;
  return k;
}

Knapsack make_unprunable(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> dim(256, 4096);
  std::uniform_real_distribution<double> scale(1.0, 1.2);
  Knapsack k;
  double uniform = 0;
  for (int l = 0; l < 81; ++l) {
    const int n = dim(rng), m = dim(rng);
    const double c = scale(rng);
    KnapsackLayer layer;
    for (int r = 8; r <= 128; ++r) {
      layer.error.push_back(c * (129 - r));
      layer.bytes.push_back(4.0 * r * (n + m));
    }
    uniform += layer.error[32 - 8];
    k.layers.push_back(std::move(layer));
  }
  k.budget = uniform;  // w = T/B ≤ 81·1.2·97/10,000 < 1 ≤ c_l
  return k;
}

void check_or_die(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "bench_planner: validation failed: %s\n", what);
    std::abort();
  }
}

void validate(const Knapsack& k, const KnapsackResult& r, int B) {
  const auto naive = lgreco::planner::testing::naive_reference(k, B);
  check_or_die(naive.feasible && r.status != PlanStatus::kInfeasible, "feasibility differs from the naive rules");
  check_or_die(naive.choice == r.choice, "choice differs from the naive rules");
  check_or_die(r.total_error <= k.budget, "plan over budget");
}

void run_reference(benchmark::State& state, int layers, int lo, int hi, int def, bool unprunable = false) {
  const Knapsack k = unprunable ? make_unprunable(42) : make_instance(layers, lo, hi, def, 42);
  const int B = 10000;
  const KnapsackResult first = solve_reference(k, ReferenceOptions{B});
  validate(k, first, B);
  for (auto _ : state) {
    KnapsackResult r = solve_reference(k, ReferenceOptions{B});
    benchmark::DoNotOptimize(r.choice.data());
  }
  const double cells = static_cast<double>(layers) * (B + 1);
  state.counters["layers"] = layers;
  state.counters["candidates"] = hi - lo + 1;
  state.counters["parent_bytes_per_cell"] = static_cast<double>(first.parent_table_bytes) / cells;
  state.counters["updates_per_s"] = benchmark::Counter(cells * (hi - lo + 1), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["bytes_vs_uniform"] = first.total_bytes;
}

void BM_reference_transformer_xl(benchmark::State& s) { run_reference(s, 81, 8, 128, 32); }
void BM_reference_2000x64(benchmark::State& s) { run_reference(s, 2000, 1, 64, 16); }

void BM_reference_unpruned_81x121(benchmark::State& s) { run_reference(s, 81, 8, 128, 32, true); }

BENCHMARK(BM_reference_unpruned_81x121)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_reference_transformer_xl)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_reference_2000x64)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
