// CUDA bucket quantisers against the CPU reference (kernels/cpu/quantize.hpp).
// Model: both sides evaluate the same per-element formulas (kernels/quant_math.hpp) with the same
// Philox draws, the same scale reductions (min/max are order free; bucket sums use the reference's
// 8 interleaved double partials) and the same packing layout. Hence codes, scales and decoded
// values must be identical — compared exactly (bitwise for floats) — and the fused error-feedback
// residual must equal acc − decoded bitwise.
#include <algorithm>
#include <functional>

#include "kernels/cpu/quantize.hpp"
#include "kernels/cuda/quantize.hpp"
#include "kernels/wire.hpp"
#include "tests/kernels/gpu_util.hpp"

namespace {

using namespace lgreco;
using namespace lgreco::gputest;
namespace cpu = lgreco::kernels::cpu;
using kernels::MaxMinParams;
using kernels::NuqsgdParams;
using kernels::QsgdParams;
using kernels::SignParams;

constexpr std::uint64_t kSeed = 20261202;
constexpr std::uint64_t kLayer = 3;
constexpr std::uint64_t kStep = 11;

/// The large size only with the normal distribution (keeps the CPU side of the suite short).
bool skip_case(std::uint64_t n, Dist d) { return n > 5000 && d != Dist::kNormal; }

/// Codes as the wire carries them: the first packed_bytes(n, b) bytes; the padding up to the
/// device capacity must be zero.
std::vector<std::uint8_t> wire_codes(const Dev<std::uint8_t>& dev, std::uint64_t n, int bits, const std::string& ctx) {
  const std::uint64_t cap = kc::code_capacity_bytes(n, bits);
  std::vector<std::uint8_t> all = dev.host(std::max<std::uint64_t>(cap, 1));
  for (std::uint64_t i = cpu::packed_bytes(n, bits); i < cap; ++i)
    LGRECO_EXPECT(all[i] == 0, "padding byte " << i << " = " << +all[i] << " [" << ctx << "]");
  all.resize(cpu::packed_bytes(n, bits));
  return all;
}

/// One method's encode/decode on both sides. `cpu_run` fills codes/s0/s1/out on the host;
/// `gpu_enc`/`gpu_dec` run the device launchers.
struct Case {
  int bits;
  std::uint64_t buckets;
  int scale_arrays;
  std::function<void(const std::vector<float>&, std::vector<std::uint8_t>&, std::vector<float>&, std::vector<float>&,
                     std::vector<float>&)>
      cpu_run;
  std::function<void(const float*, std::uint64_t, std::uint8_t*, float*, float*)> gpu_enc;
  std::function<void(const std::uint8_t*, const float*, const float*, std::uint64_t, float*, kc::EfFuse)> gpu_dec;
};

void check_case(const Case& c, const std::vector<float>& x, const std::string& ctx) {
  const std::uint64_t n = x.size();
  std::vector<std::uint8_t> codes(cpu::packed_bytes(n, c.bits));
  std::vector<float> s0(c.buckets), s1(c.scale_arrays > 1 ? c.buckets : 0), out(n);
  c.cpu_run(x, codes, s0, s1, out);

  Dev<float> dx(x), dout(n), dres(n);
  Dev<std::uint8_t> dcodes(std::max<std::uint64_t>(kc::code_capacity_bytes(n, c.bits), 1));
  Dev<float> ds0(std::max<std::uint64_t>(c.buckets, 1)), ds1(std::max<std::uint64_t>(c.buckets, 1));
  // Poison the code buffer: the kernels must write every word they own (or zero it first).
  std::vector<std::uint8_t> poison(std::max<std::uint64_t>(kc::code_capacity_bytes(n, c.bits), 1), 0xA5);
  kc::copy_to_device(dcodes.get(), poison.data(), poison.size());
  c.gpu_enc(dx.get(), n, dcodes.get(), ds0.get(), c.scale_arrays > 1 ? ds1.get() : nullptr);
  c.gpu_dec(dcodes.get(), ds0.get(), c.scale_arrays > 1 ? ds1.get() : nullptr, n, dout.get(),
            kc::EfFuse{dx.get(), dres.get()});

  expect_equal(wire_codes(dcodes, n, c.bits, ctx), codes, "codes", ctx);
  expect_bits(ds0.host(c.buckets), s0, "scales", ctx);
  if (c.scale_arrays > 1) expect_bits(ds1.host(c.buckets), s1, "units", ctx);
  expect_bits(dout.host(), out, "decoded", ctx);
  std::vector<float> res(n);
  for (std::uint64_t i = 0; i < n; ++i) res[i] = x[i] - out[i];
  expect_bits(dres.host(), res, "fused residual", ctx);
}

void run_maxmin() {
  for (int bits : {1, 2, 3, 4, 8})
    for (int d : {1024, 100, 20000})
      for (auto rounding : {kernels::Rounding::kStochastic, kernels::Rounding::kNearest})
        for (std::uint64_t n : sizes())
          for (Dist dist : dists()) {
            if (skip_case(n, dist) || (bits != 4 && n > 5000)) continue;
            MaxMinParams p;
            p.bits = bits;
            p.bucket_size = d;
            p.rounding = rounding;
            const std::uint64_t stream = rng::stream_of(kStep, kLayer);
            const auto x = make_data(dist, n, kSeed + n);
            Case c{bits, cpu::bucket_count(n, d), 2,
                   [&](const auto& xv, auto& codes, auto& s0, auto& s1, auto& out) {
                     cpu::maxmin_compress(xv, p, kSeed, stream, codes, s0, s1);
                     cpu::maxmin_decompress(codes, s0, s1, p, out);
                   },
                   [&](const float* dx, std::uint64_t nn, std::uint8_t* codes, float* s0, float* s1) {
                     kc::maxmin_compress(dx, nn, p, kSeed, stream, codes, s0, s1, nullptr);
                   },
                   [&](const std::uint8_t* codes, const float* s0, const float* s1, std::uint64_t nn, float* out,
                       kc::EfFuse ef) { kc::maxmin_decompress(codes, s0, s1, nn, p, out, nullptr, ef); }};
            check_case(c, x, Ctx()("method", "maxmin")("bits", bits)("bucket", d)(
                                   "rounding", rounding == kernels::Rounding::kNearest ? "nearest" : "stochastic")(
                                   "n", n)("dist", to_string(dist))("seed", kSeed + n)
                                 .str());
          }
}

void run_qsgd() {
  for (int levels : {1, 3, 7, 127, 32767})
    for (int d : {512, 100, 9000})
      for (auto norm : {kernels::QsgdNorm::kL2, kernels::QsgdNorm::kMax})
        for (auto enc : {kernels::QsgdEncoding::kFixed, kernels::QsgdEncoding::kElias})
        for (std::uint64_t n : sizes())
          for (Dist dist : dists()) {
            if (skip_case(n, dist) || ((levels != 7 || enc != kernels::QsgdEncoding::kElias) && n > 5000)) continue;
            QsgdParams p;
            p.levels = levels;
            p.bucket_size = d;
            p.norm = norm;
            p.encoding = enc;
            const int bits = kernels::qsgd_code_bits(levels);
            const std::uint64_t stream = rng::stream_of(kStep, kLayer);
            const auto x = make_data(dist, n, kSeed + 2 * n);
            std::uint64_t cpu_elias = 0;
            Dev<std::uint64_t> elias(1);
            Case c{bits, cpu::bucket_count(n, d), 1,
                   [&](const auto& xv, auto& codes, auto& s0, auto&, auto& out) {
                     cpu_elias = cpu::qsgd_compress(xv, p, kSeed, stream, codes, s0);
                     cpu::qsgd_decompress(codes, s0, p, out);
                   },
                   [&](const float* dx, std::uint64_t nn, std::uint8_t* codes, float* s0, float*) {
                     kc::qsgd_compress(dx, nn, p, kSeed, stream, codes, s0, elias.get(), nullptr);
                   },
                   [&](const std::uint8_t* codes, const float* s0, const float*, std::uint64_t nn, float* out,
                       kc::EfFuse ef) { kc::qsgd_decompress(codes, s0, nn, p, out, nullptr, ef); }};
            const std::string ctx = Ctx()("method", "qsgd")("levels", levels)("bucket", d)(
                                        "norm", norm == kernels::QsgdNorm::kL2 ? "l2" : "max")(
                                        "encoding", enc == kernels::QsgdEncoding::kElias ? "elias" : "fixed")("n", n)(
                                        "dist", to_string(dist))("seed", kSeed + 2 * n)
                                        .str();
            check_case(c, x, ctx);
            const std::uint64_t got = elias.host(1)[0];
            LGRECO_EXPECT(got == cpu_elias, "elias bits " << got << ", reference " << cpu_elias << " [" << ctx << "]");
          }
}

void run_sign() {
  for (int d : {1024, 33, 12000})
    for (std::uint64_t n : sizes())
      for (Dist dist : dists()) {
        if (skip_case(n, dist)) continue;
        SignParams p;
        p.bucket_size = d;
        const auto x = make_data(dist, n, kSeed + 3 * n);
        Case c{1, cpu::bucket_count(n, d), 1,
               [&](const auto& xv, auto& codes, auto& s0, auto&, auto& out) {
                 cpu::sign_compress(xv, p, codes, s0);
                 cpu::sign_decompress(codes, s0, p, out);
               },
               [&](const float* dx, std::uint64_t nn, std::uint8_t* codes, float* s0, float*) {
                 kc::sign_compress(dx, nn, p, codes, s0, nullptr);
               },
               [&](const std::uint8_t* codes, const float* s0, const float*, std::uint64_t nn, float* out,
                   kc::EfFuse ef) { kc::sign_decompress(codes, s0, nn, p, out, nullptr, ef); }};
        check_case(c, x, Ctx()("method", "sign")("bucket", d)("n", n)("dist", to_string(dist))("seed", kSeed + 3 * n).str());
      }
}

void run_terngrad() {
  for (std::uint64_t n : sizes())
    for (Dist dist : dists()) {
      if (skip_case(n, dist)) continue;
      const std::uint64_t stream = rng::stream_of(kStep, kLayer);
      const auto x = make_data(dist, n, kSeed + 4 * n);
      Case c{2, 1, 1,
             [&](const auto& xv, auto& codes, auto& s0, auto&, auto& out) {
               s0[0] = cpu::terngrad_compress(xv, kSeed, stream, codes);
               cpu::terngrad_decompress(codes, s0[0], out);
             },
             [&](const float* dx, std::uint64_t nn, std::uint8_t* codes, float* s0, float*) {
               kc::terngrad_compress(dx, nn, kSeed, stream, codes, s0, nullptr);
             },
             [&](const std::uint8_t* codes, const float* s0, const float*, std::uint64_t nn, float* out,
                 kc::EfFuse ef) { kc::terngrad_decompress(codes, s0, nn, out, nullptr, ef); }};
      check_case(c, x, Ctx()("method", "terngrad")("n", n)("dist", to_string(dist))("seed", kSeed + 4 * n).str());
    }
}

void run_nuqsgd() {
  for (int levels : {1, 4, 30})
    for (int d : {512, 77})
      for (std::uint64_t n : sizes())
        for (Dist dist : dists()) {
          if (skip_case(n, dist) || (levels != 4 && n > 5000)) continue;
          NuqsgdParams p;
          p.levels = levels;
          p.bucket_size = d;
          const std::uint64_t stream = rng::stream_of(kStep, kLayer);
          const auto x = make_data(dist, n, kSeed + 5 * n);
          Case c{kernels::nuqsgd_code_bits(levels), cpu::bucket_count(n, d), 1,
                 [&](const auto& xv, auto& codes, auto& s0, auto&, auto& out) {
                   cpu::nuqsgd_compress(xv, p, kSeed, stream, codes, s0);
                   cpu::nuqsgd_decompress(codes, s0, p, out);
                 },
                 [&](const float* dx, std::uint64_t nn, std::uint8_t* codes, float* s0, float*) {
                   kc::nuqsgd_compress(dx, nn, p, kSeed, stream, codes, s0, nullptr);
                 },
                 [&](const std::uint8_t* codes, const float* s0, const float*, std::uint64_t nn, float* out,
                     kc::EfFuse ef) { kc::nuqsgd_decompress(codes, s0, nn, p, out, nullptr, ef); }};
          check_case(c, x, Ctx()("method", "nuqsgd")("levels", levels)("bucket", d)("n", n)("dist", to_string(dist))(
                                   "seed", kSeed + 5 * n)
                               .str());
        }
}

}  // namespace

int main() {
  return lgreco::testing::run_gpu_tests(lgreco::kernels::cuda::device_count(),
                                        {{"maxmin codes, scales, decode, fused residual", run_maxmin},
                                         {"qsgd codes, norms, decode, elias bits", run_qsgd},
                                         {"sign codes, scales, decode", run_sign},
                                         {"terngrad codes, scale, decode", run_terngrad},
                                         {"nuqsgd codes, norms, decode", run_nuqsgd}});
}
