// Synthetic gradients: determinism, the stated scale, rank, step correlation and tails, step ids,
// layer classes, the measured profile's fitted laws, the flat profile's values (the earlier
// generator, bit for bit), and the trace written from a preset. The measured profile's statistics
// against the recorded traces: tests/python/test_synth_stats.py.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <map>
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
  for (auto profile : {SynthProfile::kMeasured, SynthProfile::kFlat}) {
    CAPTURE(to_string(profile));
    SynthOptions o;
    o.profile = profile;
    o.threads = 1;
    const auto a = gen_at(t, o, {0, 1, 2});
    o.threads = 3;
    const auto b = gen_at(t, o, {0, 1, 2});
    CHECK(a == b);
    o.seed = 1;
    CHECK(gen_at(t, o, {0, 1, 2}) != a);
  }
}

TEST_CASE("the Frobenius norm follows the stated rms", "[synth]") {
  // E‖G‖²_F = rms²·n·m by construction. Flat: rms for a weight at depth f = 3/6 is
  // scale·1·(0.5 + 0.5)·exp(0.25 z); measured: scale·k·10^(−0.175·log10(numel/65536) + 0.05 z) for
  // a linear matrix at depth 0.5 (k = 1). Both read back from the generator.
  const TensorSpec t{"w", {512, 384}, LayerKind::kWeight, 1};
  for (auto profile : {SynthProfile::kFlat, SynthProfile::kMeasured}) {
    CAPTURE(to_string(profile));
    SynthOptions o;
    o.profile = profile;
    o.tail = 0;
    LayerGenerator g(t, 3, 7, o);
    const double size_factor = std::pow(512.0 * 384.0 / 65536.0, -0.175);
    if (profile == SynthProfile::kFlat) {
      CHECK(g.rms() > 0.5 * o.scale);
      CHECK(g.rms() < 2.0 * o.scale);
      CHECK(g.rank() == 16);
    } else {
      CHECK(g.params().cls == LayerClass::kLinear);
      CHECK(g.rms() == Approx(o.scale * size_factor).epsilon(0.45));  // 10^(0.05 z), |z| < 3.2
      CHECK(g.rank() == 24);
    }
    std::vector<float> out(512 * 384);
    double mean_sq = 0;
    const int steps = 30;
    for (int s = 0; s < steps; ++s) {
      g.generate(s * 100, out);  // far apart: nearly independent factors
      mean_sq += dot(out, out) / steps;
    }
    const double expect = g.rms() * g.rms() * 512 * 384;
    // The low-rank energy Σσ²·(u·u)(v·v) fluctuates with the random factor pairs (measured: the
    // step gain too, E gain² = 1); 30 samples.
    CHECK(mean_sq == Approx(expect).epsilon(0.15));
  }
}

TEST_CASE("the flat profile is the earlier generator, bit for bit", "[synth]") {
  // Values of `lgreco trace synth --model resnet18 --steps 8` as written by lgreco 0.1 (seed 0,
  // decay 1, rho 0.9, tail 4, 16 rank terms, noise 0.3, scale 1e-3).
  const auto& m = find_model_preset("resnet18");
  SynthOptions o;
  o.profile = SynthProfile::kFlat;
  auto bits = [](float x) {
    std::uint32_t u;
    std::memcpy(&u, &x, 4);
    return u;
  };
  auto values = [&](std::size_t layer) {
    LayerGenerator g(m.tensors, layer, o);
    std::vector<std::vector<float>> steps;
    for (std::int64_t s = 0; s < 8; ++s) {
      steps.emplace_back(static_cast<std::size_t>(numel_of(m.tensors[layer].shape)));
      g.generate(s, steps.back());
    }
    return steps;
  };
  const auto l3 = values(3);
  CHECK(bits(l3[0][0]) == 0xba8a0a38u);
  CHECK(bits(l3[0][1]) == 0x3996594bu);
  CHECK(bits(l3[7][12345]) == 0x39619eacu);
  CHECK(bits(values(61)[7][3]) == 0xba6e1210u);
}

TEST_CASE("without noise the gradient has rank min(R, n, m)", "[synth]") {
  // Measured: the factors are combinations of min(32, n) fixed directions, and the row and column
  // scales are diagonal, so the rank is still min(R, n, m).
  for (auto profile : {SynthProfile::kFlat, SynthProfile::kMeasured}) {
    CAPTURE(to_string(profile));
    SynthOptions o;
    o.profile = profile;
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
}

TEST_CASE("consecutive steps are correlated as rho^(2d)", "[synth]") {
  // Flat, with η = 0: E⟨G_s, G_{s+d}⟩ / E‖G‖² = ρ^{2d} (both factors follow AR(1) with ρ^d). Averaged
  // over seeds; the per-seed estimate has a standard deviation of a few hundredths at this size.
  const TensorSpec t{"w", {256, 256}, LayerKind::kWeight, 1};
  for (double rho : {0.0, 0.9}) {
    for (std::int64_t d : {1, 3}) {
      double corr = 0;
      const int seeds = 8;
      for (int seed = 0; seed < seeds; ++seed) {
        SynthOptions o;
        o.profile = SynthProfile::kFlat;
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
  // Flat, with η ≫ 1 the gradient is the noise; kurtosis of t_ν is 3 + 6/(ν − 4).
  const TensorSpec t{"w", {1000, 1000}, LayerKind::kWeight, 1};
  for (double nu : {0.0, 10.0}) {
    SynthOptions o;
    o.profile = SynthProfile::kFlat;
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
  o = SynthOptions{};
  o.rank_terms = 0;
  CHECK_THROWS_AS(check_synth_options(o), ConfigError);
  CHECK(parse_synth_profile("flat") == SynthProfile::kFlat);
  CHECK_THROWS_AS(parse_synth_profile("real"), ConfigError);
}

TEST_CASE("layer classes of the presets", "[synth]") {
  auto count = [](const std::string& model) {
    const auto& m = find_model_preset(model);
    const auto classes = classify_layers(m.tensors);
    std::map<std::string, int> c;
    for (auto cls : classes) ++c[to_string(cls)];
    std::string head;
    for (std::size_t i = 0; i < classes.size(); ++i) {
      if (classes[i] == LayerClass::kHead) head = m.tensors[i].name;
    }
    return std::pair{c, head};
  };
  {
    const auto [c, head] = count("resnet18");
    CHECK(c == std::map<std::string, int>{{"conv", 20}, {"head", 1}, {"norm", 40}, {"bias", 1}});
    CHECK(head == "linear.weight");
  }
  {
    const auto [c, head] = count("charlm");
    CHECK(c == std::map<std::string, int>{{"embedding", 2}, {"attention", 8}, {"linear", 8}, {"head", 1},
                                          {"norm", 18}, {"bias", 17}});
    CHECK(head == "head.weight");
  }
  {
    const auto [c, head] = count("gpt2");  // lm_head is tied to wte: no head of its own
    CHECK(c.at("attention") == 24);
    CHECK(c.at("linear") == 24);
    CHECK(c.count("head") == 0);
    CHECK(head.empty());
  }
  CHECK(count("llama2-7b").second == "lm_head.weight");
  CHECK(count("vit-b16").second == "heads.head.weight");
  CHECK(count("resnet50").second == "fc.weight");
  CHECK(count("bert-base").first.at("attention") == 12 * 4);  // query, key, value, attention.output.dense
}

TEST_CASE("measured profile: the fitted norm laws, class factors and noise shares", "[synth]") {
  // log10 rms = log10(scale·k) − 0.52·(f − 0.5) − 0.175·log10(numel/65536) + 0.05·z: a least-squares
  // fit over resnet50's convolutions recovers the slopes within the jitter's reach.
  const auto& m = find_model_preset("resnet50");
  SynthOptions o;
  std::vector<double> f, size, y;
  for (std::size_t i = 0; i < m.tensors.size(); ++i) {
    const LayerParams p = layer_params(m.tensors, i, o);
    if (p.cls != LayerClass::kConv) continue;
    f.push_back(p.depth);
    size.push_back(std::log10(static_cast<double>(numel_of(m.tensors[i].shape)) / 65536.0));
    y.push_back(std::log10(p.rms / o.scale));
  }
  // Normal equations of y = c + a·f + b·size.
  double s[3][4] = {};
  for (std::size_t k = 0; k < y.size(); ++k) {
    const double x[3] = {1.0, f[k], size[k]};
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) s[i][j] += x[i] * x[j];
      s[i][3] += x[i] * y[k];
    }
  }
  for (int c = 0; c < 3; ++c) {
    for (int r = c + 1; r < 3; ++r) {
      const double q = s[r][c] / s[c][c];
      for (int j = c; j < 4; ++j) s[r][j] -= q * s[c][j];
    }
  }
  double coef[3];
  for (int r = 2; r >= 0; --r) {
    coef[r] = s[r][3];
    for (int j = r + 1; j < 3; ++j) coef[r] -= s[r][j] * coef[j];
    coef[r] /= s[r][r];
  }
  CHECK(coef[1] == Approx(-0.52).margin(0.06));
  CHECK(coef[2] == Approx(-0.175).margin(0.03));
  CHECK(coef[0] == Approx(0.52 * 0.5).margin(0.03));  // k = 1 at f = 0: +0.26
  // The head's factor (12) and the BatchNorm factor (0.42) of a CNN.
  const auto classes = classify_layers(m.tensors);
  const std::size_t fc = m.tensors.size() - 2;
  REQUIRE(classes[fc] == LayerClass::kHead);
  const LayerParams head = layer_params(m.tensors, fc, o);
  const double f_head = head.depth, n_head = static_cast<double>(numel_of(m.tensors[fc].shape));
  const double predicted = o.scale * 12.0 * std::pow(10.0, -0.52 * (f_head - 0.5) - 0.175 * std::log10(n_head / 65536.0));
  CHECK(head.rms == Approx(predicted).epsilon(0.45));
  const LayerParams bn = layer_params(m.tensors, 1, o);
  REQUIRE(bn.cls == LayerClass::kNorm);
  CHECK(bn.rms / o.scale == Approx(0.42 * std::pow(10.0, -0.52 * (bn.depth - 0.5) - 0.175 * std::log10(64.0 / 65536.0)))
                                .epsilon(0.45));
  // Noise falls with depth: φ·(1 − 0.8·(f − 0.5)); the overrides apply to every layer.
  const LayerParams first = layer_params(m.tensors, 0, o), last = layer_params(m.tensors, fc - 3, o);
  const auto share = [](const LayerParams& p, int rank) {
    double sum = 0;
    for (int r = 0; r < rank; ++r) sum += std::pow(r + 1.0, -2.0 * p.decay);
    return p.noise * p.noise / (sum + p.noise * p.noise);
  };
  CHECK(share(first, 8) > 1.5 * share(last, 8));
  o.rho = 0.5;
  o.noise = 0.1;
  o.tail = 5;
  const LayerParams over = layer_params(m.tensors, 3, o);
  CHECK(over.rho_u == 0.5);
  CHECK(over.rho_v == 0.5);
  CHECK(over.noise == 0.1);
  CHECK(over.tail == 5);
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
    LayerGenerator g(m.tensors, i, o);
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
