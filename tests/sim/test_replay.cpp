// The replay engine (sim/replay.hpp) on in-memory sources: every expected value is computed here
// from the stated model (error feedback, the measurement matrix A, top-k by magnitude, the
// Eckart–Young error), never pasted.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <functional>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>

#include "core/error.hpp"
#include "kernels/method.hpp"
#include "kernels/wire.hpp"
#include "sim/replay.hpp"
#include "sim/replay_candidates.hpp"
#include "sim/replay_pool.hpp"

using namespace lgreco;
using namespace lgreco::sim;
using kernels::MethodSpec;

namespace {

using Rows = std::vector<std::vector<float>>;

Rows random_rows(std::size_t rows, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  Rows r(rows, std::vector<float>(n));
  for (auto& row : r)
    for (auto& v : row) v = d(gen);
  return r;
}

SourceLayer layer(const std::string& name, std::vector<std::int64_t> shape) {
  SourceLayer l;
  l.name = name;
  l.shape = shape;
  l.numel = 1;
  for (auto d : shape) l.numel *= static_cast<std::uint64_t>(d);
  return l;
}

std::vector<std::int64_t> iota_steps(std::size_t n, std::int64_t first = 0) {
  std::vector<std::int64_t> s(n);
  for (std::size_t i = 0; i < n; ++i) s[i] = first + static_cast<std::int64_t>(i);
  return s;
}

Window whole(std::size_t first, std::size_t count, int acc, bool starts = true) {
  Window w;
  w.first_row = first;
  w.count = count;
  w.acc_steps = acc;
  w.starts_burst = starts;
  w.start_step = static_cast<std::int64_t>(first);
  w.end_step = static_cast<std::int64_t>(first + count);
  return w;
}

CandidateSet set_of(std::vector<MethodSpec> specs) {
  CandidateSet s;
  s.candidates = std::move(specs);
  s.planned = s.candidates.size() > 1;
  return s;
}

MethodSpec topk(double d) { return kernels::parse_method("topk", {{"density", std::to_string(d)}}); }
MethodSpec psgd(int r) { return kernels::parse_method("powersgd", {{"rank", std::to_string(r)}}); }

/// ‖x − topk_k(x)‖_F: the norm of everything but the k largest magnitudes.
double topk_error(std::vector<float> x, std::uint64_t k) {
  std::sort(x.begin(), x.end(), [](float a, float b) { return std::fabs(a) > std::fabs(b); });
  double s = 0;
  for (std::size_t i = k; i < x.size(); ++i) s += static_cast<double>(x[i]) * x[i];
  return std::sqrt(s);
}

/// n×m matrix U·diag(σ)·Vᵀ with orthonormal U, V (Gram-Schmidt of random vectors, in double).
std::vector<float> with_singular_values(std::int64_t n, std::int64_t m, const std::vector<double>& sigma, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> d;
  auto ortho = [&](std::int64_t rows, std::size_t cols) {
    std::vector<std::vector<double>> c(cols, std::vector<double>(static_cast<std::size_t>(rows)));
    for (std::size_t j = 0; j < cols; ++j) {
      for (auto& v : c[j]) v = d(gen);
      for (std::size_t i = 0; i < j; ++i) {
        double dot = 0;
        for (std::int64_t r = 0; r < rows; ++r) dot += c[i][r] * c[j][r];
        for (std::int64_t r = 0; r < rows; ++r) c[j][r] -= dot * c[i][r];
      }
      double nrm = 0;
      for (auto v : c[j]) nrm += v * v;
      for (auto& v : c[j]) v /= std::sqrt(nrm);
    }
    return c;
  };
  const auto u = ortho(n, sigma.size()), v = ortho(m, sigma.size());
  std::vector<float> a(static_cast<std::size_t>(n * m));
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < m; ++j) {
      double s = 0;
      for (std::size_t k = 0; k < sigma.size(); ++k) s += sigma[k] * u[k][i] * v[k][j];
      a[static_cast<std::size_t>(i * m + j)] = static_cast<float>(s);
    }
  return a;
}

}  // namespace

TEST_CASE("power mode with nothing in force: A is the mean of the last acc gradients") {
  const std::size_t n = 600, rows = 12;
  const int acc = 10;
  const auto g = random_rows(rows, n, 7);
  MemorySource src("m", 1, iota_steps(rows), {layer("w", {20, 30})}, {g});
  std::vector<MethodSpec> cands = {topk(0.01), topk(0.1), topk(0.5), topk(1.0), none_spec()};
  ReplayOptions opt;
  Replay rep(src, {set_of(cands)}, opt);
  const auto wm = rep.run_window(whole(0, rows, acc), {none_spec()}, false);
  // With "none" in force the residual stays zero, so acc_t = g_t.
  std::vector<float> a(n, 0.0f);
  for (std::size_t t = rows - acc; t < rows; ++t)
    for (std::size_t i = 0; i < n; ++i) a[i] += g[t][i];
  for (auto& v : a) v *= 1.0f / acc;
  const auto& lw = wm.layers.at(0);
  REQUIRE(lw.candidates.size() == cands.size());
  for (std::size_t c = 0; c < cands.size(); ++c) {
    CAPTURE(kernels::describe(cands[c]));
    const double expected = cands[c].method == kernels::Method::kNone
                                ? 0.0
                                : topk_error(a, kernels::sparse_k(n, cands[c].topk.density));
    CHECK(lw.candidates[c].error == Approx(expected).epsilon(1e-5).margin(1e-6));
    const std::vector<std::int64_t> shape = {20, 30};
    CHECK(lw.candidates[c].bytes == static_cast<double>(kernels::wire_size(cands[c], shape, n).bytes));
  }
  CHECK(lw.applied_bytes_per_step == 4.0 * n);
  CHECK(lw.applied_error_per_step == 0.0);
  CHECK(rep.grad_bytes() == 4.0 * n * rows);
}

TEST_CASE("exact mode: PowerSGD errors follow the singular values (Eckart–Young)") {
  for (auto [n, m] : {std::pair<std::int64_t, std::int64_t>{48, 40}, {300, 270}}) {
    CAPTURE(n, m);
    std::vector<double> sigma;
    for (int i = 0; i < 12; ++i) sigma.push_back(10.0 * std::pow(0.7, i));
    const auto a = with_singular_values(n, m, sigma, 11);
    // One-step window at a burst start: e = 0, so A = g exactly.
    MemorySource src("m", 1, {0}, {layer("w", {n, m})}, {{a}});
    std::vector<MethodSpec> cands;
    for (int r = 2; r <= 8; ++r) cands.push_back(psgd(r));
    ReplayOptions opt;
    opt.mode = ErrorMode::kExact;
    Replay rep(src, {set_of(cands)}, opt);
    const auto wm = rep.run_window(whole(0, 1, 1), {none_spec()}, false);
    ReplayOptions popt;
    Replay prep(src, {set_of(cands)}, popt);
    const auto pm = prep.run_window(whole(0, 1, 1), {none_spec()}, false);
    for (int r = 2; r <= 8; ++r) {
      double tail = 0;
      for (std::size_t i = static_cast<std::size_t>(r); i < sigma.size(); ++i) tail += sigma[i] * sigma[i];
      const double exact = wm.layers[0].candidates[r - 2].error;
      const double power = pm.layers[0].candidates[r - 2].error;
      CAPTURE(r, exact, power, std::sqrt(tail));
      // fp32 storage of A perturbs σ by ~1e-7·σ_max; the tail is ≥ 10·0.7^8 ≈ 0.58.
      CHECK(exact == Approx(std::sqrt(tail)).epsilon(1e-4));
      // The best rank-r error bounds any rank-r approximation, and 5 subspace iterations on a
      // spectrum decaying by 0.7 per index get close to it.
      CHECK(power >= exact * (1 - 1e-4));
      CHECK(power <= exact * 1.05);
    }
  }
}

TEST_CASE("trajectory mode reports each candidate's own per-step error under error feedback") {
  const std::size_t n = 256, rows = 6;
  const int acc = 4;
  const auto g = random_rows(rows, n, 3);
  MemorySource src("m", 1, iota_steps(rows), {layer("w", {16, 16})}, {g});
  const double d = 0.05;
  ReplayOptions opt;
  opt.mode = ErrorMode::kTrajectory;
  Replay rep(src, {set_of({topk(d), none_spec()})}, opt);
  const auto wm = rep.run_window(whole(0, rows, acc), {none_spec()}, false);
  // The model: e_0 = 0; acc_t = g_t + e_t; c_t = top-k(acc_t); e_{t+1} = acc_t − c_t;
  // reported error = mean over the last `acc` steps of ‖acc_t − c_t‖.
  const std::uint64_t k = kernels::sparse_k(n, d);
  std::vector<float> e(n, 0.0f);
  double sum = 0;
  for (std::size_t t = 0; t < rows; ++t) {
    std::vector<float> a(n);
    for (std::size_t i = 0; i < n; ++i) a[i] = g[t][i] + e[i];
    std::vector<std::size_t> idx(n);
    for (std::size_t i = 0; i < n; ++i) idx[i] = i;
    std::stable_sort(idx.begin(), idx.end(), [&](auto x, auto y) { return std::fabs(a[x]) > std::fabs(a[y]); });
    e = a;
    for (std::size_t j = 0; j < k; ++j) e[idx[j]] = 0.0f;
    double s = 0;
    for (auto v : e) s += static_cast<double>(v) * v;
    if (t >= rows - acc) sum += std::sqrt(s);
  }
  const auto& c = wm.layers[0].candidates;
  CHECK(c[0].error == Approx(sum / acc).epsilon(1e-5));
  CHECK(c[1].error == 0.0);
  CHECK(c[0].bytes == static_cast<double>(kernels::topk_bytes(kernels::topk_auto_encoding(n, k), n, k)));
}

TEST_CASE("state carries within a burst and is reset at a burst start") {
  const std::size_t rows = 10;
  const auto g = random_rows(rows, 32 * 24, 5);
  MemorySource src("m", 1, iota_steps(rows), {layer("w", {32, 24})}, {g});
  const MethodSpec in_force = psgd(2);
  const std::vector<MethodSpec> cands = {psgd(1), psgd(2), psgd(3)};
  auto second = [&](bool carry) {
    Replay rep(src, {set_of(cands)}, ReplayOptions{});
    rep.run_window(whole(0, 5, 5), {in_force}, carry);
    return rep.run_window(whole(5, 5, 5, /*starts=*/!carry), {in_force}, false);
  };
  Replay fresh(src, {set_of(cands)}, ReplayOptions{});
  const auto alone = fresh.run_window(whole(5, 5, 5), {in_force}, false);
  const auto reset = second(false), carried = second(true);
  for (std::size_t c = 0; c < cands.size(); ++c) {
    CHECK(reset.layers[0].candidates[c].error == alone.layers[0].candidates[c].error);
    CHECK(carried.layers[0].candidates[c].error != alone.layers[0].candidates[c].error);
  }
  CHECK(reset.layers[0].applied_error_per_step == alone.layers[0].applied_error_per_step);
}

TEST_CASE("results do not depend on the number of threads") {
  const std::size_t rows = 4;
  std::vector<SourceLayer> layers;
  std::vector<Rows> grads;
  std::vector<CandidateSet> sets;
  std::vector<MethodSpec> in_force;
  for (int l = 0; l < 7; ++l) {
    layers.push_back(layer("l" + std::to_string(l), {8 + 4 * l, 12}));
    grads.push_back(random_rows(rows, layers.back().numel, 100 + l));
    sets.push_back(set_of({psgd(1), psgd(2), topk(0.1), kernels::parse_method("maxmin", {{"bits", "3"}})}));
    in_force.push_back(l % 2 ? psgd(2) : kernels::parse_method("maxmin"));
  }
  MemorySource src("m", 1, iota_steps(rows), layers, grads);
  auto run = [&](unsigned threads, double memory_limit = 0) {
    ReplayOptions opt;
    opt.threads = threads;
    opt.memory_limit_bytes = memory_limit;
    std::size_t calls = 0;
    opt.progress = [&](const ReplayProgress& p) {
      ++calls;
      CHECK(p.layers_done <= p.layers_total);
    };
    Replay rep(src, sets, opt);
    auto wm = rep.run_window(whole(0, rows, 3), in_force, false);
    CHECK(calls == layers.size());
    if (memory_limit > 0) {
      // Two largest layers (32×12, 28×12) do not fit together under the limit: one at a time for them.
      CHECK(rep.peak_task_bytes() <= memory_limit);
      CHECK(rep.peak_tasks() >= 1);
    }
    return wm;
  };
  const double two_small = layer_task_bytes(layers[0].numel) + layer_task_bytes(layers[1].numel);
  const auto a = run(1), b = run(3), c = run(3, std::max(two_small, layer_task_bytes(layers[6].numel)));
  for (const auto* other : {&b, &c}) {
    for (std::size_t l = 0; l < layers.size(); ++l) {
      CAPTURE(l);
      CHECK(a.layers[l].applied_error_per_step == other->layers[l].applied_error_per_step);
      for (std::size_t k = 0; k < a.layers[l].candidates.size(); ++k) {
        CHECK(a.layers[l].candidates[k].error == other->layers[l].candidates[k].error);
        CHECK(a.layers[l].candidates[k].bytes == other->layers[l].candidates[k].bytes);
      }
    }
  }
}

TEST_CASE("weighted pool: every task runs once, and never beside others beyond the capacity") {
  const std::vector<double> weight{9, 5, 4, 4, 3, 2, 2, 1, 1, 12, 1};
  for (double cap : {0.0, 6.0, 8.0, 100.0}) {
    for (unsigned threads : {1u, 2u, 4u}) {
      CAPTURE(cap, threads);
      std::mutex m;
      double running = 0, peak = 0;
      std::vector<std::size_t> started;
      std::vector<int> runs(weight.size(), 0);
      const PoolStats st = parallel_for_weighted(weight.size(), threads, weight, cap, [&](std::size_t i, unsigned) {
        {
          std::lock_guard<std::mutex> lock(m);
          // Over the capacity only when alone: the running sum before this task must be 0.
          if (cap > 0 && running + weight[i] > cap) CHECK(running == 0);
          running += weight[i];
          peak = std::max(peak, running);
          started.push_back(i);
          ++runs[i];
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200 * (1 + i % 3)));
        std::lock_guard<std::mutex> lock(m);
        running -= weight[i];
      });
      CHECK(std::all_of(runs.begin(), runs.end(), [](int r) { return r == 1; }));
      // Admission is in index order; what the tasks observe is only ordered with one thread (two
      // admitted tasks may reach the test's lock in either order).
      if (threads == 1) CHECK(std::is_sorted(started.begin(), started.end()));
      // The pool counts a task from admission until its release, which brackets the span the task
      // itself observes; so what the tasks saw never exceeds the pool's peak (they are equal with
      // one thread, where nothing overlaps).
      CHECK(peak <= st.peak_weight + 1e-9);
      if (threads == 1) CHECK(st.peak_weight == Approx(peak));
      if (cap > 0) CHECK(st.peak_weight <= std::max(cap, 12.0));
      // Without a limit, at most `threads` tasks overlap: never more than the heaviest ones.
      std::vector<double> heaviest = weight;
      std::sort(heaviest.begin(), heaviest.end(), std::greater<>());
      CHECK(st.peak_weight <= std::accumulate(heaviest.begin(), heaviest.begin() + threads, 0.0) + 1e-9);
      CHECK(st.peak_tasks <= threads);
      if (threads == 1) CHECK(st.peak_tasks == 1);
    }
  }
  // A failing task stops the others and is rethrown.
  CHECK_THROWS_WITH(parallel_for_weighted(5, 2, {1, 1, 1, 1, 1}, 2, [](std::size_t i, unsigned) {
                      if (i == 1) throw lgreco::InputError("task 1 failed");
                    }),
                    Catch::Contains("task 1 failed"));
}
