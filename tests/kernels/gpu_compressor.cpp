// The CUDA backend of the Compressor interface against the CPU backend, through ErrorFeedback
// (acc = g + e; c = C(acc); e ← acc − c; for top-k with DGC momentum also the velocity and its
// masking at the sent indices the backend reports) over three consecutive steps of several layers.
// Model: every method except PowerSGD is bit-identical on both backends (same formulas, draws and
// reductions; see gpu_quantize/gpu_topk/gpu_cast), so reconstructions, residuals and CompressInfo
// (wire bytes, round split, collective, encoding, kept, compressed) must be equal exactly, step
// after step. PowerSGD's products round differently (cuBLAS vs the reference's dot products):
// its reconstruction and residual are compared per element within kPowerAbsTol·max|acc| and a
// normalised MSE kPowerNmse (see gpu_powersgd.cpp for the derivation), its CompressInfo exactly.
#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "kernels/compressor.hpp"
#include "kernels/cuda_backend.hpp"
#include "kernels/error_feedback.hpp"
#include "kernels/method.hpp"
#include "tests/kernels/gpu_util.hpp"

namespace {

using namespace lgreco;
using namespace lgreco::gputest;
using kernels::ParamList;

constexpr double kPowerAbsTol = 1e-3;
constexpr double kPowerNmse = 1e-6;

struct MethodCase {
  const char* name;
  ParamList params;
};

const std::vector<MethodCase>& methods() {
  static const std::vector<MethodCase> m = {
      {"none", {}},
      {"fp16", {}},
      {"bf16", {}},
      {"maxmin", {}},
      {"maxmin", {{"bits", "2"}, {"bucket_size", "100"}, {"rounding", "nearest"}}},
      {"qsgd", {}},
      {"qsgd", {{"bits", "8"}, {"norm", "max"}, {"encoding", "elias"}}},
      {"sign", {}},
      {"terngrad", {}},
      {"nuqsgd", {}},
      {"topk", {}},
      {"topk", {{"density", "0.1"}, {"encoding", "delta"}}},
      {"topk", {{"density", "0.05"}, {"selection", "dgc"}}},
      {"topk", {{"density", "0.05"}, {"momentum", "0.9"}}},
      {"topk", {{"density", "0.05"}, {"selection", "dgc"}, {"momentum", "0.9"}, {"warmup_steps", "1"}}},
      {"randomk", {}},
      {"randomk", {{"density", "0.2"}, {"scaled", "true"}}},
      {"powersgd", {}},
      {"powersgd", {{"rank", "1"}, {"warm_start", "false"}}},
      {"powersgd", {{"rank", "8"}, {"orthogonalization", "qr"}, {"power_iterations", "2"}}},
      {"powersgd", {{"rank", "0"}}},
  };
  return m;
}

struct Layer {
  std::string name;
  std::vector<std::int64_t> shape;
  Dist dist;
};

const std::vector<Layer>& layers() {
  static const std::vector<Layer> l = {
      {"conv.weight", {64, 32, 3, 3}, Dist::kNormal}, {"fc.weight", {10, 512}, Dist::kHeavy},
      {"fc.bias", {10}, Dist::kNormal},               {"tiny.weight", {3, 5}, Dist::kNormal},
      {"zero.weight", {33, 31}, Dist::kZero},         {"tied.weight", {257, 255}, Dist::kTies},
      {"const.bias", {4097}, Dist::kConstant},        {"empty.bias", {0}, Dist::kNormal},
      {"big.weight", {2048, 2048}, Dist::kNormal}};
  return l;
}

std::uint64_t numel(const std::vector<std::int64_t>& shape) {
  std::uint64_t n = 1;
  for (auto d : shape) n *= static_cast<std::uint64_t>(d);
  return n;
}

void expect_info(const kernels::CompressInfo& a, const kernels::CompressInfo& b, const std::string& ctx) {
  LGRECO_EXPECT(a.wire.bytes == b.wire.bytes, "wire bytes " << a.wire.bytes << " vs " << b.wire.bytes << " [" << ctx << "]");
  LGRECO_EXPECT(a.wire.collective == b.wire.collective, "collective [" << ctx << "]");
  LGRECO_EXPECT(a.wire.allreduce_round_bytes == b.wire.allreduce_round_bytes, "round split [" << ctx << "]");
  LGRECO_EXPECT(a.wire.allgather_bytes == b.wire.allgather_bytes,
                "allgather bytes " << a.wire.allgather_bytes << " vs " << b.wire.allgather_bytes << " [" << ctx << "]");
  LGRECO_EXPECT(a.encoding == b.encoding, "encoding [" << ctx << "]");
  LGRECO_EXPECT(a.kept == b.kept, "kept " << a.kept << " vs " << b.kept << " [" << ctx << "]");
  LGRECO_EXPECT(a.compressed == b.compressed, "compressed [" << ctx << "]");
}

/// Gradients of (step, layer), generated once for all methods.
const std::vector<float>& gradient(std::uint64_t step, std::uint64_t li) {
  static std::vector<std::vector<float>> cache(3 * layers().size());
  auto& g = cache[step * layers().size() + li];
  const Layer& L = layers()[li];
  if (g.empty() && numel(L.shape) > 0) g = make_data(L.dist, numel(L.shape), 1000 * step + li);
  return g;
}

void run_backends() {
  for (const MethodCase& mc : methods()) {
    const kernels::MethodSpec spec = kernels::parse_method(mc.name, mc.params);
    kernels::ErrorFeedback ef_cpu(kernels::make_compressor(spec, kernels::Backend::kCpu));
    kernels::ErrorFeedback ef_gpu(kernels::make_compressor(spec, kernels::Backend::kCuda));
    LGRECO_EXPECT(ef_gpu.compressor().backend() == kernels::Backend::kCuda, "backend [" << describe(spec) << "]");
    const bool exact = spec.method != kernels::Method::kPowerSgd;
    for (std::uint64_t step = 0; step < 3; ++step)
      for (std::uint64_t li = 0; li < layers().size(); ++li) {
        const Layer& L = layers()[li];
        const std::uint64_t n = numel(L.shape);
        const auto& g = gradient(step, li);
        kernels::LayerContext ctx{L.name, li, step, 31337, L.shape};
        std::vector<float> acc_c(n), rec_c(n), acc_g(n), rec_g(n);
        const auto info_c = ef_cpu.step(g, acc_c, rec_c, ctx);
        const auto info_g = ef_gpu.step(g, acc_g, rec_g, ctx);
        const std::string c =
            Ctx()("method", describe(spec))("layer", L.name)("n", n)("dist", to_string(L.dist))("step", step).str();
        expect_info(info_g, info_c, c);
        const auto& res_c = ef_cpu.state(li).residual;
        const auto& res_g = ef_gpu.state(li).residual;
        if (exact) {
          expect_bits(acc_g, acc_c, "acc", c);
          expect_bits(rec_g, rec_c, "reconstruction", c);
          expect_bits(res_g, res_c, "residual", c);
          expect_bits(ef_gpu.state(li).velocity, ef_cpu.state(li).velocity, "momentum velocity", c);
        } else {
          double mx = 0;
          for (float v : acc_c) mx = std::max(mx, static_cast<double>(std::fabs(v)));
          // acc carries the previous residual, so it is compared within the same tolerance.
          expect_close(acc_g, acc_c, kPowerAbsTol * mx, 0.0, kPowerNmse, "acc", c);
          expect_close(rec_g, rec_c, kPowerAbsTol * mx, 0.0, kPowerNmse, "reconstruction", c);
          expect_close(res_g, res_c, kPowerAbsTol * mx, 0.0, kPowerNmse, "residual", c);
        }
      }
  }
}

void run_errors() {
  // Non-finite input is rejected before any device work, naming the layer and element.
  const auto spec = kernels::parse_method("qsgd", {});
  auto comp = kernels::make_compressor(spec, kernels::Backend::kCuda);
  std::vector<float> x(100, 1.0f), out(100);
  x[42] = std::nanf("");
  kernels::LayerState st;
  const std::vector<std::int64_t> shape = {100};
  bool threw = false;
  try {
    comp->compress(x, out, st, kernels::LayerContext{"bad.weight", 0, 0, 0, shape});
  } catch (const InputError& e) {
    threw = std::string(e.what()).find("bad.weight") != std::string::npos;
  }
  LGRECO_EXPECT(threw, "NaN input must raise InputError naming the layer");
  LGRECO_EXPECT(kernels::cuda::describe_backend().find("CUDA") == 0, kernels::cuda::describe_backend());
}

}  // namespace

int main() {
  return lgreco::testing::run_gpu_tests(lgreco::kernels::cuda::device_count(),
                                        {{"CUDA vs CPU backend through error feedback, 3 steps", run_backends},
                                         {"bad input and backend description", run_errors}});
}
