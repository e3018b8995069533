// Writer → reader round trips: bit-exact for each storage dtype, odd shapes, 1-element layers,
// layers split over several chunks, any write order, zero steps, and atomic output.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>

#include "core/error.hpp"
#include "tests/traces/tmp_dir.hpp"
#include "traces/half.hpp"
#include "traces/reader.hpp"
#include "traces/writer.hpp"

using namespace lgreco;
using namespace lgreco::traces;

namespace {

std::vector<TraceLayer> make_layers(StorageDtype dtype) {
  // A 1-element layer, odd shapes, a 4-D conv and one layer of more than one chunk
  // (chunk = 4 MiB: 1,048,576 float32 or 2,097,152 16-bit elements).
  const std::int64_t big = 2 * chunk_elements(1ll << 40, dtype) + 3;
  std::vector<TraceLayer> out = {
      {"scalar", {1}, 1, LayerKind::kBias, 2, 4, dtype},
      {"odd", {7, 13}, 91, LayerKind::kWeight, 1, 3, dtype},
      {"conv", {3, 5, 3, 3}, 135, LayerKind::kWeight, 1, 2, dtype},
      {"norm", {17}, 17, LayerKind::kNorm, 0, 1, dtype},
      {"big", {big}, big, LayerKind::kEmbedding, 0, 0, dtype},
  };
  return out;
}

// Values exactly representable in the storage dtype (so that the round trip must be bit-exact),
// including subnormals, ±0 and ±Inf; NaN is excluded (payloads are not compared bitwise).
float representable(std::mt19937& gen, StorageDtype dtype) {
  for (;;) {
    const auto w = static_cast<std::uint16_t>(gen());
    float f;
    if (dtype == StorageDtype::kFloat32) {
      f = bits_float(static_cast<std::uint32_t>(gen()));
    } else if (dtype == StorageDtype::kFloat16) {
      f = half_to_float(w);
    } else {
      f = bfloat16_to_float(w);
    }
    if (!std::isnan(f)) return f;
  }
}

std::vector<float> values_for(const TraceLayer& l, std::size_t t, StorageDtype dtype) {
  std::mt19937 gen(static_cast<unsigned>(1000 * t + l.numel));
  std::vector<float> v(static_cast<std::size_t>(l.numel));
  for (auto& x : v) x = representable(gen, dtype);
  return v;
}

bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("round trip is bit-exact for every storage dtype and write order", "[roundtrip]") {
  const auto dtype = GENERATE(StorageDtype::kFloat32, StorageDtype::kFloat16, StorageDtype::kBFloat16);
  const bool layer_by_layer = GENERATE(false, true);
  CAPTURE(to_string(dtype), layer_by_layer);
  test::TempDir dir;
  const auto file = dir / "rt.h5";
  const auto layers = make_layers(dtype);
  const std::vector<std::int64_t> steps = {3, 4, 5, 10};
  {
    TraceWriter w(file, {"tiny", 4, dtype, "test", "", "{\"k\": 1}"}, layers, Overwrite::kRefuse);
    if (layer_by_layer) {
      for (auto s : steps) w.add_step(s);
      for (std::size_t i = 0; i < layers.size(); ++i)
        for (std::size_t t = 0; t < steps.size(); ++t) w.write(i, t, values_for(layers[i], t, dtype));
    } else {
      for (std::size_t t = 0; t < steps.size(); ++t) {
        REQUIRE(w.add_step(steps[t]) == t);
        for (std::size_t i = layers.size(); i-- > 0;) w.write(i, t, values_for(layers[i], t, dtype));
      }
    }
    w.set_loss({2.5, 2.4, 2.3, 2.0});
    w.set_lr({0.1, 0.1, 0.1, 0.05});
    w.set_compute_time_s(1, {1e-3, 2e-3, 3e-3, 4e-3});
    w.finish();
  }
  CHECK(dir.entries() == 1);  // no temporary left over
  const TraceReader r(file);
  CHECK(r.header().model == "tiny");
  CHECK(r.header().world_size == 4);
  CHECK(r.header().dtype == dtype);
  CHECK(r.header().producer == "test");
  CHECK(r.header().producer_config == "{\"k\": 1}");
  CHECK(r.header().created.size() == 20);  // filled in: "2026-12-02T14:12:33Z"
  CHECK(r.steps() == steps);
  const auto bursts = r.bursts();
  REQUIRE(bursts.size() == 2);
  CHECK((bursts[0].first_step == 3 && bursts[0].length == 3 && bursts[1].first_index == 3));
  REQUIRE(r.layers().size() == layers.size());
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const auto& a = r.layers()[i];
    const auto& b = layers[i];
    CAPTURE(b.name);
    CHECK((a.name == b.name && a.shape == b.shape && a.numel == b.numel && a.kind == b.kind && a.bucket == b.bucket &&
           a.backward_order == b.backward_order && a.dtype == b.dtype));
    for (std::size_t t = 0; t < steps.size(); ++t) {
      std::vector<float> got(static_cast<std::size_t>(b.numel));
      r.read(i, t, got);
      REQUIRE(bit_equal(got, values_for(b, t, dtype)));
    }
  }
  // A range straddling a chunk boundary of the big layer.
  const std::size_t big = r.find_layer("big");
  const std::int64_t chunk = chunk_elements(r.layers()[big].numel, dtype);
  std::vector<float> part(10);
  r.read_range(big, 2, chunk - 5, part);
  const auto full = values_for(layers[big], 2, dtype);
  CHECK(std::memcmp(part.data(), full.data() + chunk - 5, 10 * sizeof(float)) == 0);
  CHECK(*r.loss() == std::vector<double>{2.5, 2.4, 2.3, 2.0});
  CHECK(r.lr()->back() == 0.05);
  CHECK(r.compute_time_s(1)->at(3) == 4e-3);
  CHECK_FALSE(r.compute_time_s(0).has_value());
  CHECK_THROWS_AS(r.read(0, 4, part), Error);              // step out of range
  CHECK_THROWS_AS(r.read_range(1, 0, 90, part), Error);    // range past numel
  CHECK_THROWS_AS(r.find_layer("nope"), TraceError);
}

TEST_CASE("float32 input is rounded to nearest even on 16-bit storage", "[roundtrip]") {
  const auto dtype = GENERATE(StorageDtype::kFloat16, StorageDtype::kBFloat16);
  test::TempDir dir;
  const std::vector<TraceLayer> layers = {{"w", {4, 8}, 32, LayerKind::kWeight, 0, 0, dtype}};
  std::vector<float> v(32);
  std::mt19937 gen(3);
  std::normal_distribution<float> nd(0.0f, 1e-3f);
  for (auto& x : v) x = nd(gen);
  v[0] = 1e9f;  // overflows float16
  {
    TraceWriter w(dir / "r.h5", {"m", 1, dtype, "test", "", ""}, layers, Overwrite::kRefuse);
    w.add_step(0);
    w.write(0, 0, v);
    w.finish();
  }
  std::vector<float> got(32);
  TraceReader(dir / "r.h5").read(0, 0, got);
  for (std::size_t k = 0; k < v.size(); ++k) {
    const float expect = dtype == StorageDtype::kFloat16 ? half_to_float(float_to_half(v[k]))
                                                        : bfloat16_to_float(float_to_bfloat16(v[k]));
    CAPTURE(k, v[k]);
    CHECK(float_bits(got[k]) == float_bits(expect));
  }
}

TEST_CASE("a trace with zero steps is valid and empty", "[roundtrip]") {
  test::TempDir dir;
  {
    TraceWriter w(dir / "z.h5", {"m", 1, StorageDtype::kFloat16, "test", "", ""},
                  {{"w", {2, 3}, 6, LayerKind::kWeight, 0, 0, StorageDtype::kFloat16}}, Overwrite::kRefuse);
    w.finish();
  }
  const TraceReader r(dir / "z.h5");
  CHECK(r.steps().empty());
  CHECK(r.bursts().empty());
  REQUIRE(r.layers().size() == 1);
  std::vector<float> buf(6);
  CHECK_THROWS_WITH(r.read(0, 0, buf), Catch::Contains("out of range (trace has 0 steps)"));
}

TEST_CASE("writer misuse is reported and leaves nothing behind", "[roundtrip]") {
  test::TempDir dir;
  const auto file = dir / "w.h5";
  const std::vector<TraceLayer> layers = {{"a", {3}, 3, LayerKind::kBias, 0, 0, StorageDtype::kFloat32}};
  const std::vector<float> three(3, 1.0f);
  SECTION("unfinished writer") {
    {
      TraceWriter w(file, {"m", 1, StorageDtype::kFloat32, "test", "", ""}, layers, Overwrite::kRefuse);
      w.add_step(0);
      w.write(0, 0, three);
    }
    CHECK(dir.entries() == 0);
  }
  SECTION("a (layer, step) never written") {
    TraceWriter w(file, {"m", 1, StorageDtype::kFloat32, "test", "", ""}, layers, Overwrite::kRefuse);
    w.add_step(0);
    w.add_step(1);
    w.write(0, 1, three);
    CHECK_THROWS_WITH(w.finish(), Catch::Contains("layer 'a' (/layers/000000/grad): step index 0 (step id 0) was never written"));
  }
  SECTION("bad calls") {
    TraceWriter w(file, {"m", 1, StorageDtype::kFloat32, "test", "", ""}, layers, Overwrite::kRefuse);
    w.add_step(5);
    CHECK_THROWS_AS(w.add_step(5), ConfigError);                        // not increasing
    CHECK_THROWS_AS(w.write(0, 0, std::vector<float>(2)), ConfigError);  // wrong size
    CHECK_THROWS_AS(w.write(0, 1, three), ConfigError);                  // step not added
    w.write(0, 0, three);
    CHECK_THROWS_AS(w.write(0, 0, three), ConfigError);                  // twice
  }
  SECTION("invalid layer tables") {
    const TraceHeader h{"m", 1, StorageDtype::kFloat32, "test", "", ""};
    CHECK_THROWS_AS(TraceWriter(file, h, {{"a", {3, 2}, 5, LayerKind::kWeight, 0, 0, StorageDtype::kFloat32}}, Overwrite::kRefuse),
                    ConfigError);
    CHECK_THROWS_AS(TraceWriter(file, h, {layers[0], layers[0]}, Overwrite::kRefuse), ConfigError);
    auto twice = layers[0];
    twice.name = "b";
    CHECK_THROWS_AS(TraceWriter(file, h, {layers[0], twice}, Overwrite::kRefuse), ConfigError);  // backward order 0 twice
    CHECK_THROWS_AS(TraceWriter(file, h, {{"a", {}, 1, LayerKind::kWeight, 0, 0, StorageDtype::kFloat32}}, Overwrite::kRefuse),
                    ConfigError);
  }
  CHECK(dir.entries() == 0);
}

TEST_CASE("an existing destination is kept unless overwriting is allowed", "[roundtrip]") {
  test::TempDir dir;
  const auto file = dir / "exists.h5";
  { std::ofstream(file) << "keep me"; }
  const std::vector<TraceLayer> layers = {{"a", {1}, 1, LayerKind::kBias, 0, 0, StorageDtype::kFloat32}};
  CHECK_THROWS_AS(TraceWriter(file, {"m", 1, StorageDtype::kFloat32, "t", "", ""}, layers, Overwrite::kRefuse), ConfigError);
  CHECK(std::filesystem::file_size(file) == 7);
  {
    TraceWriter w(file, {"m", 1, StorageDtype::kFloat32, "t", "", ""}, layers, Overwrite::kAllow);
    w.add_step(0);
    w.write(0, 0, std::vector<float>{1.0f});
  }  // abandoned: the old file stays as it was
  CHECK(std::filesystem::file_size(file) == 7);
}
