// CUDA sparsification against the CPU reference (kernels/cpu/topk.hpp) and against
// std::nth_element. Everything here is integer-valued (keys, indices, counts) or a copy of input
// values, so every comparison is exact:
// - radix select: the k-th largest key and #{key > T} equal the reference's, and the key equals
//   abs_key of the value std::nth_element(greater) puts at position k − 1;
// - top-k indices (ties → lower index, increasing), random-k indices, DGC indices and threshold,
//   gathered values, the scattered reconstruction, the Elias-gamma bit count of the index gaps.
#include <algorithm>
#include <functional>

#include "kernels/cpu/topk.hpp"
#include "kernels/cuda/topk.hpp"
#include "kernels/wire.hpp"
#include "tests/kernels/gpu_util.hpp"

namespace {

using namespace lgreco;
using namespace lgreco::gputest;
namespace cpu = lgreco::kernels::cpu;

constexpr std::uint64_t kSeed = 977;

/// The k values tried for a size: 1, the default density, a quarter, all but one, all.
std::vector<std::uint64_t> ks_for(std::uint64_t n) {
  std::vector<std::uint64_t> ks = {1, kernels::sparse_k(n, 0.01), (n + 3) / 4, n > 1 ? n - 1 : 1, n};
  std::sort(ks.begin(), ks.end());
  ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
  std::erase_if(ks, [n](std::uint64_t k) { return k == 0 || k > n; });
  return ks;
}

bool skip_case(std::uint64_t n, Dist d) { return n > 5000 && d != Dist::kNormal && d != Dist::kTies; }

void run_select_and_topk() {
  for (std::uint64_t n : sizes())
    for (Dist dist : dists()) {
      if (skip_case(n, dist)) continue;
      const auto x = make_data(dist, n, kSeed + n);
      Dev<float> dx(x);
      Dev<std::uint8_t> ws(kc::topk_workspace_bytes(n));
      std::vector<std::uint32_t> keys(n);
      for (std::uint64_t i = 0; i < n; ++i) keys[i] = cpu::abs_key(x[i]);
      for (std::uint64_t k : ks_for(n)) {
        const std::string ctx = Ctx()("n", n)("k", k)("dist", to_string(dist))("seed", kSeed + n).str();
        // Oracle: std::nth_element on the keys (monotone in |x|).
        std::vector<std::uint32_t> sorted = keys;
        std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(k - 1), sorted.end(),
                         std::greater<>());
        const cpu::KthKey ref = cpu::radix_select_abs(x, k);
        LGRECO_EXPECT(ref.key == sorted[k - 1], "CPU reference disagrees with nth_element [" << ctx << "]");

        Dev<kc::KthKeyResult> res(1);
        kc::radix_select_abs(dx.get(), n, k, res.get(), ws.get(), nullptr);
        const kc::KthKeyResult got = res.host(1)[0];
        LGRECO_EXPECT(got.key == ref.key, "k-th key 0x" << std::hex << got.key << ", reference 0x" << ref.key
                                                         << std::dec << " [" << ctx << "]");
        LGRECO_EXPECT(got.count_greater == ref.count_greater,
                      "count_greater " << got.count_greater << ", reference " << ref.count_greater << " [" << ctx << "]");

        std::vector<std::uint32_t> want;
        cpu::topk_exact(x, k, want);
        Dev<std::uint32_t> idx(k);
        kc::topk_exact(dx.get(), n, k, idx.get(), ws.get(), nullptr);
        const auto got_idx = idx.host(k);
        expect_equal(got_idx, want, "top-k indices", ctx);

        Dev<float> vals(k), recon(n);
        kc::gather(dx.get(), idx.get(), k, vals.get(), nullptr);
        std::vector<float> want_vals;
        cpu::gather(x, want, want_vals);
        expect_bits(vals.host(k), want_vals, "gathered values", ctx);
        kc::scatter(idx.get(), vals.get(), k, 1.0f, recon.get(), n, nullptr);
        std::vector<float> want_recon(n);
        cpu::scatter(want, want_vals, 1.0f, want_recon);
        expect_bits(recon.host(), want_recon, "reconstruction", ctx);

        Dev<std::uint64_t> bits(1);
        kc::delta_gamma_bits(idx.get(), k, bits.get(), nullptr);
        const std::uint64_t want_bits = kernels::delta_gamma_bits(want);
        LGRECO_EXPECT(bits.host(1)[0] == want_bits,
                      "delta gamma bits " << bits.host(1)[0] << ", reference " << want_bits << " [" << ctx << "]");
      }
    }
}

void run_select_keys() {
  // Arbitrary 32-bit keys use all 11 bits of the first digit (abs keys never set bit 31).
  for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{257}, std::uint64_t{4097}, std::uint64_t{100000}}) {
    std::vector<std::uint32_t> keys(n);
    for (std::uint64_t i = 0; i < n; ++i) keys[i] = rng::bits_at(kSeed, 5, i) | (i % 3 == 0 ? 0x80000000u : 0u);
    Dev<std::uint32_t> dk(keys);
    Dev<std::uint8_t> ws(kc::topk_workspace_bytes(n));
    for (std::uint64_t k : ks_for(n)) {
      const std::string ctx = Ctx()("n", n)("k", k)("keys", "raw").str();
      const cpu::KthKey ref = cpu::radix_select_keys(keys, k);
      Dev<kc::KthKeyResult> res(1);
      kc::radix_select_keys(dk.get(), n, k, res.get(), ws.get(), nullptr);
      const auto got = res.host(1)[0];
      LGRECO_EXPECT(got.key == ref.key && got.count_greater == ref.count_greater,
                    "(key, count_greater) = (" << got.key << ", " << got.count_greater << "), reference (" << ref.key
                                               << ", " << ref.count_greater << ") [" << ctx << "]");
    }
  }
}

void run_randomk() {
  for (std::uint64_t n : sizes()) {
    Dev<std::uint8_t> ws(kc::topk_workspace_bytes(n));
    for (std::uint64_t k : ks_for(n)) {
      const std::uint64_t stream = rng::stream_of(4, 9);
      const std::string ctx = Ctx()("n", n)("k", k)("seed", kSeed)("stream", stream).str();
      std::vector<std::uint32_t> want;
      cpu::randomk_indices(n, k, kSeed, stream, want);
      Dev<std::uint32_t> idx(k);
      kc::randomk_indices(n, k, kSeed, stream, idx.get(), ws.get(), nullptr);
      expect_equal(idx.host(k), want, "random-k indices", ctx);
    }
  }
}

void run_dgc() {
  for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{33}, std::uint64_t{1000}, std::uint64_t{4097},
                          std::uint64_t{1} << 22})
    for (Dist dist : dists()) {
      if (skip_case(n, dist)) continue;
      const auto x = make_data(dist, n, kSeed + 7 * n);
      Dev<float> dx(x);
      Dev<std::uint8_t> ws(kc::topk_workspace_bytes(n));
      for (double density : {0.001, 0.01, 0.3}) {
        const std::uint64_t k = kernels::sparse_k(n, density);
        const std::uint64_t stream = rng::stream_of(2, 1);
        const std::string ctx = Ctx()("n", n)("k", k)("dist", to_string(dist))("seed", kSeed + 7 * n).str();
        std::vector<std::uint32_t> want;
        const float t_ref = cpu::topk_dgc(x, k, kSeed, stream, cpu::DgcSampling{}, want);
        Dev<std::uint32_t> idx(k);
        std::uint64_t kept = 0;
        const float t = kc::topk_dgc(dx.get(), n, k, kSeed, stream, cpu::DgcSampling{}, idx.get(), &kept, ws.get(), nullptr);
        LGRECO_EXPECT(bits_of(t) == bits_of(t_ref), "threshold " << t << ", reference " << t_ref << " [" << ctx << "]");
        LGRECO_EXPECT(kept == want.size(), "kept " << kept << ", reference " << want.size() << " [" << ctx << "]");
        expect_equal(idx.host(kept), want, "dgc indices", ctx);
      }
    }
}

}  // namespace

int main() {
  return lgreco::testing::run_gpu_tests(lgreco::kernels::cuda::device_count(),
                                        {{"radix select and exact top-k vs reference and nth_element", run_select_and_topk},
                                         {"radix select on raw 32-bit keys", run_select_keys},
                                         {"random-k indices", run_randomk},
                                         {"dgc threshold and indices", run_dgc}});
}
