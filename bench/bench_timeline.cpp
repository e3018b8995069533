// Step-timeline throughput: a 1,000-layer model in 100 buckets, one simulated step per iteration
// with that step's backward times (as replayed from a trace). The output is validated against the
// straightforward simulate_step before timing.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "sim/timeline.hpp"

namespace {

class AlphaBeta : public lgreco::net::CollectiveCost {
 public:
  double time_s(lgreco::Collective, double bytes) const override { return bytes > 0 ? 20e-6 + bytes / 100e9 : 0; }
};

struct Fixture {
  lgreco::sim::StepModel model;
  std::vector<lgreco::sim::LayerComm> comm;
  std::vector<std::vector<double>> steps;  // 64 recorded steps of backward times
  AlphaBeta cost;
  Fixture() {
    constexpr int kLayers = 1000, kBuckets = 100;
    std::mt19937_64 rng(1);
    std::uniform_real_distribution<double> u(0.5, 1.5);
    model.forward_s = 0.01;
    model.optimizer_s = 0.002;
    for (int i = 0; i < kLayers; ++i) {
      model.backward_s.push_back(20e-6 * u(rng));
      model.backward_order.push_back(kLayers - 1 - i);
      lgreco::sim::LayerComm c;
      c.allreduce_bytes[0] = 4e5 * u(rng);
      c.compress_s = 1e-6;
      comm.push_back(c);
    }
    model.buckets.resize(kBuckets);
    for (int i = 0; i < kLayers; ++i) model.buckets[(kLayers - 1 - i) / (kLayers / kBuckets)].push_back(i);
    for (int s = 0; s < 64; ++s) {
      auto b = model.backward_s;
      for (auto& v : b) v *= u(rng);
      steps.push_back(b);
    }
  }
};

void BM_SimulateStep(benchmark::State& state) {
  Fixture f;
  const lgreco::sim::StepSimulator sim(f.model, f.comm, f.cost);
  for (const auto& b : f.steps) {
    lgreco::sim::StepModel m = f.model;
    m.backward_s = b;
    const double ref = lgreco::sim::simulate_step(m, f.comm, f.cost).step_s;
    if (std::abs(sim.step_s(b) - ref) > 1e-12 * ref) {
      state.SkipWithError("StepSimulator disagrees with simulate_step");
      return;
    }
  }
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(sim.step_s(f.steps[i++ & 63]));
  }
  state.counters["steps_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SimulateStep);

void BM_SimulateStepFull(benchmark::State& state) {
  Fixture f;
  for (auto _ : state) benchmark::DoNotOptimize(lgreco::sim::simulate_step(f.model, f.comm, f.cost).step_s);
  state.counters["steps_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SimulateStepFull);

}  // namespace

BENCHMARK_MAIN();
