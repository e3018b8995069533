// The time engine: never worse than the reference plan on predicted step time, strictly better
// when overlap with backward compute hides some layers' communication.
#include <catch2/catch.hpp>

#include <numeric>
#include <random>

#include "planner/engine_time.hpp"
#include "planner/plan.hpp"

using namespace lgreco::planner;
namespace sim = lgreco::sim;
using lgreco::Json;

namespace {

// α-β model: t = α + bytes / bandwidth per collective (allgather pays world−1 payloads).
class AlphaBeta : public lgreco::net::CollectiveCost {
 public:
  AlphaBeta(double alpha_s, double bw_Bps, int world) : a_(alpha_s), bw_(bw_Bps), p_(world) {}
  double time_s(lgreco::Collective c, double bytes) const override {
    if (bytes <= 0) return 0;
    const double f = c == lgreco::Collective::kAllreduce ? 2.0 * (p_ - 1) / p_ : (p_ - 1);
    return a_ + f * bytes / bw_;
  }

 private:
  double a_, bw_;
  int p_;
};

}  // namespace

TEST_CASE("time engine is never worse than the reference on random instances", "[time]") {
  std::mt19937_64 rng(21);
  std::uniform_real_distribution<double> u(0, 1);
  const AlphaBeta cost(5e-6, 1e9, 8);
  int strictly_better = 0;
  for (int trial = 0; trial < 150; ++trial) {
    const int L = 2 + static_cast<int>(rng() % 8);
    const int NB = 1 + static_cast<int>(rng() % 4);
    TimeProblem p;
    p.model.forward_s = 1e-3 * u(rng);
    p.model.backward_order.resize(L);
    std::iota(p.model.backward_order.begin(), p.model.backward_order.end(), 0);
    p.model.buckets.assign(NB, {});
    Knapsack ks;
    double uniform_error = 0;
    for (int l = 0; l < L; ++l) {
      p.model.backward_s.push_back(1e-3 * u(rng) * (rng() % 3 == 0 ? 20 : 1));
      p.model.buckets[std::min(NB - 1, l * NB / L)].push_back(l);  // contiguous buckets in backward order
      TimeLayer tl;
      KnapsackLayer kl;
      const int K = 1 + static_cast<int>(rng() % 5);
      for (int c = 0; c < K; ++c) {
        const double e = u(rng) * 2, bytes = std::round(u(rng) * 4e6);
        sim::LayerComm lc;
        if (rng() % 2) lc.allreduce_bytes = {bytes * 0.6, bytes * 0.4};
        else lc.allgather_bytes = bytes / 8;
        tl.error.push_back(e);
        tl.comm.push_back(lc);
        kl.error.push_back(e);
        kl.bytes.push_back(lc.allreduce_bytes[0] + lc.allreduce_bytes[1] + lc.allgather_bytes);
      }
      uniform_error += tl.error[0];
      p.layers.push_back(tl);
      ks.layers.push_back(kl);
    }
    p.error_budget = uniform_error * (0.7 + u(rng));
    ks.budget = p.error_budget;
    CAPTURE(trial, L, NB, p.error_budget);
    const auto ref = solve_reference(ks);
    const std::vector<int>* ref_choice = ref.status == PlanStatus::kInfeasible ? nullptr : &ref.choice;
    const TimeResult r = solve_time(p, cost, TimeOptions{}, ref_choice);
    if (r.status == PlanStatus::kInfeasible) {
      REQUIRE(ref_choice == nullptr);
      continue;
    }
    REQUIRE(r.total_error <= p.error_budget);
    REQUIRE(r.step_s == predict_step_s(p, r.choice, cost));
    if (ref_choice) {
      const double ref_step = predict_step_s(p, ref.choice, cost);
      REQUIRE(r.step_s <= ref_step);
      if (r.step_s < ref_step) ++strictly_better;
    }
  }
  CHECK(strictly_better > 0);
}

TEST_CASE("time engine beats the reference when overlap hides an early bucket", "[time]") {
  // Layer A (bucket 0) is ready at t = 1 s and its communication overlaps with the 1000 s backward
  // of layer B (bucket 1), whose communication is exposed. Candidates (error, bytes):
  //   A: (2, 100) or (1, 228);  B: (2, 100) or (1, 200);  budget T = 3.5 admits one layer at error 2.
  // (Random-k on 100 elements: densities 0.25, 0.5625 and 0.5 send 25, 57 and 50 values.)
  // Least bytes (the reference): A at 100, B at 200 → step = 1001 + 200·β. Least time: B at 100,
  // A at 228 (hidden) → step = 1001 + 100·β. With β = 1 s/byte and α = 0: 1201 s vs 1101 s.
  Window w;
  w.start_step = 0;
  w.end_step = 10;
  auto layer = [](const std::string& name, int bucket, int order, double compute, double hi_density) {
    LayerTable l;
    l.name = name;
    l.shape = {50, 2};
    l.numel = 100;
    l.bucket = bucket;
    l.backward_order = order;
    l.compute_time_s = compute;
    for (auto [e, d] : {std::pair{2.0, 0.25}, std::pair{1.0, hi_density}}) {
      l.candidates.push_back(make_candidate(lgreco::kernels::parse_method("randomk", {{"density", std::to_string(d)}}), l.shape, e));
    }
    l.default_index = 1;
    return l;
  };
  w.layers = {layer("A", 0, 0, 1.0, 0.5625), layer("B", 1, 1, 1000.0, 0.5)};
  REQUIRE(w.layers[0].candidates[1].bytes == 228);
  REQUIRE(w.layers[1].candidates[1].bytes == 200);
  const AlphaBeta cost(0, 1.0, 2);  // allreduce factor 2·(2−1)/2 = 1 → t = bytes seconds
  PlanOptions o;
  o.budget = {Budget::Kind::kError, 3.5};
  o.engine = Engine::kReference;
  const WindowPlan ref = plan_window(w, o, &cost);
  REQUIRE(ref.choice == std::vector<int>{0, 1});
  REQUIRE(*ref.step_s == Approx(1201.0));
  o.engine = Engine::kTime;
  const WindowPlan t = plan_window(w, o, &cost);
  CAPTURE(t.detail);
  REQUIRE(t.choice == std::vector<int>{1, 0});
  REQUIRE(*t.step_s == Approx(1101.0));
  REQUIRE(*t.step_s < *ref.step_s);
  REQUIRE(t.total_error <= 3.5);
}

TEST_CASE("kernel time: measured kernel_time_s split evenly, else the kernel-time function, never for none", "[time]") {
  LayerTable l;
  l.name = "w";
  l.shape = {64, 32};
  l.numel = 2048;
  // Top-k 10 % of 2048: k = 205, bitmap 256 + 4·205 = 1076 bytes (< 8·205 pairs).
  Candidate c = make_candidate(lgreco::kernels::parse_method("topk", {{"density", "0.1"}}), l.shape, 0.0);
  REQUIRE(c.bytes == 1076);
  REQUIRE(c.collective == lgreco::Collective::kAllgather);
  int calls = 0;
  const KernelTimeFn fn = [&calls](const LayerTable& layer, const Candidate& cand) -> std::array<double, 2> {
    ++calls;
    CHECK(layer.name == "w");
    CHECK(cand.spec.method != lgreco::kernels::Method::kNone);
    return {3e-3, 5e-3};
  };
  sim::LayerComm lc = layer_comm_of(l, c);
  CHECK(lc.compress_s == 0);
  CHECK(lc.decompress_s == 0);
  lc = layer_comm_of(l, c, fn);
  CHECK(lc.compress_s == 3e-3);
  CHECK(lc.decompress_s == 5e-3);
  CHECK(lc.allgather_bytes == 1076);
  c.kernel_time_s = 8e-3;  // measured: wins over the function
  lc = layer_comm_of(l, c, fn);
  CHECK(lc.compress_s == 4e-3);
  CHECK(lc.decompress_s == 4e-3);
  const Candidate none = make_candidate(lgreco::kernels::MethodSpec{}, l.shape, 0.0);
  lc = layer_comm_of(l, none, fn);
  CHECK(lc.compress_s == 0);
  CHECK(lc.decompress_s == 0);
  CHECK(calls == 1);
}

TEST_CASE("time engine weighs kernel time: fewer bytes lose to no kernel time on a fast network", "[time]") {
  // One bucket of three layers; each layer has X (1000 B, 10 ms of decompression) and Y (2000 B, no
  // kernel time), equal errors. The byte-minimal reference plan is all X; on a 100 GB/s network the
  // extra 1000 B cost 10 ns per layer while X's kernel costs 10 ms, so the best plan is all Y.
  TimeProblem p;
  p.model.forward_s = 0;
  p.model.backward_s = {1e-3, 1e-3, 1e-3};
  p.model.backward_order = {2, 1, 0};
  p.model.buckets = {{0, 1, 2}};
  for (int i = 0; i < 3; ++i) {
    TimeLayer l;
    l.error = {1.0, 1.0};
    sim::LayerComm x, y;
    x.allgather_bytes = 1000;
    x.decompress_s = 10e-3;
    y.allgather_bytes = 2000;
    l.comm = {x, y};
    p.layers.push_back(l);
  }
  p.error_budget = 3.3;  // slack for the grid's rounding up
  const AlphaBeta cost(1e-6, 100e9, 8);
  const std::vector<int> reference{0, 0, 0};
  const TimeResult r = solve_time(p, cost, TimeOptions{}, &reference);
  CAPTURE(r.source, r.step_s, r.reference_step_s.value_or(-1));
  CHECK(r.source == "time-dp");
  CHECK(r.choice == std::vector<int>{1, 1, 1});
  CHECK(r.step_s < *r.reference_step_s - 0.029);  // three 10 ms kernels saved
  CHECK(r.step_s == Approx(predict_step_s(p, {1, 1, 1}, cost)));
}
