// The Compressor interface and ErrorFeedback over every method: EF identity, reported wire size,
// NaN/Inf rejection, zero-length and all-zero layers, determinism, the CUDA factory without CUDA.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "kernels/compressor.hpp"
#include "kernels/cuda_backend.hpp"
#include "kernels/error_feedback.hpp"
#include "kernels/quant_math.hpp"
#include "test_util.hpp"

using namespace lgreco;
using namespace lgreco::kernels;
using namespace lgreco::kernels::test;

namespace {
std::vector<MethodSpec> all_methods() {
  return {parse_method("none"),
          parse_method("fp16"),
          parse_method("bf16"),
          parse_method("powersgd", {{"rank", "2"}}),
          parse_method("powersgd", {{"rank", "4"}}),
          parse_method("topk", {{"density", "0.05"}}),
          parse_method("topk", {{"density", "0.05"}, {"selection", "dgc"}, {"encoding", "delta"}}),
          parse_method("randomk", {{"density", "0.1"}}),
          parse_method("randomk", {{"density", "0.1"}, {"scaled", "true"}}),
          parse_method("qsgd"),
          parse_method("qsgd", {{"encoding", "elias"}, {"norm", "max"}}),
          parse_method("maxmin"),
          parse_method("maxmin", {{"bits", "3"}, {"rounding", "nearest"}, {"bucket_size", "100"}}),
          parse_method("sign"),
          parse_method("terngrad"),
          parse_method("nuqsgd")};
}
}  // namespace

TEST_CASE("error feedback: e_new == acc − c bitwise, acc == g + e, for every method", "[ef]") {
  const std::vector<std::int64_t> shape = {48, 40};
  for (const MethodSpec& spec : all_methods()) {
    ErrorFeedback ef(make_compressor(spec));
    std::vector<float> acc(48 * 40), rec(48 * 40);
    for (std::uint64_t step = 0; step < 3; ++step) {
      const auto g = make_input(48 * 40, Dist::kNormal, 10 + step);
      const std::vector<float> e_before = ef.has_state(3) ? ef.state(3).residual : std::vector<float>(g.size(), 0.0f);
      LayerContext ctx;
      ctx.name = "layer3.weight";
      ctx.index = 3;
      ctx.step = step;
      ctx.seed = 99;
      ctx.shape = shape;
      const CompressInfo info = ef.step(g, acc, rec, ctx);
      const std::vector<float>& e = ef.state(3).residual;
      CAPTURE(describe(spec), step);
      for (std::size_t i = 0; i < g.size(); ++i) {
        REQUIRE(same_bits(acc[i], g[i] + e_before[i]));
        REQUIRE(same_bits(e[i], acc[i] - rec[i]));
      }
      // Sparse and exact methods keep or drop entries: c + e reproduces acc bitwise.
      if (spec.method == Method::kNone || spec.method == Method::kTopK ||
          (spec.method == Method::kRandomK && !spec.randomk.scaled))
        for (std::size_t i = 0; i < g.size(); ++i) REQUIRE(same_bits(rec[i] + e[i], acc[i]));
      // The reported size is the registry's for the shape and step, for every method and setting
      // (data-dependent codes are padded to their worst case); the code itself never exceeds it.
      const WireSize w = wire_size(spec, shape, step);
      CHECK(info.wire.collective == w.collective);
      CHECK(info.wire.bytes == w.bytes);
      CHECK(info.wire.allreduce_round_bytes == w.allreduce_round_bytes);
      CHECK(info.wire.allgather_bytes == w.allgather_bytes);
      CHECK(info.coded_bytes <= info.wire.bytes);
      const bool data_dependent = (spec.method == Method::kTopK && (spec.topk.selection == TopkSelection::kDgc ||
                                                                     spec.topk.encoding == TopkEncoding::kDelta)) ||
                                  (spec.method == Method::kQsgd && spec.qsgd.encoding == QsgdEncoding::kElias);
      if (!data_dependent) CHECK(info.coded_bytes == info.wire.bytes);
      CHECK(info.wire.bytes == info.wire.allreduce_round_bytes[0] + info.wire.allreduce_round_bytes[1] + info.wire.allgather_bytes);
    }
  }
}

TEST_CASE("data-dependent codes: top-k delta/DGC and QSGD Elias lengths follow their formulas, the wire their bound", "[wire]") {
  const auto g = make_input(5000, Dist::kNormal, 4);
  LayerContext ctx;
  ctx.name = "x";
  std::vector<float> out(g.size());
  {
    auto c = make_compressor(parse_method("topk", {{"density", "0.02"}, {"encoding", "delta"}}));
    LayerState st;
    const CompressInfo info = c->compress(g, out, st, ctx);
    std::vector<std::uint32_t> idx;
    for (std::uint32_t i = 0; i < g.size(); ++i)
      if (out[i] != 0.0f) idx.push_back(i);
    REQUIRE(idx.size() == 100);
    std::uint64_t bits = 0, prev = 0;
    for (std::size_t j = 0; j < idx.size(); ++j) {
      const std::uint64_t gap = j == 0 ? idx[0] + 1 : idx[j] - prev;
      bits += 2 * static_cast<std::uint64_t>(std::floor(std::log2(static_cast<double>(gap)))) + 1;
      prev = idx[j];
    }
    CHECK(info.encoding == TopkEncoding::kDelta);
    CHECK(info.coded_bytes == 4 * 100 + (bits + 7) / 8);
    CHECK(info.wire.bytes == 4 * 100 + (delta_bound_bits(5000, 100) + 7) / 8);
    CHECK(info.coded_bytes <= info.wire.bytes);
  }
  {
    auto c = make_compressor(parse_method("topk", {{"density", "0.02"}, {"selection", "dgc"}}));
    LayerState st;
    const CompressInfo info = c->compress(g, out, st, ctx);
    const auto kept = static_cast<std::uint64_t>(std::count_if(out.begin(), out.end(), [](float v) { return v != 0.0f; }));
    CHECK(info.kept == kept);
    CHECK(kept <= 100);
    CHECK(info.coded_bytes == std::min(8 * kept, (5000 + 7) / 8 + 4 * kept));
    CHECK(info.wire.bytes == std::min<std::uint64_t>(8 * 100, (5000 + 7) / 8 + 4 * 100));  // padded to k = 100
  }
  {
    auto c = make_compressor(parse_method("qsgd", {{"levels", "3"}, {"encoding", "elias"}, {"bucket_size", "1000"}}));
    LayerState st;
    const CompressInfo info = c->compress(g, out, st, ctx);
    // Recover ξ_i = |out_i| / (norm/s) per bucket and sum gamma(ξ+1) + sign bit.
    std::uint64_t bits = 0;
    for (std::size_t b = 0; b < 5; ++b) {
      double norm2 = 0;
      for (std::size_t i = b * 1000; i < (b + 1) * 1000; ++i) norm2 += static_cast<double>(g[i]) * g[i];
      const double unit = std::sqrt(norm2) / 3;
      for (std::size_t i = b * 1000; i < (b + 1) * 1000; ++i) {
        const auto xi = static_cast<std::uint64_t>(std::lround(std::fabs(out[i]) / unit));
        bits += 2 * static_cast<std::uint64_t>(std::floor(std::log2(static_cast<double>(xi + 1)))) + 1 + (xi ? 1 : 0);
      }
    }
    CHECK(info.coded_bytes == (bits + 7) / 8 + 4 * 5);
    // On the wire: 5000 codes of the longest length, 2·floor(log2 4) + 2 = 6 bits, and 5 norms.
    CHECK(info.wire.bytes == (5000 * 6 + 7) / 8 + 4 * 5);
  }
}

TEST_CASE("NaN and Inf are rejected with the layer and the first bad element", "[errors]") {
  for (const MethodSpec& spec : all_methods()) {
    for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                      -std::numeric_limits<float>::infinity()}) {
      auto g = make_input(300, Dist::kNormal, 1);
      g[123] = bad;
      g[200] = bad;
      ErrorFeedback ef(make_compressor(spec));
      LayerContext ctx;
      ctx.name = "encoder.fc1.weight";
      ctx.index = 17;
      std::vector<float> acc(300), rec(300);
      CAPTURE(describe(spec), bad);
      try {
        ef.step(g, acc, rec, ctx);
        FAIL("no InputError");
      } catch (const InputError& e) {
        const std::string what = e.what();
        CHECK_THAT(what, Catch::Contains("encoder.fc1.weight") && Catch::Contains("index 17") &&
                             Catch::Contains("element 123"));
      }
      LayerState st;
      CHECK_THROWS_AS(make_compressor(spec)->compress(g, rec, st, ctx), InputError);
    }
  }
  // Finite g whose sum with the residual overflows is caught on the EF-corrected input.
  ErrorFeedback ef(make_compressor(parse_method("topk", {{"density", "0.5"}})));
  LayerContext ctx;
  ctx.name = "big";
  std::vector<float> g = {3e38f, 1.0f}, acc(2), rec(2);
  ef.step(std::vector<float>{1.0f, 3e38f}, acc, rec, ctx);  // keeps 3e38, residual (1, 0)
  ef.state(0).residual[0] = 3e38f;
  CHECK_THROWS_WITH(ef.step(g, acc, rec, ctx), Catch::Contains("big") && Catch::Contains("element 0"));
}

TEST_CASE("finite input a method cannot represent is an error naming the method, never Inf/NaN out", "[errors]") {
  LayerContext ctx;
  ctx.name = "head.weight";
  ctx.index = 3;
  // The largest fp16 is 65504: 1e5 rounds to Inf.
  {
    std::vector<float> g = {1.0f, -2.0f, 1e5f, 0.5f}, rec(4);
    LayerState st;
    CHECK_THROWS_WITH(make_compressor(parse_method("fp16"))->compress(g, rec, st, ctx),
                      Catch::Contains("head.weight") && Catch::Contains("'fp16' cannot represent") &&
                          Catch::Contains("element 2"));
    CHECK(st.steps == 0);
    g[2] = 6e4f;  // representable: no error, and the value survives
    CHECK_NOTHROW(make_compressor(parse_method("fp16"))->compress(g, rec, st, ctx));
    CHECK(rec[2] == 60000.0f);
  }
  // A max-min bucket whose range (max − min) overflows fp32, and a QSGD bucket whose L2 norm does.
  for (const MethodSpec& spec : {parse_method("maxmin", {{"rounding", "nearest"}}), parse_method("maxmin"),
                                 parse_method("qsgd"), parse_method("nuqsgd")}) {
    CAPTURE(describe(spec));
    auto g = make_input(1000, Dist::kNormal, 5);
    g[10] = 3e38f;
    g[11] = -3e38f;
    std::vector<float> rec(g.size());
    LayerState st;
    CHECK_THROWS_WITH(make_compressor(spec)->compress(g, rec, st, ctx),
                      Catch::Contains("head.weight") && Catch::Contains("cannot represent"));
  }
  // Large but representable inputs pass the scan for every method.
  for (const MethodSpec& spec : all_methods()) {
    CAPTURE(describe(spec));
    auto g = make_input(1000, Dist::kNormal, 6);
    for (float& v : g) v *= 1e6f;
    std::vector<float> rec(g.size());
    LayerState st;
    if (spec.method == Method::kFp16) {
      CHECK_THROWS_AS(make_compressor(spec)->compress(g, rec, st, ctx), InputError);
    } else {
      CHECK_NOTHROW(make_compressor(spec)->compress(g, rec, st, ctx));
      CHECK(std::all_of(rec.begin(), rec.end(), [](float v) { return std::isfinite(v); }));
    }
  }
}

TEST_CASE("max-min level of a NaN quotient (range beyond FLT_MAX) is the top level", "[quantize]") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(maxmin_level(3e38f, -3e38f, inf, 0.5f, 15u) == 15u);
  CHECK(maxmin_level(-3e38f, -3e38f, inf, 0.5f, 15u) == 0u);
  CHECK(maxmin_level(1.0f, 0.0f, 0.25f, 0.5f, 3u) == 3u);
  CHECK(maxmin_level(0.3f, 0.0f, 0.25f, 0.5f, 3u) == 1u);
}

TEST_CASE("zero-length and all-zero layers work for every method", "[edge]") {
  for (const MethodSpec& spec : all_methods()) {
    CAPTURE(describe(spec));
    auto c = make_compressor(spec);
    LayerState st;
    LayerContext ctx;
    ctx.name = "empty";
    std::vector<float> none;
    const CompressInfo i0 = c->compress(none, none, st, ctx);
    const std::vector<std::int64_t> zero = {0};
    CHECK(i0.wire.bytes == wire_size(spec, zero).bytes);
    for (std::uint64_t n : {1ull, 15ull, 16ull, 1000ull, 4096ull}) {
      const std::vector<float> z(n, 0.0f);
      std::vector<float> out(n, 1.0f);
      const std::vector<std::int64_t> shape = {64, static_cast<std::int64_t>(n / 64)};
      ctx.shape = n % 64 == 0 ? std::span<const std::int64_t>(shape) : std::span<const std::int64_t>();
      LayerState s;
      c->compress(z, out, s, ctx);
      CAPTURE(n);
      for (float v : out) REQUIRE(v == 0.0f);
    }
  }
}

TEST_CASE("compression is deterministic for equal inputs, state and context", "[determinism]") {
  const auto g = make_input(2048, Dist::kHeavyTailed, 6);
  const std::vector<std::int64_t> shape = {32, 64};
  for (const MethodSpec& spec : all_methods()) {
    std::vector<float> a(g.size()), b(g.size());
    LayerState s1, s2;
    LayerContext ctx;
    ctx.name = "d";
    ctx.seed = 5;
    ctx.step = 2;
    ctx.shape = shape;
    make_compressor(spec)->compress(g, a, s1, ctx);
    make_compressor(spec)->compress(g, b, s2, ctx);
    CAPTURE(describe(spec));
    CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("input validation: sizes, shape and overlap", "[errors]") {
  auto c = make_compressor(parse_method("none"));
  LayerState st;
  LayerContext ctx;
  ctx.name = "v";
  std::vector<float> x(10, 1.0f), out(9);
  CHECK_THROWS_AS(c->compress(x, out, st, ctx), InputError);
  const std::vector<std::int64_t> shape = {3, 3};
  ctx.shape = shape;
  std::vector<float> o10(10);
  CHECK_THROWS_WITH(c->compress(x, o10, st, ctx), Catch::Contains("shape"));
  ctx.shape = {};
  CHECK_THROWS_WITH(c->compress(x, x, st, ctx), Catch::Contains("overlaps"));
  ErrorFeedback ef(make_compressor(parse_method("none")));
  std::vector<float> a(10), r(10);
  ef.step(x, a, r, ctx);
  std::vector<float> x2(11), a2(11), r2(11);
  CHECK_THROWS_WITH(ef.step(x2, a2, r2, ctx), Catch::Contains("error-feedback state"));
}

TEST_CASE("the CUDA backend without CUDA is CudaUnavailable", "[backend]") {
  CHECK(backend_from_name("cpu") == Backend::kCpu);
  CHECK(backend_from_name("cuda") == Backend::kCuda);
  CHECK_THROWS_AS(backend_from_name("tpu"), ConfigError);
  if (cuda::device_count() == 0) {
    CHECK_THROWS_AS(make_compressor(parse_method("topk"), Backend::kCuda), CudaUnavailable);
  } else {
    CHECK(make_compressor(parse_method("none"), Backend::kCuda)->backend() == Backend::kCuda);
  }
}
