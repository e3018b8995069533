// DGC momentum correction on the device (kernels/cuda/error_feedback.hpp) against the host
// reference (kernels::momentum_accumulate / momentum_mask in kernels/error_feedback.hpp).
// Model: u ← m·u + g and acc = e + u are one fp32 multiply and two fp32 additions, each rounded
// to nearest (the device uses __fmul_rn/__fadd_rn, the build --fmad=false; the host build has no
// FMA), and masking writes +0: so u and acc must be equal bit for bit, at every size, for several
// m (0, 0.5, 0.9, 0.999) over three chained steps with masking in between.
#include <algorithm>

#include "kernels/cpu/topk.hpp"
#include "kernels/cuda/error_feedback.hpp"
#include "kernels/error_feedback.hpp"
#include "kernels/wire.hpp"
#include "tests/kernels/gpu_util.hpp"

namespace {

using namespace lgreco;
using namespace lgreco::gputest;

constexpr std::uint64_t kSeed = 4111;

void run_accumulate_and_mask() {
  for (std::uint64_t n : sizes())
    for (Dist dist : {Dist::kNormal, Dist::kHeavy, Dist::kTies})
      for (float m : {0.0f, 0.5f, 0.9f, 0.999f}) {
        std::vector<float> u(n, 0.0f), e = make_data(Dist::kNormal, n, kSeed + 1), acc(n);
        Dev<float> du(u), de(e), dacc(n);
        for (std::uint64_t step = 0; step < 3; ++step) {
          const std::string ctx = Ctx()("n", n)("dist", to_string(dist))("m", m)("step", step).str();
          const auto g = make_data(dist, n, kSeed + 10 * step + n);
          Dev<float> dg(g);
          kernels::momentum_accumulate(g, u, e, m, acc);
          kc::momentum_accumulate(dg.get(), du.get(), de.get(), m, n, dacc.get(), nullptr);
          expect_bits(du.host(), u, "velocity", ctx);
          expect_bits(dacc.host(), acc, "acc", ctx);
          // Mask at the exact top-k of acc (density 1 %), as ErrorFeedback does after compressing.
          std::vector<std::uint32_t> idx;
          kernels::cpu::topk_exact(acc, kernels::sparse_k(n, 0.01), idx);
          Dev<std::uint32_t> didx(idx);
          kernels::momentum_mask(idx, u);
          kc::momentum_mask(didx.get(), idx.size(), du.get(), nullptr);
          expect_bits(du.host(), u, "masked velocity", ctx);
        }
      }
}

}  // namespace

int main() {
  return lgreco::testing::run_gpu_tests(lgreco::kernels::cuda::device_count(),
                                        {{"momentum accumulation and masking vs the host reference", run_accumulate_and_mask}});
}
