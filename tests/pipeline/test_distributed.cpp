// Scale-out (pipeline/distributed.hpp) without MPI: ranks are threads of this process joined by an
// in-process communicator (thread_comm.hpp), so the protocol, the layer split, bit-identity with
// one process and the failure rules are tested in every build. tests/python/test_e2e_mpi.py runs
// the same under mpirun.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>
#include <numeric>
#include <random>

#include "core/cancel.hpp"
#include "core/error.hpp"
#include "kernels/wire.hpp"
#include "pipeline/distributed.hpp"
#include "pipeline/distributed_wire.hpp"
#include "pipeline/loop.hpp"
#include "pipeline/schedule_replay.hpp"
#include "planner/tables.hpp"
#include "sim/replay_source.hpp"
#include "thread_comm.hpp"

using namespace lgreco;

namespace {

// Seven layers of different sizes (three matrices, biases, a norm): low rank plus noise per step.
sim::MemorySource make_source(std::size_t steps, std::uint64_t seed) {
  const std::vector<std::vector<std::int64_t>> shapes = {{64, 48}, {64}, {40, 64}, {96, 32}, {32}, {24, 24}, {40}};
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd;
  std::vector<sim::SourceLayer> layers;
  std::vector<std::vector<std::vector<float>>> grads;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    sim::SourceLayer l;
    l.name = "layer" + std::to_string(i) + (shapes[i].size() > 1 ? ".weight" : ".bias");
    l.shape = shapes[i];
    l.numel = kernels::wire_numel(l.shape);
    l.kind = shapes[i].size() > 1 ? "weight" : "bias";
    l.bucket = static_cast<int>(shapes.size() - 1 - i) / 3;
    l.backward_order = static_cast<int>(shapes.size() - 1 - i);
    layers.push_back(l);
    std::vector<float> u(l.numel);
    for (auto& x : u) x = nd(rng);
    std::vector<std::vector<float>> rows;
    for (std::size_t s = 0; s < steps; ++s) {
      std::vector<float> g(l.numel);
      for (std::size_t j = 0; j < g.size(); ++j) g[j] = u[j] * (1.0f + 0.1f * static_cast<float>(s)) + 0.3f * nd(rng);
      rows.push_back(std::move(g));
    }
    grads.push_back(std::move(rows));
  }
  std::vector<std::int64_t> ids(steps);
  std::iota(ids.begin(), ids.end(), 100);
  return sim::MemorySource("toy7", 4, ids, std::move(layers), std::move(grads));
}

// A source that claims to be a file (the distributed engine needs one) and can fail or cancel on
// one (layer, row): stands in for the trace every rank opens.
class FileLikeSource : public sim::GradientSource {
 public:
  explicit FileLikeSource(const sim::GradientSource& base) : base_(base) {}
  std::string model() const override { return base_.model(); }
  int world_size() const override { return base_.world_size(); }
  const std::vector<std::int64_t>& steps() const override { return base_.steps(); }
  const std::vector<sim::SourceLayer>& layers() const override { return base_.layers(); }
  std::filesystem::path path() const override { return "/toy/trace.h5"; }
  std::string origin() const override { return "trace /toy/trace.h5"; }
  void read(std::size_t layer, std::size_t row, std::span<float> out) const override {
    base_.read(layer, row, out);
    if (layer == bad_layer && row == bad_row) {
      if (cancel) request_cancel();
      else out[3] = std::nanf("");
    }
  }
  std::size_t bad_layer = SIZE_MAX, bad_row = SIZE_MAX;
  bool cancel = false;

 private:
  const sim::GradientSource& base_;
};

pipeline::LoopOptions options(sim::Family family) {
  pipeline::LoopOptions o;
  o.family = family;
  o.defaults = sim::parse_family_defaults(family, family == sim::Family::kPowerSgd ? kernels::ParamList{{"rank", "2"}}
                                                                                     : kernels::ParamList{});
  o.ranges.min_numel = 16;
  o.windows.warmup_steps = 0;
  o.windows.period_steps = 4;
  o.windows.acc_steps = 2;
  o.threads = 2;
  return o;
}

// What each rank saw: its return value or its exception (type name and message).
struct Outcome {
  int code = -1;
  std::string error, type;
};

template <class Body>
std::vector<Outcome> on_ranks(int ranks, const FileLikeSource& file, Body body) {
  std::vector<Outcome> out(static_cast<std::size_t>(ranks));
  testing::run_ranks(ranks, [&](pipeline::Communicator& comm) {
    Outcome& o = out[static_cast<std::size_t>(comm.rank())];
    try {
      o.code = pipeline::run_on_ranks(comm, [&](const pipeline::ReplayEngine& e) { return body(e); },
                                      [&](const std::filesystem::path& p) -> std::unique_ptr<sim::GradientSource> {
                                        REQUIRE(p == "/toy/trace.h5");
                                        return std::make_unique<FileLikeSource>(file);
                                      });
    } catch (const Cancelled& e) {
      o = {-1, e.what(), "Cancelled"};
    } catch (const InputError& e) {
      o = {-1, e.what(), "InputError"};
    } catch (const OutputExists& e) {
      o = {-1, e.what(), "OutputExists"};
    } catch (const std::exception& e) {
      o = {-1, e.what(), "other"};
    }
  });
  return out;
}

}  // namespace

TEST_CASE("layer split: every layer on one rank, longest first to the least loaded, within 4/3 of the best",
          "[pipeline][distributed]") {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t n = 1 + rng() % 9;
    const int ranks = 1 + static_cast<int>(rng() % 4);
    std::vector<double> cost(n);
    for (auto& c : cost) c = static_cast<double>(1 + rng() % 50);
    CAPTURE(trial, n, ranks, cost);
    const auto s = pipeline::split_layers(cost, ranks);
    REQUIRE(s.layers.size() == static_cast<std::size_t>(ranks));
    std::vector<int> seen(n, 0);
    for (int r = 0; r < ranks; ++r) {
      double sum = 0;
      for (std::size_t l : s.layers[static_cast<std::size_t>(r)]) {
        ++seen[l];
        CHECK(s.rank_of[l] == r);
        sum += cost[l];
      }
      CHECK(sum == s.cost[static_cast<std::size_t>(r)]);
      CHECK(std::is_sorted(s.layers[static_cast<std::size_t>(r)].begin(), s.layers[static_cast<std::size_t>(r)].end()));
    }
    CHECK(std::all_of(seen.begin(), seen.end(), [](int k) { return k == 1; }));
    // Brute force the best maximum over every assignment (ranks^n ≤ 4^9).
    double best = 1e300;
    std::vector<int> a(n, 0);
    for (;;) {
      std::vector<double> load(static_cast<std::size_t>(ranks), 0.0);
      for (std::size_t l = 0; l < n; ++l) load[static_cast<std::size_t>(a[l])] += cost[l];
      best = std::min(best, *std::max_element(load.begin(), load.end()));
      std::size_t i = 0;
      while (i < n && ++a[i] == ranks) a[i++] = 0;
      if (i == n) break;
    }
    const double got = *std::max_element(s.cost.begin(), s.cost.end());
    CHECK(got <= best * 4.0 / 3.0 + 1e-9);
    const double mean = std::accumulate(cost.begin(), cost.end(), 0.0) / ranks;
    CHECK(s.max_over_mean() == Approx(got / mean));
    CHECK(s.max_over_mean() >= *std::max_element(cost.begin(), cost.end()) / mean - 1e-12);
  }
  // Deterministic ties: equal costs go round the ranks in index order.
  const auto s = pipeline::split_layers({1, 1, 1, 1, 1}, 2);
  CHECK(s.rank_of == std::vector<int>{0, 1, 0, 1, 0});
  // More ranks than layers: the extra ranks have none.
  CHECK(pipeline::split_layers({5}, 3).layers[2].empty());
  CHECK_THROWS_AS(pipeline::split_layers({1}, 0), ConfigError);
}

TEST_CASE("layer cost: task bytes times the passes over the layer's data", "[pipeline][distributed]") {
  const auto src = make_source(6, 1);
  std::vector<sim::CandidateSet> sets;
  for (const auto& l : src.layers()) sets.push_back(sim::make_candidates(sim::Family::kTopK, {}, l.shape, {}));
  sim::ReplayOptions opt;
  opt.windows_total = 2;
  for (auto mode : {sim::ErrorMode::kPower, sim::ErrorMode::kTrajectory}) {
    opt.mode = mode;
    const auto cost = pipeline::layer_costs(src.layers(), 6, sets, opt);
    for (std::size_t l = 0; l < cost.size(); ++l) {
      const double c = static_cast<double>(sets[l].candidates.size());
      // 6 rows with the setting in force; each candidate once per window (2) or over every row (6).
      const double passes = 6 + c * (mode == sim::ErrorMode::kTrajectory ? 6 : 2);
      CHECK(cost[l] == sim::layer_task_bytes(src.layers()[l].numel) * passes);
    }
  }
  CHECK(pipeline::layer_costs(src.layers(), 6, {}, opt)[0] == sim::layer_task_bytes(src.layers()[0].numel) * 6);
}

TEST_CASE("wire: measurements and failures arrive as they left", "[pipeline][distributed]") {
  sim::LayerWindow lw;
  lw.candidates.push_back({kernels::parse_method_text("topk:density=0.013"), 0.1 + 1e-17, 1234.5, Collective::kAllgather});
  lw.default_index = 3;
  lw.applied = kernels::parse_method_text("powersgd:rank=3");
  lw.applied_bytes_per_step = 1.0 / 3.0;
  lw.applied_error_per_step = std::nextafter(1.0, 2.0);
  lw.step_bytes = {1, 2, 3};
  lw.step_error = {0.5, std::numeric_limits<double>::denorm_min()};
  lw.applied_wire.bytes = 99;
  pipeline::wire::Writer w;
  pipeline::wire::put(w, lw);
  pipeline::wire::Reader r(w.bytes());
  const auto back = pipeline::wire::get_layer_window(r);
  r.done();
  CHECK(back.candidates.size() == 1);
  CHECK(back.candidates[0].spec == lw.candidates[0].spec);
  CHECK(back.candidates[0].error == lw.candidates[0].error);
  CHECK(back.applied == lw.applied);
  CHECK(back.applied_error_per_step == lw.applied_error_per_step);
  CHECK(back.step_bytes == lw.step_bytes);
  CHECK(back.step_error == lw.step_error);
  CHECK(back.applied_wire.bytes == 99);
  // A message cut short is an error, not garbage.
  std::string cut = w.bytes().substr(0, w.bytes().size() - 3);
  pipeline::wire::Reader rc(cut);
  CHECK_THROWS_WITH(pipeline::wire::get_layer_window(rc), Catch::Contains("malformed"));
  // Failures keep their type and message.
  const auto f = pipeline::wire::capture(std::make_exception_ptr(FieldError("threads", "0; expected >= 1")));
  try {
    pipeline::wire::rethrow(f);
    FAIL("no throw");
  } catch (const FieldError& e) {
    CHECK(e.field() == "threads");
    CHECK(e.detail() == "0; expected >= 1");
  }
  CHECK_THROWS_AS(pipeline::wire::rethrow(pipeline::wire::capture(std::make_exception_ptr(Cancelled()))), Cancelled);
  CHECK_THROWS_AS(pipeline::wire::rethrow(pipeline::wire::capture(std::make_exception_ptr(TraceError("t")))), TraceError);
}

TEST_CASE("distributed closed loop: tables, plans and settings bit-identical to one process", "[pipeline][distributed]") {
  const auto mem = make_source(12, 3);
  const FileLikeSource file(mem);
  for (auto family : {sim::Family::kPowerSgd, sim::Family::kTopK, sim::Family::kMixed}) {
    for (auto mode : {sim::ErrorMode::kPower, sim::ErrorMode::kTrajectory}) {
      for (int ranks : {1, 2, 3, 8}) {
        CAPTURE(sim::to_string(family), sim::to_string(mode), ranks);
        pipeline::LoopOptions o = options(family);
        o.error_mode = mode;
        const auto one = pipeline::run_closed_loop(file, o, nullptr);
        pipeline::LoopResult many;
        Json layout;
        const auto outcome = on_ranks(ranks, file, [&](const pipeline::ReplayEngine& e) {
          pipeline::LoopOptions oo = o;
          oo.engine = &e;
          many = pipeline::run_closed_loop(file, oo, nullptr);
          return 7;
        });
        for (const auto& x : outcome) CHECK(x.code == 7);
        CHECK(planner::tables_to_json(many.tables) == planner::tables_to_json(one.tables));
        CHECK(many.in_force == one.in_force);
        CHECK(many.delivered_error == one.delivered_error);
        REQUIRE(many.plans.size() == one.plans.size());
        for (std::size_t k = 0; k < one.plans.size(); ++k) CHECK(many.plans[k].choice == one.plans[k].choice);
        CHECK(many.grad_bytes == one.grad_bytes);
        REQUIRE(many.replay_layout.is_object());
        CHECK(many.replay_layout["ranks"] == ranks);
        std::size_t placed = 0;
        for (const auto& r : many.replay_layout["per_rank"]) placed += r["layers"].size();
        CHECK(placed == mem.layers().size());
        CHECK(one.replay_layout.is_null());
      }
    }
  }
}

TEST_CASE("distributed schedule replay: every step's bytes and error as in one process", "[pipeline][distributed]") {
  const auto mem = make_source(12, 4);
  const FileLikeSource file(mem);
  const pipeline::LoopOptions o = options(sim::Family::kMixed);
  const auto r = pipeline::run_closed_loop(file, o, nullptr);
  const planner::Schedule s = pipeline::loop_schedule(o, r, Json::object(), 4);
  for (const std::string only : {"scheduled", "all"}) {
    CAPTURE(only);
    pipeline::ScheduleReplayOptions ro;
    ro.only = only;
    const auto one = pipeline::replay_schedule(file, s, "toy schedule", ro);
    pipeline::ScheduleReplay many;
    on_ranks(3, file, [&](const pipeline::ReplayEngine& e) {
      pipeline::ScheduleReplayOptions rr = ro;
      rr.engine = &e;
      many = pipeline::replay_schedule(file, s, "toy schedule", rr);
      return 0;
    });
    REQUIRE(many.runs.size() == one.runs.size());
    for (std::size_t i = 0; i < one.runs.size(); ++i) {
      CHECK(many.runs[i].layer_bytes_per_step == one.runs[i].layer_bytes_per_step);
      CHECK(many.runs[i].layer_error_per_step == one.runs[i].layer_error_per_step);
      REQUIRE(many.runs[i].steps.size() == one.runs[i].steps.size());
      for (std::size_t k = 0; k < one.runs[i].steps.size(); ++k) {
        CHECK(many.runs[i].steps[k].bytes == one.runs[i].steps[k].bytes);
        CHECK(many.runs[i].steps[k].error == one.runs[i].steps[k].error);
      }
    }
  }
}

TEST_CASE("distributed failures: every rank throws the same exception, whichever rank hit it", "[pipeline][distributed]") {
  const auto mem = make_source(12, 5);
  FileLikeSource file(mem);
  const pipeline::LoopOptions o = options(sim::Family::kPowerSgd);
  // The split of 3 ranks, to put the bad layer on each rank in turn.
  std::vector<sim::CandidateSet> sets;
  for (const auto& l : mem.layers()) sets.push_back(sim::make_candidates(o.family, o.defaults, l.shape, o.ranges));
  sim::ReplayOptions ro;
  ro.windows_total = 3;
  const auto split = pipeline::split_layers(pipeline::layer_costs(file.layers(), file.steps().size(), sets, ro), 3);

  SECTION("a NaN in one layer names the file, the layer and the step on every rank") {
    for (int owner = 0; owner < 3; ++owner) {
      const std::size_t bad = split.layers[static_cast<std::size_t>(owner)].front();
      CAPTURE(owner, bad);
      file.bad_layer = bad;
      file.bad_row = 5;
      std::string single;
      try {
        pipeline::run_closed_loop(file, o, nullptr);
      } catch (const InputError& e) {
        single = e.what();
      }
      CHECK_THAT(single, Catch::StartsWith("trace /toy/trace.h5: layer '" + mem.layers()[bad].name + "'"));
      CHECK_THAT(single, Catch::Contains("step 105"));
      bool body_finished = false;
      const auto out = on_ranks(3, file, [&](const pipeline::ReplayEngine& e) {
        pipeline::LoopOptions oo = o;
        oo.engine = &e;
        pipeline::run_closed_loop(file, oo, nullptr);
        body_finished = true;
        return 0;
      });
      CHECK_FALSE(body_finished);
      for (const auto& x : out) {
        CHECK(x.type == "InputError");
        CHECK(x.error == single);
      }
    }
  }
  SECTION("cancellation on one rank stops every rank") {
    file.bad_layer = split.layers[2].front();
    file.bad_row = 2;
    file.cancel = true;
    const auto out = on_ranks(3, file, [&](const pipeline::ReplayEngine& e) {
      pipeline::LoopOptions oo = o;
      oo.engine = &e;
      pipeline::run_closed_loop(file, oo, nullptr);
      return 0;
    });
    reset_cancel();
    for (const auto& x : out) CHECK(x.type == "Cancelled");
  }
  SECTION("a failure of rank 0's own work after the replay reaches every rank") {
    const auto out = on_ranks(3, file, [&](const pipeline::ReplayEngine& e) -> int {
      pipeline::LoopOptions oo = o;
      oo.engine = &e;
      pipeline::run_closed_loop(file, oo, nullptr);
      throw OutputExists("s.json exists");
    });
    for (const auto& x : out) {
      CHECK(x.type == "OutputExists");
      CHECK(x.error == "s.json exists");
    }
  }
}
