// DGC's momentum correction with factor masking (through ErrorFeedback) and its warm-up density
// schedule (topk_density_at, wire sizes per step), against the model stated in
// kernels/error_feedback.hpp and kernels/wire.hpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "kernels/compressor.hpp"
#include "kernels/cpu/topk.hpp"
#include "kernels/error_feedback.hpp"
#include "kernels/method_json.hpp"
#include "kernels/wire.hpp"
#include "test_util.hpp"

using namespace lgreco;
using namespace lgreco::kernels;
using namespace lgreco::kernels::test;

namespace {

LayerContext ctx_of(std::uint64_t step, std::span<const std::int64_t> shape, std::uint64_t index = 5) {
  LayerContext c;
  c.name = "dgc.weight";
  c.index = index;
  c.step = step;
  c.seed = 4242;
  c.shape = shape;
  return c;
}

// The sent entries as (index, value) from a reconstruction: the sparse payload.
std::vector<std::pair<std::uint32_t, float>> sent_of(std::span<const std::uint32_t> idx, const std::vector<float>& c) {
  std::vector<std::pair<std::uint32_t, float>> out;
  for (std::uint32_t i : idx) out.emplace_back(i, c[i]);
  return out;
}

// Top-k payload bytes by the contract for a given k (encoding auto: min(pairs, bitmap), ties → pairs).
std::uint64_t auto_bytes(std::uint64_t n, std::uint64_t k) {
  const std::uint64_t pairs = 8 * k, bitmap = (n + 7) / 8 + 4 * k;
  return bitmap < pairs ? bitmap : pairs;
}

}  // namespace

TEST_CASE("momentum correction: three steps on a 6-element layer with k = 2, derived by hand", "[dgc][momentum]") {
  // density 0.3: k = ceil(0.3·6) = ceil(1.8) = 2. m = 0.5 and dyadic gradients: every fp32
  // operation below is exact, so the hand values are the bits the kernel must produce.
  const auto spec = parse_method("topk", {{"density", "0.3"}, {"momentum", "0.5"}});
  const std::vector<std::int64_t> shape = {6};
  ErrorFeedback ef(make_compressor(spec));
  std::vector<float> acc(6), c(6);
  using V = std::vector<float>;
  using S = std::vector<std::pair<std::uint32_t, float>>;

  // Step 0: u = 0.5·0 + g = g; v = 0 + u = g. Top-2 of |v|: |−4| (index 1), |3| (index 4).
  // Sent (1, −4), (4, 3); masking zeroes u and v there.
  const V g0 = {1, -4, 2, 0.5f, 3, -1};
  auto info = ef.step(g0, acc, c, ctx_of(0, shape));
  CHECK(acc == V{1, -4, 2, 0.5f, 3, -1});
  CHECK(sent_of(info.sent_indices, c) == S{{1, -4.0f}, {4, 3.0f}});
  CHECK(c == V{0, -4, 0, 0, 3, 0});
  CHECK(ef.state(5).velocity == V{1, 0, 2, 0.5f, 0, -1});
  CHECK(ef.state(5).residual == V{1, 0, 2, 0.5f, 0, -1});

  // Step 1: u = 0.5·(1, 0, 2, 0.5, 0, −1) + (2, 1, −1, 0.5, 1, 2) = (2.5, 1, 0, 0.75, 1, 1.5);
  // v = (1, 0, 2, 0.5, 0, −1) + u = (3.5, 1, 2, 1.25, 1, 0.5). Top-2: 3.5 (index 0), 2 (index 2).
  const V g1 = {2, 1, -1, 0.5f, 1, 2};
  info = ef.step(g1, acc, c, ctx_of(1, shape));
  CHECK(acc == V{3.5f, 1, 2, 1.25f, 1, 0.5f});
  CHECK(sent_of(info.sent_indices, c) == S{{0, 3.5f}, {2, 2.0f}});
  CHECK(ef.state(5).velocity == V{0, 1, 0, 0.75f, 1, 1.5f});
  CHECK(ef.state(5).residual == V{0, 1, 0, 1.25f, 1, 0.5f});

  // Step 2: u = 0.5·(0, 1, 0, 0.75, 1, 1.5) + (0, −2, 0, 1, −3, 0.5) = (0, −1.5, 0, 1.375, −2.5, 1.25);
  // v = (0, 1, 0, 1.25, 1, 0.5) + u = (0, −0.5, 0, 2.625, −1.5, 1.75). Top-2: 2.625 (3), 1.75 (5).
  const V g2 = {0, -2, 0, 1, -3, 0.5f};
  info = ef.step(g2, acc, c, ctx_of(2, shape));
  CHECK(acc == V{0, -0.5f, 0, 2.625f, -1.5f, 1.75f});
  CHECK(sent_of(info.sent_indices, c) == S{{3, 2.625f}, {5, 1.75f}});
  CHECK(ef.state(5).velocity == V{0, -1.5f, 0, 0, -2.5f, 0});
  CHECK(ef.state(5).residual == V{0, -0.5f, 0, 0, -1.5f, 0});

  // Without momentum (plain error feedback) step 1 would select differently: acc = e + g =
  // (3, 1, 1, 1, 1, 1) sends index 0 and then the lowest-index tie, 1 — so m really matters here.
  ErrorFeedback plain(make_compressor(parse_method("topk", {{"density", "0.3"}})));
  plain.step(g0, acc, c, ctx_of(0, shape));
  info = plain.step(g1, acc, c, ctx_of(1, shape));
  CHECK(acc == V{3, 1, 1, 1, 1, 1});
  CHECK(sent_of(info.sent_indices, c) == S{{0, 3.0f}, {1, 1.0f}});
  CHECK(plain.state(5).velocity.empty());
}

TEST_CASE("momentum 0 is today's error-feedback top-k, bit for bit (property over random inputs)", "[dgc][momentum]") {
  // The reference is written out here from the EF rule: acc = g + e; indices by cpu::topk_exact or
  // cpu::topk_dgc (stream_of(step, layer), default sampling); c = acc at them; e ← acc − c.
  for (const char* sel : {"exact", "dgc"})
    for (const Dist d : {Dist::kNormal, Dist::kHeavyTailed, Dist::kManyTies, Dist::kSignedZeros})
      for (const std::uint64_t n : {1u, 33u, 1000u, 5000u}) {
        const auto spec = parse_method("topk", {{"density", "0.02"}, {"selection", sel}, {"momentum", "0"}});
        const std::vector<std::int64_t> shape = {static_cast<std::int64_t>(n)};
        ErrorFeedback ef(make_compressor(spec));
        std::vector<float> e(n, 0.0f), acc(n), c(n), ref_acc(n), ref_c(n);
        std::vector<std::uint32_t> idx;
        for (std::uint64_t step = 0; step < 4; ++step) {
          CAPTURE(sel, dist_name(d), n, step);
          const auto g = make_input(n, d, 100 * n + step);
          const LayerContext ctx = ctx_of(step, shape);
          const auto info = ef.step(g, acc, c, ctx);
          for (std::size_t i = 0; i < n; ++i) ref_acc[i] = g[i] + e[i];
          const std::uint64_t k = sparse_k(n, 0.02);
          if (std::string(sel) == "exact") cpu::topk_exact(ref_acc, k, idx);
          else cpu::topk_dgc(ref_acc, k, ctx.seed, rng::stream_of(step, ctx.index), cpu::DgcSampling{}, idx);
          std::fill(ref_c.begin(), ref_c.end(), 0.0f);
          for (auto i : idx) ref_c[i] = ref_acc[i];
          for (std::size_t i = 0; i < n; ++i) e[i] = ref_acc[i] - ref_c[i];
          REQUIRE(info.kept == idx.size());
          REQUIRE(std::equal(idx.begin(), idx.end(), info.sent_indices.begin(), info.sent_indices.end()));
          for (std::size_t i = 0; i < n; ++i) {
            REQUIRE(same_bits(acc[i], ref_acc[i]));
            REQUIRE(same_bits(c[i], ref_c[i]));
            REQUIRE(same_bits(ef.state(5).residual[i], e[i]));
          }
          REQUIRE(ef.state(5).velocity.empty());
        }
      }
}

TEST_CASE("momentum masking and conservation: u, v zero where sent; Σ sent + v_T = Σ U_t", "[dgc][momentum]") {
  // Model (kernels/error_feedback.hpp): U_t = m·u_{t−1} + g_t (fp32), acc_t = e_{t−1} + U_t,
  // c_t = acc_t on the sent set S_t and 0 elsewhere, e_t = acc_t − c_t, u_t = U_t off S_t, 0 on S_t.
  // Exact per element and step: c_t + e_t == acc_t and acc_t == fl(e_{t−1} + U_t). Summed:
  // Σ_t c_t + e_T = Σ_t U_t + Σ_t δ_t with |δ_t| ≤ 2^−24·|acc_t| (the rounding of each addition).
  struct Case {
    const char* sel;
    const char* m;
    Dist dist;
    bool integers;  // integer gradients with m = 0.5: every operation exact, so the sum is exact
  };
  const std::vector<Case> cases = {{"exact", "0.9", Dist::kNormal, false},  {"dgc", "0.9", Dist::kNormal, false},
                                   {"dgc", "0.9", Dist::kHeavyTailed, false}, {"exact", "0.5", Dist::kNormal, true},
                                   {"dgc", "0.5", Dist::kNormal, true},       {"exact", "0.9", Dist::kManyTies, false}};
  constexpr std::uint64_t n = 3000;
  constexpr int kSteps = 6;
  const std::vector<std::int64_t> shape = {30, 100};
  for (const Case& cs : cases) {
    const auto spec = parse_method("topk", {{"density", "0.01"}, {"selection", cs.sel}, {"momentum", cs.m}});
    const float m = static_cast<float>(spec.topk.momentum);
    ErrorFeedback ef(make_compressor(spec));
    std::vector<float> acc(n), c(n), u_prev(n, 0.0f), e_prev(n, 0.0f), U(n);
    std::vector<double> sum_c(n, 0.0), sum_u(n, 0.0), bound(n, 0.0);
    for (int t = 0; t < kSteps; ++t) {
      CAPTURE(cs.sel, cs.m, dist_name(cs.dist), cs.integers, t);
      auto g = make_input(n, cs.dist, 77 + static_cast<std::uint64_t>(t));
      if (cs.integers)
        for (auto& v : g) v = std::round(std::clamp(v * 4.0f, -8.0f, 8.0f));
      for (std::size_t i = 0; i < n; ++i) U[i] = m * u_prev[i] + g[i];
      const auto info = ef.step(g, acc, c, ctx_of(static_cast<std::uint64_t>(t), shape));
      const auto& u = ef.state(5).velocity;
      const auto& e = ef.state(5).residual;
      REQUIRE(info.sent_indices.size() == info.kept);
      std::vector<char> sent(n, 0);
      for (auto j : info.sent_indices) {
        sent[j] = 1;
        REQUIRE(u[j] == 0.0f);  // momentum factor masking
        REQUIRE(e[j] == 0.0f);  // v masked: acc − acc
        REQUIRE(same_bits(c[j], acc[j]));
      }
      for (std::size_t i = 0; i < n; ++i) {
        REQUIRE(same_bits(acc[i], e_prev[i] + U[i]));
        REQUIRE(c[i] + e[i] == acc[i]);
        if (!sent[i]) {
          REQUIRE(c[i] == 0.0f);
          REQUIRE(same_bits(u[i], U[i]));
        }
        sum_c[i] += c[i];
        sum_u[i] += U[i];
        bound[i] += std::ldexp(std::fabs(static_cast<double>(acc[i])), -24);
      }
      u_prev = u;
      e_prev = e;
    }
    const auto& e_T = ef.state(5).residual;
    for (std::size_t i = 0; i < n; ++i) {
      CAPTURE(cs.sel, cs.m, dist_name(cs.dist), i, sum_c[i], e_T[i], sum_u[i]);
      const double lhs = sum_c[i] + e_T[i];
      if (cs.integers) REQUIRE(lhs == sum_u[i]);
      else REQUIRE(std::fabs(lhs - sum_u[i]) <= bound[i] * (1 + 1e-9) + 1e-300);
    }
  }
}

TEST_CASE("momentum: velocity state follows the layer (reset, length change, other layers)", "[dgc][momentum]") {
  const auto spec = parse_method("topk", {{"density", "0.1"}, {"momentum", "0.9"}});
  ErrorFeedback ef(make_compressor(spec));
  const std::vector<std::int64_t> s10 = {10}, s12 = {12};
  const auto g = make_input(10, Dist::kNormal, 1);
  ef.step(g, {}, {}, ctx_of(0, s10, 1));
  CHECK(ef.state(1).velocity.size() == 10);
  CHECK_FALSE(ef.has_state(2));
  const auto g12 = make_input(12, Dist::kNormal, 2);
  CHECK_THROWS_AS(ef.step(g12, {}, {}, ctx_of(1, s12, 1)), InputError);
  ef.reset();
  CHECK_FALSE(ef.has_state(1));
  ef.step(g12, {}, {}, ctx_of(1, s12, 1));
  CHECK(ef.state(1).velocity.size() == 12);
}

TEST_CASE("warm-up: density per step follows DGC's schedule; bytes per step follow it", "[dgc][warmup]") {
  // Model: stage j = floor(t / W) has density 0.25·4^−j while that is above the target, then the
  // target. Expected densities are built here by repeated division (exact for powers of two).
  auto expected_density = [](double target, std::int64_t W, std::uint64_t t) {
    if (W == 0) return target;
    double d = 0.25;
    for (std::uint64_t j = 0; j < t / static_cast<std::uint64_t>(W); ++j) d /= 4.0;
    return d > target ? d : target;
  };
  // DGC's published sequence for a 0.1 % target: 25 %, 6.25 %, 1.5625 %, 0.390625 %, 0.1 %.
  TopkParams p;
  p.density = 0.001;
  p.warmup_steps = 2;
  const std::vector<double> dgc = {0.25, 0.25, 0.0625, 0.0625, 0.015625, 0.015625, 0.00390625, 0.00390625, 0.001, 0.001, 0.001};
  for (std::uint64_t t = 0; t < dgc.size(); ++t) CHECK(topk_density_at(p, t) == dgc[t]);
  CHECK(topk_density_at(p, std::uint64_t{1} << 62) == 0.001);
  p.warmup_steps = 0;
  CHECK(topk_density_at(p, 0) == 0.001);
  p.density = 0.5;  // target above 25 %: no warm-up stage
  p.warmup_steps = 3;
  CHECK(topk_density_at(p, 0) == 0.5);

  const std::uint64_t n = 20000;
  const std::vector<std::int64_t> shape = {100, 200};
  for (const char* sel : {"exact", "dgc"})
    for (const char* enc : {"auto", "pairs", "bitmap"})
      for (const std::int64_t W : {0, 1, 3}) {
        const auto spec = parse_method("topk", {{"density", "0.001"}, {"selection", sel}, {"encoding", enc},
                                                {"warmup_steps", std::to_string(W)}, {"momentum", "0.9"}});
        ErrorFeedback ef(make_compressor(spec));
        // Steps start at 4: trace step ids, not row numbers, set the stage.
        for (std::uint64_t t = 4; t < 20; ++t) {
          const double d = expected_density(0.001, W, t);
          const auto k = static_cast<std::uint64_t>(std::max(1.0, std::ceil(d * static_cast<double>(n))));
          CAPTURE(sel, enc, W, t, d, k);
          CHECK(topk_density_at(spec.topk, t) == d);
          const auto g = make_input(n, Dist::kNormal, 900 + t);
          const auto info = ef.step(g, {}, {}, ctx_of(t, shape));
          const std::uint64_t kept = info.kept;
          if (std::string(sel) == "exact") REQUIRE(kept == k);
          else REQUIRE(kept <= k);
          const std::string e(enc);
          // On the wire: the formula at the step's density with k entries (DGC pads k' ≤ k to k);
          // the code itself has the k' entries kept, in the encoding chosen for k.
          const std::uint64_t formula = e == "pairs" ? 8 * k : e == "bitmap" ? (n + 7) / 8 + 4 * k : auto_bytes(n, k);
          CHECK(wire_size(spec, shape, t).bytes == formula);
          CHECK(info.wire.bytes == formula);
          CHECK(info.wire.allgather_bytes == formula);
          const bool bitmap = e == "bitmap" || (e == "auto" && auto_bytes(n, k) != 8 * k);
          CHECK(info.coded_bytes == (bitmap ? (n + 7) / 8 + 4 * kept : 8 * kept));
        }
        // The step-free form is the steady state at the target density.
        const std::uint64_t k_target = sparse_k(n, 0.001);
        CHECK(wire_size(spec, shape).bytes == (std::string(enc) == "bitmap" ? (n + 7) / 8 + 4 * k_target : 8 * k_target));
      }
}

TEST_CASE("DGC parameters: parsing, round trip, clear errors naming field and value", "[dgc][method]") {
  const auto s = parse_method("topk", {{"momentum", "0.9"}, {"warmup_steps", "250"}, {"selection", "dgc"}});
  CHECK(s.topk.momentum == 0.9);
  CHECK(s.topk.warmup_steps == 250);
  CHECK(parse_method("topk", resolved_params(s)) == s);
  CHECK(describe(s).find("momentum=0.9") != std::string::npos);
  CHECK(describe(s).find("warmup_steps=250") != std::string::npos);
  const auto d = parse_method("topk");
  CHECK(d.topk.momentum == 0.0);
  CHECK(d.topk.warmup_steps == 0);
  CHECK(describe(d) == "topk density=0.01");
  const auto j = method_to_json(s);
  CHECK(j["params"]["momentum"] == 0.9);
  CHECK(j["params"]["warmup_steps"] == 250);
  CHECK(method_from_json(j) == s);

  struct Bad {
    const char* key;
    const char* value;
    const char* expect;
  };
  for (const Bad& b : {Bad{"momentum", "1", "[0, 1)"}, Bad{"momentum", "-0.1", "[0, 1)"}, Bad{"momentum", "1.5", "[0, 1)"},
                       Bad{"momentum", "nan", "a number"}, Bad{"momentum", "fast", "a number"},
                       Bad{"warmup_steps", "-1", "an integer in [0"}, Bad{"warmup_steps", "2.5", "an integer in [0"},
                       Bad{"warmup_steps", "many", "expected an integer in [0"}}) {
    CAPTURE(b.key, b.value);
    REQUIRE_THROWS_AS(parse_method("topk", {{b.key, b.value}}), ConfigError);
    try {
      parse_method("topk", {{b.key, b.value}});
    } catch (const ConfigError& e) {
      const std::string msg = e.what();
      CAPTURE(msg);
      CHECK(msg.find(std::string("'") + b.key + "'") != std::string::npos);
      CHECK(msg.find(std::string("'") + b.value + "'") != std::string::npos);
      CHECK(msg.find(b.expect) != std::string::npos);
    }
  }
  // JSON path: the error names where, the field and the value.
  try {
    method_from_json(nlohmann::json::parse(R"({"method": "topk", "params": {"momentum": 1.0}})"), "phases[0].layers['fc']");
    FAIL("momentum 1.0 accepted");
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    CAPTURE(msg);
    CHECK(msg.find("phases[0].layers['fc']") != std::string::npos);
    CHECK(msg.find("'momentum' = '1'") != std::string::npos);
  }
  // Not parameters of other methods.
  CHECK_THROWS_AS(parse_method("randomk", {{"momentum", "0.9"}}), ConfigError);
  CHECK_THROWS_AS(parse_method("qsgd", {{"warmup_steps", "3"}}), ConfigError);
}
