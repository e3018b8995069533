// Windows and bursts of a replay (sim/replay_windows.hpp): rules checked on hand cases and as
// properties on random step lists.
#include <catch2/catch.hpp>

#include <random>

#include "core/error.hpp"
#include "sim/replay_pool.hpp"
#include "sim/replay_windows.hpp"

using namespace lgreco;
using namespace lgreco::sim;

namespace {
std::vector<std::int64_t> range(std::int64_t a, std::int64_t b) {
  std::vector<std::int64_t> v;
  for (auto i = a; i < b; ++i) v.push_back(i);
  return v;
}
std::vector<std::int64_t> cat(std::vector<std::int64_t> a, const std::vector<std::int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
}  // namespace

TEST_CASE("bursts are maximal runs of consecutive step ids") {
  const auto b = find_bursts({0, 1, 2, 5, 6, 10});
  REQUIRE(b.size() == 3);
  CHECK(b[0].first_row == 0);
  CHECK(b[0].count == 3);
  CHECK(b[1].first_row == 3);
  CHECK(b[1].first_step == 5);
  CHECK(b[2].count == 1);
  CHECK_THROWS_AS(find_bursts({0, 2, 2}), InputError);
  CHECK_THROWS_AS(find_bursts({3, 1}), InputError);
  CHECK_THROWS_AS(find_bursts({-1, 0}), InputError);
}

TEST_CASE("a short trace inside the warm-up: windows shrink to its bursts") {
  WindowConfig cfg;  // warm-up 1000, period 1000, acc 10
  const auto plan = plan_windows(cat(range(0, 12), range(500, 512)), cfg);
  CHECK(plan.warmup_shrunk);
  CHECK(plan.windows_shrunk);
  CHECK_FALSE(plan.acc_shrunk);
  REQUIRE(plan.windows.size() == 2);
  CHECK(plan.windows[0].count == 12);
  CHECK(plan.windows[0].starts_burst);
  CHECK(plan.windows[1].first_row == 12);
  CHECK(plan.windows[1].start_step == 500);
  CHECK(plan.windows[1].end_step == 512);
  CHECK(plan.windows[1].acc_steps == 10);
  CHECK(plan.notes.size() == 2);
}

TEST_CASE("warm-up rows are skipped when the trace goes past the warm-up") {
  WindowConfig cfg;
  cfg.warmup_steps = 5;
  cfg.period_steps = 4;
  cfg.acc_steps = 3;
  // Burst 0..11 straddles the warm-up end: rows 5..11 remain, 7 rows = one period of 4 plus a
  // remainder of 3, merged into one window of 7; burst 20..29: 10 rows = windows of 4 and 6.
  const auto plan = plan_windows(cat(range(0, 12), range(20, 30)), cfg);
  CHECK_FALSE(plan.warmup_shrunk);
  REQUIRE(plan.windows.size() == 3);
  CHECK(plan.windows[0].first_row == 5);
  CHECK(plan.windows[0].count == 7);
  CHECK(plan.windows[0].start_step == 5);
  CHECK(plan.windows[0].starts_burst);
  CHECK(plan.windows[1].count == 4);
  CHECK(plan.windows[1].starts_burst);
  CHECK(plan.windows[2].count == 6);
  CHECK_FALSE(plan.windows[2].starts_burst);
  CHECK(plan.windows[2].start_step == 24);
  CHECK_FALSE(plan.windows_shrunk);
}

TEST_CASE("bad window configurations are errors") {
  WindowConfig cfg;
  cfg.period_steps = 0;
  CHECK_THROWS_AS(plan_windows({0, 1}, cfg), ConfigError);
  cfg = {};
  cfg.acc_steps = 0;
  CHECK_THROWS_AS(plan_windows({0, 1}, cfg), ConfigError);
  CHECK_THROWS_AS(plan_windows({}, WindowConfig{}), InputError);
}

TEST_CASE("windows cover every post-warm-up row once, in order (random traces)") {
  std::mt19937_64 gen(20261202);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<std::int64_t> steps;
    std::int64_t s = std::uniform_int_distribution<std::int64_t>(0, 50)(gen);
    const int bursts = std::uniform_int_distribution<int>(1, 5)(gen);
    for (int b = 0; b < bursts; ++b) {
      const int len = std::uniform_int_distribution<int>(1, 40)(gen);
      for (int i = 0; i < len; ++i) steps.push_back(s++);
      s += std::uniform_int_distribution<std::int64_t>(1, 30)(gen);
    }
    WindowConfig cfg;
    cfg.warmup_steps = std::uniform_int_distribution<std::int64_t>(0, 80)(gen);
    cfg.period_steps = std::uniform_int_distribution<std::int64_t>(1, 25)(gen);
    cfg.acc_steps = std::uniform_int_distribution<int>(1, 12)(gen);
    CAPTURE(trial, cfg.warmup_steps, cfg.period_steps, cfg.acc_steps, steps.size());
    const auto plan = plan_windows(steps, cfg);
    std::size_t expected_row = 0;
    CHECK(plan.warmup_shrunk == (steps.back() < cfg.warmup_steps));
    if (!plan.warmup_shrunk) {
      while (steps[expected_row] < cfg.warmup_steps) ++expected_row;
    }
    for (std::size_t w = 0; w < plan.windows.size(); ++w) {
      const Window& win = plan.windows[w];
      REQUIRE(win.first_row == expected_row);
      REQUIRE(win.count >= 1);
      CHECK(win.start_step == steps[win.first_row]);
      CHECK(win.end_step == steps[win.first_row + win.count - 1] + 1);  // consecutive inside
      CHECK(win.acc_steps == std::min<int>(cfg.acc_steps, static_cast<int>(win.count)));
      const bool new_burst = w == 0 || steps[win.first_row] != steps[win.first_row - 1] + 1 ||
                             (!plan.warmup_shrunk && steps[win.first_row] == cfg.warmup_steps);
      CHECK(win.starts_burst == new_burst);
      if (win.count < static_cast<std::size_t>(cfg.period_steps)) CHECK(plan.windows_shrunk);
      CHECK(win.count < 2 * static_cast<std::size_t>(cfg.period_steps));
      expected_row += win.count;
    }
    CHECK(expected_row == steps.size());
  }
}

TEST_CASE("parallel_for runs every task once and rethrows the first failure") {
  for (unsigned threads : {1u, 2u, 4u}) {
    std::vector<int> hits(100, 0);
    parallel_for(hits.size(), threads, [&](std::size_t i, unsigned w) {
      REQUIRE(w < threads);
      hits[i] += 1;
    });
    for (int h : hits) CHECK(h == 1);
    CHECK_THROWS_AS(parallel_for(10, threads,
                                 [&](std::size_t i, unsigned) {
                                   if (i == 3) throw InputError("task 3");
                                 }),
                    InputError);
  }
}
