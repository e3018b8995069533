// Step timeline: closed-form cases, properties, bucketing and bad input.
#include <catch2/catch.hpp>

#include <random>

#include "core/error.hpp"
#include "sim/step_builder.hpp"
#include "sim/timeline.hpp"

using namespace lgreco::sim;

namespace {
/// α–β cost: t = alpha + bytes / beta (allgather the same per rank).
class AlphaBeta : public lgreco::net::CollectiveCost {
 public:
  AlphaBeta(double a, double b) : a_(a), b_(b) {}
  double time_s(lgreco::Collective, double bytes) const override { return bytes > 0 ? a_ + bytes / b_ : 0; }

 private:
  double a_, b_;
};
}  // namespace

TEST_CASE("two buckets: comm overlaps the remaining backward", "[timeline]") {
  // Layers 0,1 (backward order 1 then 0), 1 s each after a 1 s forward; bucket 0 = {1}, bucket 1 = {0}.
  StepModel m{1.0, {1.0, 1.0}, {1, 0}, {{1}, {0}}, 0.5};
  std::vector<LayerComm> c(2);
  c[0].allreduce_bytes[0] = c[1].allreduce_bytes[0] = 3.0;
  const AlphaBeta cost(0.0, 1.0);  // 3 s per bucket
  const StepResult r = simulate_step(m, c, cost);
  // Bucket 0 ready at 2, runs 2..5; bucket 1 ready at 3, starts at 5, ends 8; step = 8 + 0.5.
  REQUIRE(r.buckets.size() == 2);
  CHECK(r.buckets[0].start_s == Approx(2));
  CHECK(r.buckets[1].start_s == Approx(5));
  CHECK(r.step_s == Approx(8.5));
  CHECK(r.compute_s == Approx(3));
  CHECK(r.exposed_comm_s == Approx(5));
}

TEST_CASE("properties: the step never ends before compute or before unhidden communication", "[timeline]") {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(0, 1);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + static_cast<int>(u(rng) * 40);
    std::vector<LayerSpec> layers;
    std::vector<double> back;
    for (int i = 0; i < n; ++i) {
      layers.push_back({"l" + std::to_string(i), {1 + static_cast<std::int64_t>(u(rng) * 3e6)}, 1});
      back.push_back(u(rng) * 1e-3);
    }
    StepModel m = ddp_step_model(layers, back, u(rng) * 1e-3);
    std::vector<LayerComm> c;
    for (const auto& l : layers) c.push_back(layer_comm(l, parse_method(u(rng) < 0.5 ? "none" : "qsgd:bits=4"), 8, DeviceModel{}));
    const AlphaBeta cost(u(rng) * 1e-4, 1e9 + u(rng) * 1e11);
    const StepResult r = simulate_step(m, c, cost);
    const StepSimulator sim(m, c, cost);
    double total_comm = 0;
    for (std::size_t b = 0; b < m.buckets.size(); ++b) total_comm += sim.bucket_comm_s(b);
    CAPTURE(trial, n, m.buckets.size());
    CHECK(r.step_s >= r.compute_s + m.optimizer_s - 1e-12);
    // The last bucket cannot start before backward has ended for its layers: at least the last
    // bucket's comm is never hidden, and all comm fits after the first bucket's ready time.
    CHECK(r.step_s >= r.buckets.front().ready_s + total_comm + m.optimizer_s - 1e-12);
    CHECK(r.step_s >= r.compute_s + sim.bucket_comm_s(m.buckets.size() - 1) + m.optimizer_s - 1e-9);
    CHECK(sim.step_s(back) == Approx(r.step_s).epsilon(1e-12));
    for (std::size_t b = 1; b < r.buckets.size(); ++b) CHECK(r.buckets[b].start_s >= r.buckets[b - 1].end_s - 1e-15);
  }
}

TEST_CASE("DDP bucketing: reverse order, 1 MiB first bucket, 25 MiB cap", "[timeline]") {
  const double MiB = 1048576;
  // Sizes in parameter order; reversed: 0.5, 0.75 (first bucket closes at ≥ 1 MiB), 10, 20 (closes), 5.
  const auto b = ddp_buckets({5 * MiB, 20 * MiB, 10 * MiB, 0.75 * MiB, 0.5 * MiB});
  REQUIRE(b.size() == 3);
  CHECK(b[0] == std::vector<int>{4, 3});
  CHECK(b[1] == std::vector<int>{2, 1});
  CHECK(b[2] == std::vector<int>{0});
}

TEST_CASE("wire bytes follow the method table", "[timeline]") {
  const LayerSpec l{"w", {1024, 1024}, 1};
  const DeviceModel d;
  CHECK(layer_comm(l, parse_method("none"), 8, d).allreduce_bytes[0] == 4.0 * 1048576);
  const LayerComm p = layer_comm(l, parse_method("powersgd:rank=4"), 8, d);
  CHECK(p.allreduce_bytes[0] == 4.0 * 4 * 1024);
  CHECK(p.allreduce_bytes[1] == 4.0 * 4 * 1024);
  // topk density 0.01: k = ceil(10485.76) = 10486; pairs 8k = 83888 < bitmap 131072 + 4k.
  CHECK(layer_comm(l, parse_method("topk:density=0.01"), 8, d).allgather_bytes == 8.0 * 10486);
  // qsgd 4 bits: s = 7, ceil(log2 15) = 4 bits; 4N/8 + 4·ceil(N/512).
  CHECK(layer_comm(l, parse_method("qsgd"), 8, d).allgather_bytes == 1048576 / 2 + 4.0 * 2048);
  CHECK_THROWS_WITH(parse_method("powersgd:rnak=4"), Catch::Contains("rnak"));
  CHECK_THROWS_WITH(parse_method("zip"), Catch::Contains("zip"));
}

TEST_CASE("bad timeline input is rejected", "[timeline]") {
  const AlphaBeta cost(0, 1);
  StepModel m{0, {1.0, -1.0}, {0, 1}, {{0, 1}}, 0};
  CHECK_THROWS_AS(simulate_step(m, std::vector<LayerComm>(2), cost), lgreco::InputError);
  m.backward_s = {1.0, 1.0};
  m.buckets = {{0}};
  CHECK_THROWS_WITH(simulate_step(m, std::vector<LayerComm>(2), cost), Catch::Contains("no bucket"));
}
