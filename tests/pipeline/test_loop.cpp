// The closed loop as a library (pipeline/loop.hpp), on gradients held in memory: the timeline
// "plan from window k, apply in window k+1", determinism, schedules whose predictions are the
// registry's bytes, and the step-time path shared by plan, what-if and simulate.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "kernels/wire.hpp"
#include "network_models/cost.hpp"
#include "pipeline/loop.hpp"
#include "pipeline/predict.hpp"
#include "pipeline/schedule_replay.hpp"
#include "pipeline/step_inputs.hpp"
#include "pipeline/whatif.hpp"
#include "sim/replay_source.hpp"

using namespace lgreco;

namespace {

// Gradients of a 3-layer model: low-rank matrices of different spectral decay plus a bias, so that
// the layers differ in what a rank buys (something for the planner to trade).
sim::MemorySource make_source(std::vector<std::int64_t> steps, std::uint64_t seed, bool compute_times) {
  struct L {
    const char* name;
    std::vector<std::int64_t> shape;
    double decay;
  };
  const std::vector<L> spec = {{"fc1.weight", {64, 48}, 0.3}, {"fc1.bias", {64}, 0}, {"fc2.weight", {40, 64}, 0.9}};
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd;
  std::vector<sim::SourceLayer> layers;
  std::vector<std::vector<std::vector<float>>> grads;
  for (std::size_t i = 0; i < spec.size(); ++i) {
    sim::SourceLayer l;
    l.name = spec[i].name;
    l.shape = spec[i].shape;
    l.numel = kernels::wire_numel(l.shape);
    l.kind = l.shape.size() > 1 ? "weight" : "bias";
    l.bucket = static_cast<int>(spec.size() - 1 - i) / 2;
    l.backward_order = static_cast<int>(spec.size() - 1 - i);
    if (compute_times) l.compute_time_s = 1e-4 * static_cast<double>(l.numel) / 1000.0;
    layers.push_back(l);
    std::vector<std::vector<float>> rows;
    const std::int64_t n = l.shape[0], m = static_cast<std::int64_t>(l.numel) / n;
    // Fixed factors per layer, fresh noise per step.
    std::vector<float> u(static_cast<std::size_t>(n * 6)), v(static_cast<std::size_t>(m * 6));
    for (auto& x : u) x = nd(rng);
    for (auto& x : v) x = nd(rng);
    for (std::size_t s = 0; s < steps.size(); ++s) {
      std::vector<float> g(l.numel);
      for (std::int64_t a = 0; a < n; ++a)
        for (std::int64_t b = 0; b < m; ++b) {
          double x = 0.05 * nd(rng);
          for (int k = 0; k < 6; ++k) x += std::pow(spec[i].decay, k) * u[static_cast<std::size_t>(a * 6 + k)] * v[static_cast<std::size_t>(b * 6 + k)];
          g[static_cast<std::size_t>(a * m + b)] = static_cast<float>(x);
        }
      rows.push_back(std::move(g));
    }
    grads.push_back(std::move(rows));
  }
  return sim::MemorySource("toy", 4, std::move(steps), std::move(layers), std::move(grads));
}

std::vector<std::int64_t> iota(std::int64_t from, std::int64_t count) {
  std::vector<std::int64_t> s;
  for (std::int64_t i = 0; i < count; ++i) s.push_back(from + i);
  return s;
}

pipeline::LoopOptions options() {
  pipeline::LoopOptions o;
  o.defaults = sim::parse_family_defaults(sim::Family::kPowerSgd, {{"rank", "4"}});
  o.windows.warmup_steps = 0;
  o.windows.period_steps = 6;
  o.windows.acc_steps = 3;
  o.threads = 2;
  return o;
}

}  // namespace

TEST_CASE("closed loop: plan k is made from window k and runs in window k+1", "[pipeline][loop]") {
  const auto src = make_source(iota(0, 18), 1, true);
  const pipeline::LoopOptions o = options();
  const pipeline::LoopResult r = pipeline::run_closed_loop(src, o, nullptr);
  REQUIRE(r.windows.windows.size() == 3);
  REQUIRE(r.tables.windows.size() == 3);
  REQUIRE(r.plans.size() == 3);
  REQUIRE(r.in_force.size() == 3);
  const auto& layers = src.layers();
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const auto& t0 = r.tables.windows[0].layers[l];
    // Window 0 runs the uniform default; window k+1 runs plan k's choice.
    CHECK(r.in_force[0][l] == t0.candidates[static_cast<std::size_t>(t0.default_index)].spec);
    for (std::size_t k = 0; k + 1 < r.plans.size(); ++k) {
      const int c = r.plans[k].choice[l];
      REQUIRE(c >= 0);
      CHECK(r.in_force[k + 1][l] == r.tables.windows[k].layers[l].candidates[static_cast<std::size_t>(c)].spec);
    }
  }
  // Every candidate's bytes are the registry's, and the plan stays within its error budget.
  for (const auto& w : r.tables.windows)
    for (const auto& l : w.layers)
      for (const auto& c : l.candidates) CHECK(c.bytes == static_cast<double>(kernels::wire_size(c.spec, l.shape).bytes));
  for (const auto& p : r.plans) {
    CHECK(p.status != planner::PlanStatus::kInfeasible);
    CHECK(p.total_error <= *p.error_budget * (1 + 1e-12));
  }
  // The bias is never planned; the matrices are.
  CHECK(r.tables.windows[0].layers[1].candidates.size() == 1);
  CHECK(r.tables.windows[0].layers[0].candidates.size() > 1);
  // Recorded compute times are the compute side; forward = half the backward total.
  CHECK(r.compute.source == pipeline::ComputeSource::kRecorded);
  double backward = 0;
  for (const auto& l : layers) backward += *l.compute_time_s;
  CHECK(r.plan.forward_s == Approx(0.5 * backward));
}

TEST_CASE("closed loop: deterministic for a seed, and independent of the thread count", "[pipeline][loop]") {
  const auto src = make_source(iota(0, 12), 2, false);
  pipeline::LoopOptions o = options();
  const auto a = pipeline::run_closed_loop(src, o, nullptr);
  o.threads = 1;
  const auto b = pipeline::run_closed_loop(src, o, nullptr);
  REQUIRE(a.tables.windows.size() == b.tables.windows.size());
  CHECK(planner::tables_to_json(a.tables) == planner::tables_to_json(b.tables));
  CHECK(a.compute.source == pipeline::ComputeSource::kNone);
  CHECK_FALSE(a.compute.note.empty());
}

TEST_CASE("closed loop: the schedule's phases follow the windows and predict the registry's bytes", "[pipeline][loop]") {
  const auto src = make_source(iota(100, 12), 3, true);
  const pipeline::LoopOptions o = options();
  const auto r = pipeline::run_closed_loop(src, o, nullptr);
  const planner::Schedule s = pipeline::loop_schedule(o, r, Json::object(), 4);
  // warm-up [0, 100), uniform [100, 106), plan-0 [106, 112), plan-1 [112, ∞).
  REQUIRE(s.phases.size() == 4);
  CHECK(s.phases[0].label == "warmup");
  CHECK(s.phases[1].label == "uniform");
  CHECK(s.phases[1].start_step == 100);
  CHECK(s.phases[2].label == "plan-0");
  CHECK(s.phases[2].start_step == 106);
  CHECK_FALSE(s.phases[3].end_step.has_value());
  for (const auto& ph : s.phases) {
    double bytes = 0;
    for (std::size_t l = 0; l < ph.layers.size(); ++l) {
      const auto& shape = src.layers()[l].shape;
      REQUIRE(ph.layers[l].first == src.layers()[l].name);
      bytes += static_cast<double>(kernels::wire_size(ph.layers[l].second, shape).bytes);
    }
    CAPTURE(ph.label);
    CHECK(ph.predicted["bytes_per_step"].get<double>() == bytes);
  }
  // Replayed as scheduled, every step sends exactly the phase's predicted bytes.
  pipeline::ScheduleReplayOptions ro;
  const auto rep = pipeline::replay_schedule(src, s, "loop schedule", ro);
  REQUIRE(rep.runs.size() == 1);
  REQUIRE(rep.runs[0].steps.size() == 12);
  for (const auto& st : rep.runs[0].steps) {
    CAPTURE(st.step, st.phase);
    CHECK(st.bytes == st.predicted_bytes);
    const auto& ph = *std::find_if(s.phases.begin(), s.phases.end(), [&](const planner::Phase& p) { return p.label == st.phase; });
    CHECK(static_cast<double>(st.bytes) == ph.predicted["bytes_per_step"].get<double>());
  }
}

TEST_CASE("one step-time path: plan, what-if and simulate agree on the same inputs", "[pipeline][predict]") {
  const auto src = make_source(iota(0, 12), 4, true);
  const net::RingCost ring(5e-6, 1.25e9, 8);
  const pipeline::LoopOptions o = options();
  const auto r = pipeline::run_closed_loop(src, o, &ring);
  const planner::Window& w = r.tables.windows.back();
  const planner::WindowPlan& p = r.plans.back();
  REQUIRE(p.step_s.has_value());
  // The plan's own prediction is predict_step of its choice.
  CHECK(*p.step_s == planner::predict_step(w, p.chosen, r.plan, ring).step_s);
  // simulate's path: a window of one candidate per layer, the compute model applied the same way.
  pipeline::StepInputs in;
  in.model = "toy";
  in.window = w;
  for (std::size_t l = 0; l < w.layers.size(); ++l) in.window.layers[l].candidates = {p.chosen[l]};
  planner::Tables t;
  t.windows.push_back(in.window);
  planner::PlanOptions opt = r.plan;
  pipeline::apply_compute(pipeline::compute_model(in.window, in.model, nullptr), t, opt);
  std::vector<planner::Candidate> chosen;
  for (const auto& l : t.windows[0].layers) chosen.push_back(l.candidates[0]);
  CHECK(planner::predict_step(t.windows[0], chosen, opt, ring).step_s == *p.step_s);
  CHECK(planner::predict_step(w, planner::uncompressed(w), r.plan, ring).step_s == *p.uncompressed_step_s);
}

TEST_CASE("what-if points are predict_step on each point's cluster; the time engine re-plans per point", "[pipeline][whatif]") {
  const auto src = make_source(iota(0, 12), 5, true);
  const pipeline::Cluster base = pipeline::make_cluster("2x8xA100-1x25G");
  pipeline::LoopOptions o = options();
  o.plan.kernel_time = pipeline::kernel_time_fn({}, base);
  const auto r = pipeline::run_closed_loop(src, o, base.cost.get());
  pipeline::WhatIfGrid g;
  g.topology = "2x8xA100-1x25G";
  g.nodes = {1, 4};
  g.bandwidths_Bps = {1.25e9, 12.5e9};
  const auto pts = pipeline::whatif(r.tables.windows.back(), r.plans.back(), r.plan, g);
  REQUIRE(pts.size() == 4);
  for (const auto& pt : pts) {
    const pipeline::Cluster c = pipeline::make_cluster(g.topology, pt.nodes, std::nullopt, pt.bandwidth_Bps);
    planner::PlanOptions opt = r.plan;
    opt.kernel_time = pipeline::kernel_time_fn({}, c);
    CAPTURE(pt.nodes, pt.bandwidth_Bps);
    CHECK(pt.ranks == c.ranks());
    CHECK(pt.adaptive_step_s == planner::predict_step(r.tables.windows.back(), r.plans.back().chosen, opt, *c.cost).step_s);
  }
  // More bandwidth never makes the uncompressed step slower; on 4 nodes at 10 Gb/s communication
  // dominates and compression pays (on one node NVLink is fast enough that kernel time can lose).
  CHECK(pts[1].uncompressed_step_s <= pts[0].uncompressed_step_s);
  CHECK(pts[2].uncompressed_step_s > pts[2].uniform_step_s);
  pipeline::LoopOptions ot = o;
  ot.plan.engine = planner::Engine::kTime;
  const auto rt = pipeline::run_closed_loop(src, ot, base.cost.get());
  const auto tp = pipeline::whatif(rt.tables.windows.back(), rt.plans.back(), rt.plan, g);
  for (std::size_t i = 0; i < tp.size(); ++i) CHECK(tp[i].adaptive_step_s <= tp[i].uniform_step_s * (1 + 1e-12));
}

TEST_CASE("what-if overrides keep a plugin transport (EFA) of the base cluster", "[pipeline][cluster]") {
  const pipeline::Cluster c = pipeline::make_cluster("2x8xB200-8x400G-efa", 4, std::nullopt, 400e9 / 8);
  CHECK(c.name == "4x8xB200-8x50G-efa");
  CHECK(c.nodes == 4);
}

TEST_CASE("trajectory mode: the error predicted for the uniform window is the error it delivers", "[pipeline][delivered]") {
  // Window 0 runs the uniform default; its trajectory candidate starts from the same state and runs
  // the same steps, so the two figures are the same computation, and a plan's prediction in window k
  // is measured by the same rule as what it delivers in window k+1.
  const auto src = make_source(iota(0, 18), 6, true);
  pipeline::LoopOptions o = options();
  o.error_mode = sim::ErrorMode::kTrajectory;
  const auto r = pipeline::run_closed_loop(src, o, nullptr);
  const auto d = pipeline::delivered_errors(o, r);
  REQUIRE(d.size() == 3);
  CHECK(d[0].phase == "uniform");
  CHECK(d[0].delivered == Approx(*d[0].uniform_same_window).epsilon(1e-12));
  CHECK(d[0].delivered == Approx(*d[0].predicted).epsilon(1e-12));
  CHECK(d[1].phase == "plan-0");
  CHECK(*d[1].predicted == r.plans[0].total_error);
  // The schedule records them.
  const planner::Schedule s = pipeline::loop_schedule(o, r, Json::object(), 4);
  const auto& p0 = *std::find_if(s.phases.begin(), s.phases.end(), [](const planner::Phase& p) { return p.label == "plan-0"; });
  CHECK(p0.predicted["delivered_error_per_step"].get<double>() == d[1].delivered);
  CHECK(p0.predicted["delivered_in_window"].get<int>() == 1);
  // Power mode measures on the window's mean matrix: no same-window uniform comparison is claimed.
  o.error_mode = sim::ErrorMode::kPower;
  const auto rp = pipeline::run_closed_loop(src, o, nullptr);
  CHECK_FALSE(pipeline::delivered_errors(o, rp)[1].uniform_same_window.has_value());
}
