// CUDA casts and error-feedback kernels against the CPU reference. Model: fp32 → fp16/bf16 with
// round-to-nearest-even is a function of the bit pattern, so the device conversion must give the
// reference's bits for every finite input (normal, subnormal, ties, overflow to ±Inf, ±0); the
// error-feedback steps are single fp32 additions/subtractions, identical on both sides. All exact.
#include <cstring>
#include <limits>

#include "kernels/cpu/cast.hpp"
#include "kernels/cuda/cast.hpp"
#include "kernels/cuda/error_feedback.hpp"
#include "tests/kernels/gpu_util.hpp"

namespace {

using namespace lgreco;
using namespace lgreco::gputest;
namespace cpu = lgreco::kernels::cpu;

constexpr std::uint64_t kSeed = 4242;

/// Special values: fp16 overflow boundary (65504 max, 65520 rounds to Inf), fp16 subnormals and
/// their halfway points, bf16 rounding ties, fp32 subnormals, ±0, the largest finite floats.
std::vector<float> special_values() {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.99f, 65520.0f, -65520.0f, 1e5f, -1e30f,
                          std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::min(), std::numeric_limits<float>::denorm_min(),
                          5.96046448e-8f, 2.98023224e-8f, 2.98023230e-8f, 8.9406967e-8f, 6.1035156e-5f, 6.1035152e-5f,
                          1.00390625f, 1.0078125f, 1.01171875f, 3.3895314e38f, 3.3961776e38f};
  // Every fp32 bit pattern with a low half of 0x8000 (the bf16 ties) over a range of exponents.
  for (std::uint32_t e = 1; e < 255; e += 7)
    for (std::uint32_t m : {0x8000u, 0x18000u, 0x7F8000u, 0x7FFFu, 0x1000u})
      for (std::uint32_t sgn : {0u, 0x80000000u}) {
        const std::uint32_t b = sgn | (e << 23) | m;
        float f;
        std::memcpy(&f, &b, sizeof f);
        v.push_back(f);
      }
  return v;
}

std::vector<std::vector<float>> inputs() {
  std::vector<std::vector<float>> all;
  for (std::uint64_t n : sizes())
    for (Dist d : dists()) {
      if (n > 5000 && d != Dist::kNormal && d != Dist::kHeavy) continue;
      auto x = make_data(d, n, kSeed + n);
      if (d == Dist::kHeavy)
        for (auto& f : x) f *= 1e3f;  // reach the fp16 overflow and subnormal ranges
      all.push_back(std::move(x));
    }
  all.push_back(special_values());
  return all;
}

void run_casts() {
  for (const auto& x : inputs()) {
    const std::uint64_t n = x.size();
    const std::string ctx = Ctx()("n", n)("x0", n ? x[0] : 0.0f).str();
    Dev<float> dx(x), back(n), round(n);
    Dev<std::uint16_t> h(n);
    std::vector<std::uint16_t> want(n);
    std::vector<float> want_back(n);

    cpu::fp16_compress(x, want);
    kc::fp16_compress(dx.get(), n, h.get(), nullptr);
    expect_equal(h.host(), want, "fp16 bits", ctx);
    cpu::fp16_decompress(want, want_back);
    kc::fp16_decompress(h.get(), n, back.get(), nullptr);
    expect_bits(back.host(), want_back, "fp16 decoded", ctx);
    kc::fp16_roundtrip(dx.get(), n, round.get(), nullptr);
    expect_bits(round.host(), want_back, "fp16 round trip", ctx);

    cpu::bf16_compress(x, want);
    kc::bf16_compress(dx.get(), n, h.get(), nullptr);
    expect_equal(h.host(), want, "bf16 bits", ctx);
    cpu::bf16_decompress(want, want_back);
    kc::bf16_decompress(h.get(), n, back.get(), nullptr);
    expect_bits(back.host(), want_back, "bf16 decoded", ctx);
    kc::bf16_roundtrip(dx.get(), n, round.get(), nullptr);
    expect_bits(round.host(), want_back, "bf16 round trip", ctx);
  }
}

void run_error_feedback() {
  for (std::uint64_t n : sizes()) {
    const auto g = make_data(Dist::kNormal, n, kSeed + 1);
    const auto e = make_data(Dist::kHeavy, n, kSeed + 2);
    const auto c = make_data(Dist::kTies, n, kSeed + 3);
    const std::string ctx = Ctx()("n", n)("seed", kSeed).str();
    Dev<float> dg(g), de(e), dc(c), acc(n), res(n);
    kc::ef_accumulate(dg.get(), de.get(), n, acc.get(), nullptr);
    kc::ef_residual(acc.get(), dc.get(), n, res.get(), nullptr);
    std::vector<float> want_acc(n), want_res(n);
    for (std::uint64_t i = 0; i < n; ++i) {
      want_acc[i] = g[i] + e[i];
      want_res[i] = want_acc[i] - c[i];
    }
    expect_bits(acc.host(), want_acc, "acc = g + e", ctx);
    expect_bits(res.host(), want_res, "e = acc - c", ctx);
    // In place, as the compressor pipeline uses it: acc into g's buffer, residual into acc's.
    kc::ef_accumulate(dg.get(), de.get(), n, dg.get(), nullptr);
    kc::ef_residual(dg.get(), dc.get(), n, dg.get(), nullptr);
    expect_bits(dg.host(), want_res, "in-place e", ctx);
  }
}

}  // namespace

int main() {
  return lgreco::testing::run_gpu_tests(lgreco::kernels::cuda::device_count(),
                                        {{"fp16/bf16 casts bit for bit", run_casts},
                                         {"error feedback accumulate/residual", run_error_feedback}});
}
