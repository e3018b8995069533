// Two-phase read (fetch_raw under a lock, decode_raw without): bit-identical to read() for every
// storage dtype and for the filter pipelines it decodes itself ([shuffle, deflate], [deflate],
// [shuffle], none), including rows split over several chunks. Traces whose storage it does not
// decode (chunks several rows high, other filters) go through the ordinary read; that is covered
// with h5py-written traces in tests/python/test_trace_h5py.py.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

#include "tests/traces/tmp_dir.hpp"
#include "traces/half.hpp"
#include "traces/reader.hpp"
#include "traces/writer.hpp"

using namespace lgreco;
using namespace lgreco::traces;

namespace {

std::vector<float> values_for(std::int64_t numel, std::size_t layer, std::size_t t, StorageDtype dtype) {
  std::mt19937 gen(static_cast<unsigned>(7919 * t + 31 * layer + numel));
  std::normal_distribution<float> nd(0.0f, 1e-2f);
  std::vector<float> v(static_cast<std::size_t>(numel));
  for (auto& x : v) {
    float f = nd(gen);
    if (dtype == StorageDtype::kFloat16) f = half_to_float(float_to_half(f));
    if (dtype == StorageDtype::kBFloat16) f = bfloat16_to_float(float_to_bfloat16(f));
    x = f;
  }
  return v;
}

bool raw_bit_equal(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("two-phase read is bit-identical to read()", "[raw_read]") {
  const auto dtype = GENERATE(StorageDtype::kFloat32, StorageDtype::kFloat16, StorageDtype::kBFloat16);
  // {shuffle, deflate level}: [shuffle, deflate], [deflate], [shuffle], no filters.
  const auto pipeline = GENERATE(std::pair{true, 1}, std::pair{false, 1}, std::pair{true, 0}, std::pair{false, 0});
  CAPTURE(to_string(dtype), pipeline.first, pipeline.second);
  test::TempDir dir;
  const auto file = dir / "raw.h5";
  // "big" spans three chunks, the last one partial (stored padded).
  const std::int64_t big = 2 * chunk_elements(1ll << 40, dtype) + 5;
  const std::vector<TraceLayer> layers = {
      {"scalar", {1}, 1, LayerKind::kBias, 0, 2, dtype},
      {"odd", {7, 13}, 91, LayerKind::kWeight, 0, 1, dtype},
      {"big", {big}, big, LayerKind::kEmbedding, 0, 0, dtype},
  };
  const std::size_t T = 3;
  {
    TraceWriterOptions opt;
    opt.shuffle = pipeline.first;
    opt.deflate_level = pipeline.second;
    TraceWriter w(file, {"tiny", 2, dtype, "test", "", ""}, layers, Overwrite::kRefuse, opt);
    for (std::size_t t = 0; t < T; ++t) {
      w.add_step(static_cast<std::int64_t>(t));
      for (std::size_t i = 0; i < layers.size(); ++i) w.write(i, t, values_for(layers[i].numel, i, t, dtype));
    }
    w.finish();
  }
  const TraceReader r(file);
  RawRow raw;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    CAPTURE(layers[i].name);
    CHECK(r.raw_path(i));
    for (std::size_t t = 0; t < T; ++t) {
      std::vector<float> a(static_cast<std::size_t>(layers[i].numel)), b(a.size(), -1.0f);
      r.read(i, t, a);
      r.fetch_raw(i, t, raw, b);
      CHECK_FALSE(raw.done);
      if (layers[i].name == "big") CHECK(raw.offsets.size() == 4);  // three chunks
      TraceReader::decode_raw(raw, b);
      REQUIRE(raw_bit_equal(a, b));
      REQUIRE(raw_bit_equal(a, values_for(layers[i].numel, i, t, dtype)));
    }
  }
}

TEST_CASE("decode_raw runs on several threads while fetches are serialised", "[raw_read]") {
  test::TempDir dir;
  const auto file = dir / "mt.h5";
  const auto dtype = StorageDtype::kBFloat16;
  const std::vector<TraceLayer> layers = {{"a", {4096}, 4096, LayerKind::kWeight, 0, 1, dtype},
                                          {"b", {3000}, 3000, LayerKind::kWeight, 0, 0, dtype}};
  {
    TraceWriter w(file, {"tiny", 2, dtype, "test", "", ""}, layers, Overwrite::kRefuse);
    for (std::size_t t = 0; t < 8; ++t) {
      w.add_step(static_cast<std::int64_t>(t));
      for (std::size_t i = 0; i < 2; ++i) w.write(i, t, values_for(layers[i].numel, i, t, dtype));
    }
    w.finish();
  }
  const TraceReader r(file);
  std::mutex mu;
  std::atomic<int> bad{0};
  auto work = [&](std::size_t i) {
    RawRow raw;
    std::vector<float> out(static_cast<std::size_t>(layers[i].numel));
    for (int rep = 0; rep < 5; ++rep) {
      for (std::size_t t = 0; t < 8; ++t) {
        {
          std::lock_guard<std::mutex> lock(mu);
          r.fetch_raw(i, t, raw, out);
        }
        TraceReader::decode_raw(raw, out);
        if (!raw_bit_equal(out, values_for(layers[i].numel, i, t, dtype))) ++bad;
      }
    }
  };
  std::thread t0(work, 0), t1(work, 1);
  t0.join();
  t1.join();
  CHECK(bad == 0);
}
