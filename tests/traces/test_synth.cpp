// Synthetic gradients: determinism, the stated scale, rank, step correlation and tails, step ids,
// and the trace written from a preset.
#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>

#include "core/cancel.hpp"
#include "core/error.hpp"
#include "tests/traces/tmp_dir.hpp"
#include "traces/buckets.hpp"
#include "traces/reader.hpp"
#include "traces/synth.hpp"

using namespace lgreco;
using namespace lgreco::traces;

namespace {

std::vector<float> gen_at(const TensorSpec& t, SynthOptions o, std::vector<std::int64_t> ids, std::size_t layer = 3,
                          std::size_t layers = 7) {
  LayerGenerator g(t, layer, layers, o);
  std::vector<float> out(static_cast<std::size_t>(numel_of(t.shape)));
  for (auto id : ids) g.generate(id, out);
  return out;
}

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (std::size_t k = 0; k < a.size(); ++k) s += static_cast<double>(a[k]) * b[k];
  return s;
}

// Numerical rank by Gaussian elimination with partial pivoting (relative tolerance).
int matrix_rank(std::vector<double> a, std::int64_t n, std::int64_t m) {
  int rank = 0;
  double maxabs = 0;
  for (double x : a) maxabs = std::max(maxabs, std::fabs(x));
  for (std::int64_t col = 0, row = 0; col < m && row < n; ++col) {
    std::int64_t piv = row;
    for (std::int64_t i = row; i < n; ++i)
      if (std::fabs(a[i * m + col]) > std::fabs(a[piv * m + col])) piv = i;
    if (std::fabs(a[piv * m + col]) < 1e-4 * maxabs) continue;
    for (std::int64_t j = 0; j < m; ++j) std::swap(a[row * m + j], a[piv * m + j]);
    for (std::int64_t i = row + 1; i < n; ++i) {
      const double f = a[i * m + col] / a[row * m + col];
      for (std::int64_t j = col; j < m; ++j) a[i * m + j] -= f * a[row * m + j];
    }
    ++row;
    ++rank;
  }
  return rank;
}

}  // namespace

TEST_CASE("generation is deterministic in the seed and independent of threads", "[synth]") {
  const TensorSpec t{"w", {300, 257}, LayerKind::kWeight, 1};
  SynthOptions o;
  o.threads = 1;
  const auto a = gen_at(t, o, {0, 1, 2});
  o.threads = 3;
  const auto b = gen_at(t, o, {0, 1, 2});
  CHECK(a == b);
  o.seed = 1;
  CHECK(gen_at(t, o, {0, 1, 2}) != a);
}

TEST_CASE("the Frobenius norm follows the stated rms", "[synth]") {
  // E‖G‖²_F = rms²·n·m by construction; rms for a weight at depth f = 3/6 is
  // scale·1·(0.5 + 0.5)·exp(0.25 z), read back from the generator.
  const TensorSpec t{"w", {512, 384}, LayerKind::kWeight, 1};
  SynthOptions o;
  o.tail = 0;
  LayerGenerator g(t, 3, 7, o);
  CHECK(g.rms() > 0.5 * o.scale);
  CHECK(g.rms() < 2.0 * o.scale);
  CHECK(g.rank() == 16);
  std::vector<float> out(512 * 384);
  double mean_sq = 0;
  const int steps = 30;
  for (int s = 0; s < steps; ++s) {
    g.generate(s * 100, out);  // far apart: nearly independent factors
    mean_sq += dot(out, out) / steps;
  }
  const double expect = g.rms() * g.rms() * 512 * 384;
  // The low-rank energy Σσ²·(u·u)(v·v) fluctuates with the 16 random factor pairs; 30 samples.
  CHECK(mean_sq == Approx(expect).epsilon(0.15));
}

TEST_CASE("without noise the gradient has rank min(R, n, m)", "[synth]") {
  SynthOptions o;
  o.noise = 0;
  o.rank_terms = 5;
  for (auto shape : {std::vector<std::int64_t>{40, 30}, std::vector<std::int64_t>{3, 50}, std::vector<std::int64_t>{6, 2, 2, 2}}) {
    const TensorSpec t{"w", shape, LayerKind::kWeight, 1};
    const auto g = gen_at(t, o, {0});
    const std::int64_t n = shape[0], m = numel_of(shape) / n;
    CAPTURE(n, m);
    CHECK(matrix_rank(std::vector<double>(g.begin(), g.end()), n, m) == std::min<std::int64_t>({5, n, m}));
  }
  o.noise = 0.3;
  const auto noisy = gen_at({"w", {40, 30}, LayerKind::kWeight, 1}, o, {0});
  CHECK(matrix_rank(std::vector<double>(noisy.begin(), noisy.end()), 40, 30) == 30);
}

TEST_CASE("consecutive steps are correlated as rho^(2d)", "[synth]") {
  // With η = 0: E⟨G_s, G_{s+d}⟩ / E‖G‖² = ρ^{2d} (both factors follow AR(1) with ρ^d). Averaged over
  // seeds; the per-seed estimate has a standard deviation of a few hundredths at this size.
  const TensorSpec t{"w", {256, 256}, LayerKind::kWeight, 1};
  for (double rho : {0.0, 0.9}) {
    for (std::int64_t d : {1, 3}) {
      double corr = 0;
      const int seeds = 8;
      for (int seed = 0; seed < seeds; ++seed) {
        SynthOptions o;
        o.noise = 0;
        o.rho = rho;
        o.seed = static_cast<std::uint64_t>(seed);
        LayerGenerator g(t, 0, 1, o);
        std::vector<float> a(256 * 256), b(256 * 256);
        g.generate(10, a);
        g.generate(10 + d, b);
        corr += dot(a, b) / std::sqrt(dot(a, a) * dot(b, b)) / seeds;
      }
      CAPTURE(rho, d);
      CHECK(corr == Approx(std::pow(rho, 2.0 * static_cast<double>(d))).margin(0.06));
    }
  }
}

TEST_CASE("noise tails: Gaussian kurtosis 3, Student-t(10) kurtosis 4", "[synth]") {
  // With η ≫ 1 the gradient is the noise; kurtosis of t_ν is 3 + 6/(ν − 4).
  const TensorSpec t{"w", {1000, 1000}, LayerKind::kWeight, 1};
  for (double nu : {0.0, 10.0}) {
    SynthOptions o;
    o.noise = 1000;
    o.tail = nu;
    const auto g = gen_at(t, o, {0});
    double m2 = 0, m4 = 0;
    for (float x : g) {
      const double v = x;
      m2 += v * v;
      m4 += v * v * v * v;
    }
    m2 /= static_cast<double>(g.size());
    m4 /= static_cast<double>(g.size());
    CAPTURE(nu);
    CHECK(m4 / (m2 * m2) == Approx(nu == 0 ? 3.0 : 4.0).margin(nu == 0 ? 0.05 : 0.3));
  }
}

TEST_CASE("step ids form the requested bursts", "[synth]") {
  SynthOptions o;
  o.steps = 7;
  o.bursts = 3;
  o.burst_spacing = 100;
  CHECK(synth_step_ids(o) == std::vector<std::int64_t>{0, 1, 2, 100, 101, 200, 201});
  o.burst_length = 3;
  CHECK(synth_step_ids(o) == std::vector<std::int64_t>{0, 1, 2, 100, 101, 102, 200});
  o.burst_spacing = 2;
  CHECK_THROWS_AS(synth_step_ids(o), ConfigError);
  o = SynthOptions{};
  o.rho = 1.0;
  CHECK_THROWS_AS(check_synth_options(o), ConfigError);
  o = SynthOptions{};
  o.tail = 2.0;
  CHECK_THROWS_AS(check_synth_options(o), ConfigError);
}

TEST_CASE("synthesize_trace writes the preset's layer table and the generator's values", "[synth]") {
  ModelPreset m{"toy", "toy", {{"fc1.weight", {40, 24}, LayerKind::kWeight, 1},
                               {"fc1.bias", {40}, LayerKind::kBias, 1},
                               {"ln.weight", {40}, LayerKind::kNorm, 1},
                               {"emb.weight", {300, 1, 5}, LayerKind::kEmbedding, 1}}, 4};
  SynthOptions o;
  o.steps = 4;
  o.bursts = 2;
  o.burst_spacing = 10;
  o.seed = 9;
  o.compute_flops_per_s = 1e9;
  test::TempDir dir;
  synthesize_trace(m, o, dir / "toy.h5", Overwrite::kRefuse);
  const TraceReader r(dir / "toy.h5");
  CHECK(r.header().model == "toy");
  CHECK(r.steps() == std::vector<std::int64_t>{0, 1, 10, 11});
  std::vector<std::uint64_t> bytes;
  for (const auto& t : m.tensors) bytes.push_back(4ull * static_cast<std::uint64_t>(numel_of(t.shape)));
  const auto buckets = assign_ddp_buckets(bytes);
  for (std::size_t i = 0; i < m.tensors.size(); ++i) {
    const auto& l = r.layers()[i];
    CAPTURE(i);
    CHECK(l.name == m.tensors[i].name);
    CHECK(l.shape == m.tensors[i].shape);
    CHECK(l.bucket == buckets.bucket[i]);
    CHECK(l.backward_order == buckets.backward_order[i]);
    LayerGenerator g(m.tensors[i], i, m.tensors.size(), o);
    std::vector<float> expect(static_cast<std::size_t>(l.numel)), got(expect.size());
    for (std::size_t t = 0; t < 4; ++t) {
      g.generate(r.steps()[t], expect);
      r.read(i, t, got);
      CHECK(got == expect);
    }
    // Backward compute time = 4·numel·uses·batch / flops.
    CHECK(r.compute_time_s(i)->at(0) == Approx(4.0 * static_cast<double>(l.numel) * 1 * 4 / 1e9));
  }
  CHECK_THROWS_AS(synthesize_trace(m, o, dir / "toy.h5", Overwrite::kRefuse), ConfigError);
}

TEST_CASE("an interrupted synthesis leaves no file", "[synth]") {
  test::TempDir dir;
  SynthOptions o;
  o.steps = 2;
  request_cancel();
  CHECK_THROWS_AS(synthesize_trace(find_model_preset("resnet18"), o, dir / "x.h5", Overwrite::kRefuse), Cancelled);
  reset_cancel();
  CHECK(dir.entries() == 0);
}
