// CPU compression kernels, one core, n = 2^24 fp32 (64 MiB). Figure: fp32_GBps = 4n / time
// (decimal GB/s of gradient processed). Every benchmark checks its result against nth_element or
// a stated property before timing; a failed check aborts the benchmark with SkipWithError.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include "core/rng.hpp"
#include "kernels/compressor.hpp"
#include "kernels/cpu/cast.hpp"
#include "kernels/cpu/quantize.hpp"
#include "kernels/cpu/topk.hpp"
#include "kernels/wire.hpp"

using namespace lgreco::kernels;

namespace {
constexpr std::uint64_t kN = std::uint64_t{1} << 24;

const std::vector<float>& input() {
  static const std::vector<float> x = [] {
    std::vector<float> v(kN);
    for (std::uint64_t i = 0; i < kN; ++i) v[i] = static_cast<float>(lgreco::rng::normal_at(1, 0, i));
    return v;
  }();
  return x;
}

void set_rate(benchmark::State& st) {
  st.counters["fp32_GBps"] = benchmark::Counter(4.0 * static_cast<double>(kN) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations()) * static_cast<std::int64_t>(4 * kN));
}

float nth_threshold(const std::vector<float>& x, std::uint64_t k) {
  std::vector<float> a(x.size());
  std::transform(x.begin(), x.end(), a.begin(), [](float v) { return std::fabs(v); });
  std::nth_element(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(k - 1), a.end(), std::greater<float>());
  return a[k - 1];
}

void BM_nth_element_baseline(benchmark::State& st) {
  const auto& x = input();
  const std::uint64_t k = sparse_k(kN, 0.01);
  std::vector<float> a(kN);
  for (auto _ : st) {
    std::transform(x.begin(), x.end(), a.begin(), [](float v) { return std::fabs(v); });
    std::nth_element(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(k - 1), a.end(), std::greater<float>());
    benchmark::DoNotOptimize(a[k - 1]);
  }
  set_rate(st);
}

void BM_topk_select(benchmark::State& st) {  // radix select + the k indices (the compression)
  const auto& x = input();
  const std::uint64_t k = sparse_k(kN, 0.01);
  const cpu::KthKey kk = cpu::radix_select_abs(x, k);
  float t;
  std::memcpy(&t, &kk.key, sizeof t);
  std::vector<std::uint32_t> idx;
  cpu::topk_exact(x, k, idx);
  bool ok = t == nth_threshold(x, k) && idx.size() == k;
  for (auto i : idx) ok = ok && std::fabs(x[i]) >= t;
  if (!ok) {
    st.SkipWithError("radix select disagrees with nth_element");
    return;
  }
  for (auto _ : st) {
    cpu::topk_exact(x, k, idx);
    benchmark::DoNotOptimize(idx.data());
  }
  set_rate(st);
}

// Full Compressor call: validation (finite check), selection, reconstruction written.
void BM_compressor(benchmark::State& st, const char* method, ParamList params, double max_rel) {
  const auto& x = input();
  auto c = make_compressor(parse_method(method, params));
  std::vector<float> out(kN);
  LayerState ls;
  LayerContext ctx;
  ctx.name = "bench";
  ctx.seed = 3;
  const CompressInfo info = c->compress(x, out, ls, ctx);
  // Property: the relative reconstruction error is below the method's stated bound (sparse:
  // sqrt(1 − kept energy) < 1; QSGD 4-bit/bucket 512: variance bound √d/s = 3.2 → rel < 1.8;
  // TernGrad: E‖ĝ−g‖² ≤ s·‖g‖₁ → rel < 3 for normal input of this size; casts: < 2^-8).
  double err = 0, nrm = 0;
  for (std::uint64_t i = 0; i < kN; ++i) {
    err += (static_cast<double>(out[i]) - x[i]) * (static_cast<double>(out[i]) - x[i]);
    nrm += static_cast<double>(x[i]) * x[i];
  }
  const double rel = std::sqrt(err / nrm);
  if (!(rel < max_rel) || info.wire.bytes == 0) {
    st.SkipWithError("reconstruction error out of range");
    return;
  }
  for (auto _ : st) {
    c->compress(x, out, ls, ctx);
    benchmark::DoNotOptimize(out.data());
  }
  st.counters["rel_error"] = rel;
  st.counters["wire_MB"] = static_cast<double>(info.wire.bytes) * 1e-6;
  set_rate(st);
}

// Encode only (codes + scales), the part a GPU kernel pairs with communication.
void BM_maxmin_encode(benchmark::State& st) {
  const auto& x = input();
  MaxMinParams p;  // 4 bits, bucket 1024, stochastic
  p.rounding = st.range(0) ? Rounding::kStochastic : Rounding::kNearest;
  std::vector<std::uint8_t> codes(cpu::packed_bytes(kN, p.bits));
  std::vector<float> mins(cpu::bucket_count(kN, p.bucket_size)), units(mins.size()), out(kN);
  cpu::maxmin_compress(x, p, 1, 2, codes, mins, units);
  cpu::maxmin_decompress(codes, mins, units, p, out);
  for (std::uint64_t i = 0; i < kN; ++i)
    if (!(std::fabs(out[i] - x[i]) <= units[i / 1024] * 1.0001f)) {
      st.SkipWithError("max-min value further than one unit from the input");
      return;
    }
  for (auto _ : st) {
    cpu::maxmin_compress(x, p, 1, 2, codes, mins, units);
    benchmark::DoNotOptimize(codes.data());
  }
  set_rate(st);
}

void BM_qsgd_encode(benchmark::State& st) {
  const auto& x = input();
  QsgdParams p;  // 4 bits (s = 7), bucket 512, L2
  std::vector<std::uint8_t> codes(cpu::packed_bytes(kN, qsgd_code_bits(p.levels)));
  std::vector<float> norms(cpu::bucket_count(kN, p.bucket_size)), out(kN);
  cpu::qsgd_compress(x, p, 1, 2, codes, norms);
  cpu::qsgd_decompress(codes, norms, p, out);
  for (std::uint64_t i = 0; i < kN; ++i)
    if (!(std::fabs(out[i] - x[i]) <= norms[i / 512] / 7.0f * 1.0001f)) {
      st.SkipWithError("QSGD value further than one level from the input");
      return;
    }
  for (auto _ : st) {
    cpu::qsgd_compress(x, p, 1, 2, codes, norms);
    benchmark::DoNotOptimize(codes.data());
  }
  set_rate(st);
}

void BM_sign_encode(benchmark::State& st) {
  const auto& x = input();
  SignParams p;
  std::vector<std::uint8_t> codes(cpu::packed_bytes(kN, 1));
  std::vector<float> scales(cpu::bucket_count(kN, p.bucket_size)), out(kN);
  cpu::sign_compress(x, p, codes, scales);
  cpu::sign_decompress(codes, scales, p, out);
  for (std::uint64_t i = 0; i < kN; ++i)
    if (out[i] != (x[i] < 0 ? -scales[i / 1024] : scales[i / 1024])) {
      st.SkipWithError("sign decode mismatch");
      return;
    }
  for (auto _ : st) {
    cpu::sign_compress(x, p, codes, scales);
    benchmark::DoNotOptimize(codes.data());
  }
  set_rate(st);
}

void BM_memcpy_baseline(benchmark::State& st) {
  const auto& x = input();
  std::vector<float> out(kN);
  for (auto _ : st) {
    std::memcpy(out.data(), x.data(), 4 * kN);
    benchmark::DoNotOptimize(out.data());
  }
  set_rate(st);
}

}  // namespace

BENCHMARK(BM_memcpy_baseline)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_nth_element_baseline)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_topk_select)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_maxmin_encode)->Arg(1)->Arg(0)->ArgName("stochastic")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_qsgd_encode)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_sign_encode)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_compressor, topk, "topk", ParamList{}, 1.0)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_compressor, maxmin4, "maxmin", ParamList{}, 0.5)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_compressor, qsgd4, "qsgd", ParamList{}, 1.8)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_compressor, sign, "sign", ParamList{}, 1.0)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_compressor, fp16, "fp16", ParamList{}, 0.004)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_compressor, bf16, "bf16", ParamList{}, 0.004)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_compressor, terngrad, "terngrad", ParamList{}, 3.0)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_compressor, nuqsgd, "nuqsgd", ParamList{}, 1.0)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_compressor, randomk, "randomk", ParamList{}, 1.0)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
