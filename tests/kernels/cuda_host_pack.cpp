// Host test of the CUDA quantisers' packing logic (runs without a device, in every build).
// The CUDA kernels build their code words with kernels/cuda/pack_word.hpp and encode with the
// codecs of kernels/cuda/quant_codecs.hpp; both are host+device code. This test drives them the way
// the two device paths do — the fused kernel (one writer per bucket; words shared by two buckets
// OR-ed into a zeroed buffer, every other word stored whole into a buffer that starts as garbage)
// and the word-parallel kernel (one writer per word, scales looked up per element) — with the
// scales the CPU reference computed, and requires the CPU reference's bytes exactly: codes, zero
// padding up to the 32-bit word, the Elias bit count and the decoded values (bitwise).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "kernels/cpu/quantize.hpp"
#include "kernels/cuda/pack_word.hpp"
#include "kernels/cuda/quant_codecs.hpp"
#include "kernels/quant_math.hpp"
#include "kernels/wire.hpp"
#include "tests/support/gpu_check.hpp"

namespace {

using namespace lgreco;
using namespace lgreco::kernels;
using namespace lgreco::kernels::cuda::detail;

constexpr std::uint64_t kSeed = 99;
constexpr std::uint64_t kStream = 12345;
constexpr std::uint32_t kGarbage = 0xA5A5A5A5u;

std::vector<float> data(std::uint64_t n, int variant) {
  std::vector<float> x(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    const double g = rng::normal_at(kSeed, 3, i);
    x[i] = variant == 0 ? static_cast<float>(g) : variant == 1 ? static_cast<float>(std::round(2 * g) / 2) : 0.0f;
  }
  return x;
}

/// The CPU reference's encoding of one method: codes, per-bucket scales and decoded values.
struct Reference {
  std::vector<std::uint8_t> codes;
  std::vector<float> s0, s1, out;
  std::uint64_t elias = 0;
};

template <class Codec>
void check_paths(const Codec& codec, const std::vector<float>& x, int bits, std::uint64_t d, const Reference& ref,
                 bool count_elias, const std::string& ctx) {
  const std::uint64_t n = x.size();
  const std::uint64_t nb = d ? cpu::bucket_count(n, static_cast<int>(d)) : 1;
  const std::uint64_t n_words = (n * bits + 31) / 32;
  auto stats_of_bucket = [&](std::uint64_t b) { return Stats{ref.s0[b], ref.s1.empty() ? 0.0f : ref.s1[b]}; };
  auto compare = [&](const std::vector<std::uint32_t>& words, std::uint64_t elias, const char* path) {
    std::vector<std::uint8_t> bytes(n_words * 4);
    for (std::uint64_t w = 0; w < n_words; ++w)
      for (int k = 0; k < 4; ++k) bytes[4 * w + k] = static_cast<std::uint8_t>(words[w] >> (8 * k));
    for (std::uint64_t i = 0; i < ref.codes.size(); ++i)
      LGRECO_EXPECT(bytes[i] == ref.codes[i], path << ": byte " << i << " = " << +bytes[i] << ", reference "
                                                   << +ref.codes[i] << " [" << ctx << "]");
    for (std::uint64_t i = ref.codes.size(); i < bytes.size(); ++i)
      LGRECO_EXPECT(bytes[i] == 0, path << ": padding byte " << i << " = " << +bytes[i] << " [" << ctx << "]");
    if (count_elias)
      LGRECO_EXPECT(elias == ref.elias, path << ": elias bits " << elias << ", reference " << ref.elias << " [" << ctx << "]");
    for (std::uint64_t i = 0; i < n; ++i) {
      const float v = codec.decode(get_code(bytes.data(), i, bits), stats_of_bucket(d ? i / d : 0));
      std::uint32_t a, b;
      std::memcpy(&a, &v, 4);
      std::memcpy(&b, &ref.out[i], 4);
      LGRECO_EXPECT(a == b, path << ": decoded[" << i << "] = " << v << ", reference " << ref.out[i] << " [" << ctx << "]");
    }
  };

  if (d) {  // fused kernel: one group per bucket
    const bool zeroed = any_shared_words(d, bits, nb);
    std::vector<std::uint32_t> words(n_words, zeroed ? 0u : kGarbage);
    std::uint64_t elias = 0;
    for (std::uint64_t b = 0; b < nb; ++b) {
      const std::uint64_t start = b * d, end = std::min(n, start + d);
      const std::uint64_t bit_lo = start * bits, bit_hi = end * bits;
      const Stats st = stats_of_bucket(b);
      for (std::uint64_t w = bit_lo / 32; w < (bit_hi + 31) / 32; ++w) {
        const std::uint32_t word = make_word(codec, x.data(), w, start, end, bits, [&](std::uint64_t) { return st; },
                                             kSeed, kStream, elias);
        if (word_shared(w, bit_lo, bit_hi, end == n)) words[w] |= word;
        else words[w] = word;
      }
    }
    compare(words, elias, "fused path");
  }
  {  // word-parallel kernel: one writer per word
    std::vector<std::uint32_t> words(n_words, kGarbage);
    std::uint64_t elias = 0;
    for (std::uint64_t w = 0; w < n_words; ++w)
      words[w] = make_word(codec, x.data(), w, 0, n, bits,
                           [&](std::uint64_t i) { return stats_of_bucket(d ? i / d : 0); }, kSeed, kStream, elias);
    compare(words, elias, "word-parallel path");
  }
}

const std::vector<std::uint64_t> kSizes = {1, 7, 31, 32, 33, 255, 256, 257, 1000, 4097, 65543};
const std::vector<int> kBuckets = {1, 3, 7, 33, 100, 512, 1024, 20000};

std::string ctx_of(const char* m, std::uint64_t n, int d, int variant, const std::string& extra) {
  return std::string("method=") + m + " n=" + std::to_string(n) + " bucket=" + std::to_string(d) + " data=" +
         std::to_string(variant) + " " + extra;
}

void run_maxmin() {
  for (int bits : {1, 2, 3, 4, 5, 8})
    for (auto rounding : {Rounding::kStochastic, Rounding::kNearest})
      for (std::uint64_t n : kSizes)
        for (int d : kBuckets)
          for (int variant : {0, 1, 2}) {
            MaxMinParams p{bits, d, rounding};
            const auto x = data(n, variant);
            Reference r;
            r.codes.resize(cpu::packed_bytes(n, bits));
            r.s0.resize(cpu::bucket_count(n, d));
            r.s1.resize(r.s0.size());
            r.out.resize(n);
            cpu::maxmin_compress(x, p, kSeed, kStream, r.codes, r.s0, r.s1);
            cpu::maxmin_decompress(r.codes, r.s0, r.s1, p, r.out);
            const MaxMinCodec c{bits, (1u << bits) - 1u, rounding == Rounding::kStochastic};
            check_paths(c, x, bits, d, r, false, ctx_of("maxmin", n, d, variant, "bits=" + std::to_string(bits)));
          }
}

void run_qsgd() {
  for (int levels : {1, 2, 7, 100, 32767})
    for (auto norm : {QsgdNorm::kL2, QsgdNorm::kMax})
      for (std::uint64_t n : kSizes)
        for (int d : kBuckets)
          for (int variant : {0, 1, 2}) {
            QsgdParams p;
            p.levels = levels;
            p.bucket_size = d;
            p.norm = norm;
            p.encoding = QsgdEncoding::kElias;  // the reference counts Elias bits only for this encoding
            const int bits = qsgd_code_bits(levels);
            const auto x = data(n, variant);
            Reference r;
            r.codes.resize(cpu::packed_bytes(n, bits));
            r.s0.resize(cpu::bucket_count(n, d));
            r.out.resize(n);
            r.elias = cpu::qsgd_compress(x, p, kSeed, kStream, r.codes, r.s0);
            cpu::qsgd_decompress(r.codes, r.s0, p, r.out);
            check_paths(QsgdCodec{levels, norm == QsgdNorm::kL2}, x, bits, d, r, true,
                        ctx_of("qsgd", n, d, variant, "levels=" + std::to_string(levels)));
          }
}

void run_sign_nuqsgd_terngrad() {
  for (std::uint64_t n : kSizes)
    for (int variant : {0, 1, 2}) {
      const auto x = data(n, variant);
      for (int d : kBuckets) {
        SignParams sp;
        sp.bucket_size = d;
        Reference r;
        r.codes.resize(cpu::packed_bytes(n, 1));
        r.s0.resize(cpu::bucket_count(n, d));
        r.out.resize(n);
        cpu::sign_compress(x, sp, r.codes, r.s0);
        cpu::sign_decompress(r.codes, r.s0, sp, r.out);
        check_paths(SignCodec{}, x, 1, d, r, false, ctx_of("sign", n, d, variant, ""));
        for (int levels : {1, 4, 6, 30}) {
          NuqsgdParams np;
          np.levels = levels;
          np.bucket_size = d;
          const int bits = nuqsgd_code_bits(levels);
          Reference q;
          q.codes.resize(cpu::packed_bytes(n, bits));
          q.s0.resize(cpu::bucket_count(n, d));
          q.out.resize(n);
          cpu::nuqsgd_compress(x, np, kSeed, kStream, q.codes, q.s0);
          cpu::nuqsgd_decompress(q.codes, q.s0, np, q.out);
          check_paths(NuqsgdCodec{levels, bits - 1}, x, bits, d, q, false,
                      ctx_of("nuqsgd", n, d, variant, "levels=" + std::to_string(levels)));
        }
      }
      Reference t;
      t.codes.resize(cpu::packed_bytes(n, 2));
      t.out.resize(n);
      t.s0 = {cpu::terngrad_compress(x, kSeed, kStream, t.codes)};
      cpu::terngrad_decompress(t.codes, t.s0[0], t.out);
      check_paths(TernGradCodec{}, x, 2, 0, t, false, ctx_of("terngrad", n, 0, variant, ""));
    }
}

}  // namespace

int main() {
  // Host-only: always "one device" for the harness, since nothing here needs one.
  return lgreco::testing::run_gpu_tests(1, {{"maxmin packing, both device paths", run_maxmin},
                                            {"qsgd packing and elias count, both device paths", run_qsgd},
                                            {"sign, nuqsgd, terngrad packing, both device paths", run_sign_nuqsgd_terngrad}});
}
