// Wire sizes: each method's documented formula (written out again here, independently of the
// library's helpers), the PowerSGD compressibility rule, and the PowerSGD paper's ResNet-18 ratios.
#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>

#include "kernels/compressor.hpp"
#include "kernels/wire.hpp"
#include "test_util.hpp"

using namespace lgreco;
using namespace lgreco::kernels;

namespace {
std::uint64_t cdiv(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }
std::uint64_t bits_for(std::uint64_t values) {  // ceil(log2(values)) by counting
  std::uint64_t b = 0;
  while ((std::uint64_t{1} << b) < values) ++b;
  return b;
}
std::uint64_t k_of(std::uint64_t n, double d) {
  return n == 0 ? 0 : std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(d * static_cast<double>(n))));
}
}  // namespace

TEST_CASE("wire size of every data-independent method equals its formula", "[wire]") {
  for (std::uint64_t n : {0ull, 1ull, 7ull, 15ull, 16ull, 17ull, 1000ull, 1025ull, 65537ull}) {
    CAPTURE(n);
    const std::vector<std::int64_t> shape = {static_cast<std::int64_t>(n)};
    auto ws = [&](const char* m, ParamList p = {}) { return wire_size(parse_method(m, p), shape); };
    CHECK(ws("none").bytes == 4 * n);
    CHECK(ws("fp16").bytes == 2 * n);
    CHECK(ws("bf16").bytes == 2 * n);
    CHECK(ws("fp16").collective == Collective::kAllreduce);
    CHECK(ws("randomk").bytes == 4 * k_of(n, 0.01));
    CHECK(ws("randomk").collective == Collective::kAllreduce);
    const std::uint64_t k = k_of(n, 0.01);
    CHECK(ws("topk", {{"encoding", "pairs"}}).bytes == 8 * k);
    CHECK(ws("topk", {{"encoding", "bitmap"}}).bytes == cdiv(n, 8) + 4 * k);
    CHECK(ws("topk").bytes == std::min(8 * k, cdiv(n, 8) + 4 * k));
    CHECK(ws("topk").collective == Collective::kAllgather);
    for (int s : {1, 3, 7, 100}) {
      const auto w = ws("qsgd", {{"levels", std::to_string(s)}, {"bucket_size", "128"}});
      CHECK(w.bytes == cdiv(n * bits_for(2 * s + 1), 8) + 4 * cdiv(n, 128));
      CHECK(w.collective == Collective::kAllgather);
    }
    for (int b = 1; b <= 8; ++b) {
      const auto w = ws("maxmin", {{"bits", std::to_string(b)}, {"bucket_size", "100"}});
      CHECK(w.bytes == (n < 16 ? 4 * n : cdiv(b * n, 8) + 8 * cdiv(n, 100)));
    }
    CHECK(ws("sign", {{"bucket_size", "64"}}).bytes == cdiv(n, 8) + 4 * cdiv(n, 64));
    CHECK(ws("terngrad").bytes == cdiv(2 * n, 8) + 4);
    for (int s : {1, 2, 4, 6, 14}) {
      const auto w = ws("nuqsgd", {{"levels", std::to_string(s)}});
      CHECK(w.bytes == cdiv(n * (1 + bits_for(s + 2)), 8) + 4 * cdiv(n, 512));
    }
  }
}

TEST_CASE("top-k auto encoding switches to the bitmap exactly when it is strictly smaller", "[wire]") {
  // bitmap < pairs ⇔ ceil(N/8) + 4k < 8k ⇔ ceil(N/8) < 4k.
  const std::uint64_t n = 3200;  // ceil(N/8) = 400: k = 100 ties (pairs), k = 101 bitmap
  CHECK(topk_auto_encoding(n, 100) == TopkEncoding::kPairs);
  CHECK(topk_auto_encoding(n, 101) == TopkEncoding::kBitmap);
  CHECK(topk_auto_encoding(n, 99) == TopkEncoding::kPairs);
}

TEST_CASE("Elias-gamma delta bits are the sum of the gap code lengths", "[wire]") {
  // indices 0, 2, 3, 10 → gaps 1, 2, 1, 7 → gamma lengths 1, 3, 1, 5 = 10 bits
  const std::vector<std::uint32_t> idx = {0, 2, 3, 10};
  CHECK(delta_gamma_bits(idx) == 10);
  CHECK(topk_bytes(TopkEncoding::kDelta, 100, 4, 10) == 16 + 2);
  CHECK(elias_gamma_bits(1) == 1);
  CHECK(elias_gamma_bits(8) == 7);
  CHECK(elias_gamma_bits(15) == 7);
}

namespace {
// The largest Σ gamma_len over every set of k strictly increasing indices in [0, n), by brute force.
std::uint64_t brute_delta_bound(std::uint32_t n, std::uint32_t k) {
  std::uint64_t best = 0;
  std::vector<std::uint32_t> idx(k);
  for (std::uint32_t mask = 0; mask < (1u << n); ++mask) {
    if (static_cast<std::uint32_t>(__builtin_popcount(mask)) != k) continue;
    std::uint32_t j = 0;
    for (std::uint32_t i = 0; i < n; ++i)
      if (mask & (1u << i)) idx[j++] = i;
    best = std::max(best, delta_gamma_bits(idx));
  }
  return best;
}
}  // namespace

TEST_CASE("the delta encoding is padded to the largest code of any k indices", "[wire]") {
  // Every set of k indices out of n ≤ 14, checked exhaustively against the closed form.
  for (std::uint32_t n = 1; n <= 14; ++n) {
    for (std::uint32_t k = 1; k <= n; ++k) {
      CAPTURE(n, k);
      CHECK(delta_bound_bits(n, k) == brute_delta_bound(n, k));
    }
  }
  CHECK(delta_bound_bits(1000, 0) == 0);
  // The wire size of delta is that bound, for every step and data: k = 10 of N = 1000.
  const MethodSpec d = parse_method("topk", {{"encoding", "delta"}, {"density", "0.01"}});
  const std::vector<std::int64_t> shape = {1000};
  CHECK(wire_size(d, shape).bytes == 4 * 10 + cdiv(delta_bound_bits(1000, 10), 8));
  // Equal gaps of 100 give 10 × gamma_len(100) = 130 bits, but five gaps of 128 and five of 64
  // (960 ≤ 1000) give 5 × 15 + 5 × 13 = 140: the bound.
  CHECK(delta_bound_bits(1000, 10) == 140);
}

TEST_CASE("QSGD Elias codes are padded to the longest code; never below fixed width", "[wire]") {
  for (int s : {1, 2, 3, 7, 8, 127, 32767}) {
    // Longest code: level ξ = s → gamma(ξ + 1) + a sign bit.
    const auto longest = elias_gamma_bits(static_cast<std::uint64_t>(s) + 1) + 1;
    CAPTURE(s);
    CHECK(static_cast<std::uint64_t>(qsgd_elias_max_bits(s)) == longest);
    CHECK(qsgd_elias_max_bits(s) >= qsgd_code_bits(s));
    const MethodSpec q = parse_method("qsgd", {{"levels", std::to_string(s)}, {"encoding", "elias"}, {"bucket_size", "100"}});
    const std::vector<std::int64_t> shape = {1001};
    CHECK(wire_size(q, shape).bytes == cdiv(1001 * longest, 8) + 4 * cdiv(1001, 100));
  }
}

TEST_CASE("wire stages follow the DGC warm-up and are one stage otherwise", "[wire]") {
  const std::vector<std::int64_t> shape = {4096};
  const MethodSpec warm = parse_method("topk", {{"density", "0.001"}, {"warmup_steps", "10"}, {"encoding", "pairs"}});
  const auto st = wire_stages(warm, shape, 5, std::nullopt);
  // Densities 25 %, 6.25 %, 1.5625 %, 0.390625 % for steps [5,10), [10,20), [20,30), [30,40), then 0.1 %.
  REQUIRE(st.size() == 5);
  const std::vector<std::uint64_t> starts = {5, 10, 20, 30, 40};
  const std::vector<double> dens = {0.25, 0.0625, 0.015625, 0.00390625, 0.001};
  for (std::size_t i = 0; i < st.size(); ++i) {
    CAPTURE(i);
    CHECK(st[i].from_step == starts[i]);
    CHECK(st[i].plan.k == k_of(4096, dens[i]));
    CHECK(st[i].plan.size.bytes == 8 * k_of(4096, dens[i]));
    if (i + 1 < st.size()) CHECK(st[i].to_step == starts[i + 1]);
  }
  CHECK_FALSE(st.back().to_step.has_value());
  // A closed range cuts the stages; other methods have one stage.
  const auto cut = wire_stages(warm, shape, 12, 25);
  REQUIRE(cut.size() == 2);
  CHECK(cut[0].from_step == 12);
  CHECK(cut[1].to_step == 25);
  CHECK(wire_stages(parse_method("powersgd"), shape, 0, std::nullopt).size() == 1);
}

TEST_CASE("PowerSGD compressibility rule and round split", "[wire][powersgd]") {
  const MethodSpec p = parse_method("powersgd");  // rank 4, rate 2
  struct Case {
    std::vector<std::int64_t> shape;
  };
  for (const auto& shape : std::vector<std::vector<std::int64_t>>{
           {64, 3, 3, 3}, {64}, {10, 512}, {512, 512, 3, 3}, {6, 6}, {2, 3}, {100, 100}, {1, 1000}}) {
    const std::uint64_t numel = std::accumulate(shape.begin(), shape.end(), std::uint64_t{1},
                                                [](std::uint64_t a, std::int64_t b) { return a * static_cast<std::uint64_t>(b); });
    const std::uint64_t n = static_cast<std::uint64_t>(shape[0]), m = numel / n;
    const std::uint64_t r = std::min<std::uint64_t>({n, m, 4});
    const bool compress = (n + m) * r * 2 < n * m;
    const WireSize w = wire_size(p, shape);
    CAPTURE(n, m, r, compress);
    CHECK(powersgd_view(shape, p.powersgd).compressed == compress);
    if (compress) {
      CHECK(w.allreduce_round_bytes[0] == 4 * r * n);
      CHECK(w.allreduce_round_bytes[1] == 4 * r * m);
    } else {
      CHECK(w.allreduce_round_bytes[0] == 4 * numel);
      CHECK(w.allreduce_round_bytes[1] == 0);
    }
    CHECK(w.bytes == w.allreduce_round_bytes[0] + w.allreduce_round_bytes[1]);
  }
}

TEST_CASE("PowerSGD ratios of the CIFAR ResNet-18 match the PowerSGD paper (243x, 136x, 72x)", "[wire][powersgd]") {
  // ResNet-18, CIFAR variant (3x3 stem, 10 classes): 11,173,962 parameters.
  std::vector<std::vector<std::int64_t>> shapes = {{64, 3, 3, 3}, {64}, {64}};
  auto block = [&](std::int64_t cin, std::int64_t cout, bool shortcut) {
    for (auto s : std::vector<std::vector<std::int64_t>>{{cout, cin, 3, 3}, {cout}, {cout}, {cout, cout, 3, 3}, {cout}, {cout}})
      shapes.push_back(s);
    if (shortcut)
      for (auto s : std::vector<std::vector<std::int64_t>>{{cout, cin, 1, 1}, {cout}, {cout}}) shapes.push_back(s);
  };
  std::int64_t cin = 64;
  for (std::int64_t cout : {64, 128, 256, 512}) {
    block(cin, cout, cin != cout);
    block(cout, cout, false);
    cin = cout;
  }
  shapes.push_back({10, 512});
  shapes.push_back({10});
  std::uint64_t total = 0;
  for (const auto& s : shapes) total += wire_numel(s);
  REQUIRE(total == 11173962);
  const std::vector<std::pair<int, double>> paper = {{1, 243}, {2, 136}, {4, 72}};
  for (const auto& [rank, ratio] : paper) {
    std::uint64_t bytes = 0;
    const MethodSpec p = parse_method("powersgd", {{"rank", std::to_string(rank)}});
    for (const auto& s : shapes) bytes += wire_size(p, s).bytes;
    const double got = 4.0 * static_cast<double>(total) / static_cast<double>(bytes);
    CAPTURE(rank, got);
    CHECK(std::round(got) == ratio);  // the paper reports whole ratios
  }
}
