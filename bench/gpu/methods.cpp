#include "bench/gpu/methods.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "bench/gpu/harness.hpp"
#include "core/rng.hpp"
#include "kernels/cpu/cast.hpp"
#include "kernels/cpu/powersgd.hpp"
#include "kernels/cpu/quantize.hpp"
#include "kernels/cpu/topk.hpp"
#include "kernels/cuda/cast.hpp"
#include "kernels/cuda/quantize.hpp"
#include "kernels/cuda/topk.hpp"
#include "kernels/method.hpp"
#include "kernels/wire.hpp"

namespace lgreco::bench {
namespace {

namespace cpu = lgreco::kernels::cpu;
using namespace lgreco::kernels;

constexpr std::uint64_t kSeed = 1;
constexpr std::uint64_t kStream = 0;  // rng::stream_of(0, 0)
constexpr int kRank = 4;
constexpr double kPowerRelTol = 1e-3;  // ‖M̂_gpu − M̂_cpu‖_F / ‖M̂_cpu‖_F: products' rounding (see gpu_powersgd.cpp)

template <class T>
std::vector<T> fetch(const void* dev, std::uint64_t count, kc::Stream s) {
  std::vector<T> v(count);
  kc::synchronize(s);
  kc::copy_to_host(v.data(), dev, count * sizeof(T));
  return v;
}

template <class T>
std::string same(const std::vector<T>& a, const std::vector<T>& b, const char* what) {
  if (a.size() != b.size()) return std::string(what) + ": sizes differ";
  if (!a.empty() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) != 0) {
    std::size_t i = 0;
    while (std::memcmp(&a[i], &b[i], sizeof(T)) == 0) ++i;
    return std::string(what) + " differ from the CPU reference at element " + std::to_string(i);
  }
  return "";
}

// Byte formulas (compress + decompress, best case: each pass reads its input once).
double quant_bpe(int bits, int bucket, int scale_bytes) { return 8.0 + 2.0 * (bits / 8.0 + scale_bytes / static_cast<double>(bucket)); }

/// A bucket quantiser: encode(x, n, codes, s0, s1, s), decode(codes, s0, s1, n, out, s), and the
/// CPU reference filling codes/s0/s1/out.
MethodBench bucket_method(std::string name, std::string params, int bits, int bucket, int scale_arrays,
                          std::function<void(const float*, std::uint64_t, std::uint8_t*, float*, float*, kc::Stream)> enc,
                          std::function<void(const std::uint8_t*, const float*, const float*, std::uint64_t, float*, kc::Stream)> dec,
                          std::function<void(const std::vector<float>&, std::vector<std::uint8_t>&, std::vector<float>&,
                                             std::vector<float>&, std::vector<float>&)> ref) {
  MethodBench m;
  m.name = std::move(name);
  m.params = std::move(params);
  m.bytes_per_element = quant_bpe(bits, bucket, 4 * scale_arrays);
  m.formula = "read 4 + write " + std::to_string(bits) + "/8 + " + std::to_string(4 * scale_arrays) + "/" +
              std::to_string(bucket) + " | read the same, write 4";
  auto s1_of = [bucket, scale_arrays](Buffers& b, std::uint64_t n) {
    return scale_arrays > 1 ? b.scales.as<float>() + cpu::bucket_count(n, bucket) : nullptr;
  };
  m.compress = [=](std::uint64_t n, Buffers& b, kc::Stream s) {
    enc(b.x.as<float>(), n, b.codes.as<std::uint8_t>(), b.scales.as<float>(), s1_of(b, n), s);
  };
  m.roundtrip = [=](std::uint64_t n, Buffers& b, kc::Stream s) {
    enc(b.x.as<float>(), n, b.codes.as<std::uint8_t>(), b.scales.as<float>(), s1_of(b, n), s);
    dec(b.codes.as<std::uint8_t>(), b.scales.as<float>(), s1_of(b, n), n, b.out.as<float>(), s);
  };
  m.validate = [=](const std::vector<float>& x, Buffers& b, kc::Stream s) {
    const std::uint64_t n = x.size();
    const std::uint64_t nb = bucket > 0 ? cpu::bucket_count(n, bucket) : 1;
    std::vector<std::uint8_t> codes(cpu::packed_bytes(n, bits));
    std::vector<float> s0(nb), s1(scale_arrays > 1 ? nb : 0), out(n);
    ref(x, codes, s0, s1, out);
    enc(b.x.as<float>(), n, b.codes.as<std::uint8_t>(), b.scales.as<float>(), s1_of(b, n), s);
    dec(b.codes.as<std::uint8_t>(), b.scales.as<float>(), s1_of(b, n), n, b.out.as<float>(), s);
    std::string e = same(fetch<std::uint8_t>(b.codes.data(), codes.size(), s), codes, "codes");
    if (e.empty()) e = same(fetch<float>(b.scales.data(), nb, s), s0, "scales");
    if (e.empty() && scale_arrays > 1) e = same(fetch<float>(s1_of(b, n), nb, s), s1, "units");
    if (e.empty()) e = same(fetch<float>(b.out.data(), n, s), out, "decoded values");
    return e;
  };
  return m;
}

MethodBench cast_method(bool half) {
  MethodBench m;
  m.name = half ? "fp16" : "bf16";
  m.bytes_per_element = 12.0;
  m.formula = "read 4, write 2 | read 2, write 4";
  auto enc = half ? kc::fp16_compress : kc::bf16_compress;
  auto dec = half ? kc::fp16_decompress : kc::bf16_decompress;
  m.compress = [=](std::uint64_t n, Buffers& b, kc::Stream s) { enc(b.x.as<float>(), n, b.codes.as<std::uint16_t>(), s); };
  m.roundtrip = [=](std::uint64_t n, Buffers& b, kc::Stream s) {
    enc(b.x.as<float>(), n, b.codes.as<std::uint16_t>(), s);
    dec(b.codes.as<std::uint16_t>(), n, b.out.as<float>(), s);
  };
  m.validate = [=](const std::vector<float>& x, Buffers& b, kc::Stream s) {
    std::vector<std::uint16_t> want(x.size());
    if (half) cpu::fp16_compress(x, want);
    else cpu::bf16_compress(x, want);
    enc(b.x.as<float>(), x.size(), b.codes.as<std::uint16_t>(), s);
    return same(fetch<std::uint16_t>(b.codes.data(), x.size(), s), want, "half-precision bits");
  };
  return m;
}

MethodBench sparse_method(bool random) {
  MethodBench m;
  const double density = 0.01;
  m.name = random ? "randomk" : "topk";
  m.params = "density=0.01";
  m.bytes_per_element = random ? 4.0 + 3 * 4 * density : 12.0 + 2 * 8 * density;
  m.formula = random ? "indices from Philox, gather k (4·d), write k, read k, write reconstruction 4"
                     : "radix select: histogram pass 4, candidate pass 4, write pass 4; k pairs written and read 2·8·d; "
                       "reconstruction write 4 (zero fill + scatter)";
  auto select = [=](std::uint64_t n, Buffers& b, kc::Stream s) {
    const std::uint64_t k = sparse_k(n, density);
    if (random) kc::randomk_indices(n, k, kSeed, kStream, b.idx.as<std::uint32_t>(), b.ws.data(), s);
    else kc::topk_exact(b.x.as<float>(), n, k, b.idx.as<std::uint32_t>(), b.ws.data(), s);
    kc::gather(b.x.as<float>(), b.idx.as<std::uint32_t>(), k, b.vals.as<float>(), s);
  };
  m.compress = select;
  m.roundtrip = [=](std::uint64_t n, Buffers& b, kc::Stream s) {
    select(n, b, s);
    kc::scatter(b.idx.as<std::uint32_t>(), b.vals.as<float>(), sparse_k(n, density), 1.0f, b.out.as<float>(), n, s);
  };
  m.validate = [=](const std::vector<float>& x, Buffers& b, kc::Stream s) {
    const std::uint64_t n = x.size(), k = sparse_k(n, density);
    std::vector<std::uint32_t> want;
    if (random) cpu::randomk_indices(n, k, kSeed, kStream, want);
    else cpu::topk_exact(x, k, want);
    select(n, b, s);
    return same(fetch<std::uint32_t>(b.idx.data(), k, s), want, "indices");
  };
  return m;
}

MethodBench powersgd_method() {
  MethodBench m;
  m.name = "powersgd";
  m.params = "rank=4, square-ish matrix rows = 2^floor(log2(n)/2)";
  m.bytes_per_element = 12.0;
  m.formula = "P=M·Q reads M (4), Q=Mᵀ·P reads M (4), M̂=P·Qᵀ writes 4";
  auto step = [](std::uint64_t n, Buffers& b, kc::Stream s) {
    const std::int64_t rows = bench_rows(n), cols = static_cast<std::int64_t>(n) / rows;
    PowerSgdParams p;
    p.rank = kRank;
    kc::powersgd_step(b.blas, b.x.as<float>(), rows, cols, std::min<std::int64_t>({rows, cols, kRank}), p, b.q.as<float>(),
                      b.p.as<float>(), b.out.as<float>(), b.scratch.as<double>(), s);
  };
  m.compress = step;
  m.roundtrip = step;
  m.validate = [=](const std::vector<float>& x, Buffers& b, kc::Stream s) -> std::string {
    const std::uint64_t n = x.size();
    const std::int64_t rows = bench_rows(n), cols = static_cast<std::int64_t>(n) / rows;
    const std::int64_t r = std::min<std::int64_t>({rows, cols, kRank});
    PowerSgdParams p;
    p.rank = kRank;
    std::vector<float> q, pm, out(n);
    cpu::powersgd_step(x, rows, cols, r, p, 0, 0, q, pm, out);
    // The same first Q as the reference draws (warm start, t = 0, layer 0).
    std::vector<float> q0(static_cast<std::size_t>(cols * r));
    for (std::size_t i = 0; i < q0.size(); ++i) q0[i] = static_cast<float>(rng::normal_at(p.seed, rng::stream_of(0, 0), i));
    kc::copy_to_device(b.q.data(), q0.data(), q0.size() * 4);
    step(n, b, s);
    const auto got = fetch<float>(b.out.data(), n, s);
    double e2 = 0, r2 = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      e2 += (static_cast<double>(got[i]) - out[i]) * (static_cast<double>(got[i]) - out[i]);
      r2 += static_cast<double>(out[i]) * out[i];
    }
    const double rel = std::sqrt(e2 / std::max(r2, 1e-300));
    return rel <= kPowerRelTol ? "" : "M̂ relative error " + std::to_string(rel) + " > " + std::to_string(kPowerRelTol);
  };
  return m;
}

}  // namespace

std::int64_t bench_rows(std::uint64_t n) {
  int l = 0;
  while ((std::uint64_t{1} << (l + 1)) <= n) ++l;
  return std::int64_t{1} << (l / 2);
}

Buffers::Buffers(std::uint64_t max_n)
    : x(max_n * 4), out(max_n * 4), codes(max_n * 2 + 64), scales(max_n / 8 + 64), ws(kc::topk_workspace_bytes(max_n)),
      idx(max_n / 50 * 4 + 64), vals(max_n / 50 * 4 + 64), counter(64), q(max_n * 4 / 16 + 4096),
      p(max_n * 4 / 16 + 4096), scratch(max_n * 8 / 16 + 8192) {}

std::vector<MethodBench> all_methods() {
  std::vector<MethodBench> m;
  m.push_back(cast_method(true));
  m.push_back(cast_method(false));
  {
    const MaxMinParams p{};
    m.push_back(bucket_method(
        "maxmin", "bits=4, bucket_size=1024, stochastic", p.bits, p.bucket_size, 2,
        [p](const float* x, std::uint64_t n, std::uint8_t* c, float* s0, float* s1, kc::Stream s) {
          kc::maxmin_compress(x, n, p, kSeed, kStream, c, s0, s1, s);
        },
        [p](const std::uint8_t* c, const float* s0, const float* s1, std::uint64_t n, float* o, kc::Stream s) {
          kc::maxmin_decompress(c, s0, s1, n, p, o, s);
        },
        [p](const auto& x, auto& c, auto& s0, auto& s1, auto& o) {
          cpu::maxmin_compress(x, p, kSeed, kStream, c, s0, s1);
          cpu::maxmin_decompress(c, s0, s1, p, o);
        }));
  }
  {
    const QsgdParams p{};
    m.push_back(bucket_method(
        "qsgd", "levels=7 (4 bits), bucket_size=512, l2", qsgd_code_bits(p.levels), p.bucket_size, 1,
        [p](const float* x, std::uint64_t n, std::uint8_t* c, float* s0, float*, kc::Stream s) {
          kc::qsgd_compress(x, n, p, kSeed, kStream, c, s0, nullptr, s);
        },
        [p](const std::uint8_t* c, const float* s0, const float*, std::uint64_t n, float* o, kc::Stream s) {
          kc::qsgd_decompress(c, s0, n, p, o, s);
        },
        [p](const auto& x, auto& c, auto& s0, auto&, auto& o) {
          cpu::qsgd_compress(x, p, kSeed, kStream, c, s0);
          cpu::qsgd_decompress(c, s0, p, o);
        }));
  }
  {
    const NuqsgdParams p{};
    m.push_back(bucket_method(
        "nuqsgd", "levels=4 (4 bits), bucket_size=512", nuqsgd_code_bits(p.levels), p.bucket_size, 1,
        [p](const float* x, std::uint64_t n, std::uint8_t* c, float* s0, float*, kc::Stream s) {
          kc::nuqsgd_compress(x, n, p, kSeed, kStream, c, s0, s);
        },
        [p](const std::uint8_t* c, const float* s0, const float*, std::uint64_t n, float* o, kc::Stream s) {
          kc::nuqsgd_decompress(c, s0, n, p, o, s);
        },
        [p](const auto& x, auto& c, auto& s0, auto&, auto& o) {
          cpu::nuqsgd_compress(x, p, kSeed, kStream, c, s0);
          cpu::nuqsgd_decompress(c, s0, p, o);
        }));
  }
  {
    const SignParams p{};
    m.push_back(bucket_method(
        "sign", "bucket_size=1024", 1, p.bucket_size, 1,
        [p](const float* x, std::uint64_t n, std::uint8_t* c, float* s0, float*, kc::Stream s) {
          kc::sign_compress(x, n, p, c, s0, s);
        },
        [p](const std::uint8_t* c, const float* s0, const float*, std::uint64_t n, float* o, kc::Stream s) {
          kc::sign_decompress(c, s0, n, p, o, s);
        },
        [p](const auto& x, auto& c, auto& s0, auto&, auto& o) {
          cpu::sign_compress(x, p, c, s0);
          cpu::sign_decompress(c, s0, p, o);
        }));
  }
  {
    auto tern = bucket_method(
        "terngrad", "one scale per layer", 2, 0, 1,
        [](const float* x, std::uint64_t n, std::uint8_t* c, float* s0, float*, kc::Stream s) {
          kc::terngrad_compress(x, n, kSeed, kStream, c, s0, s);
        },
        [](const std::uint8_t* c, const float* s0, const float*, std::uint64_t n, float* o, kc::Stream s) {
          kc::terngrad_decompress(c, s0, n, o, s);
        },
        [](const auto& x, auto& c, auto& s0, auto&, auto& o) {
          s0[0] = cpu::terngrad_compress(x, kSeed, kStream, c);
          cpu::terngrad_decompress(c, s0[0], o);
        });
    tern.bytes_per_element = 12.0 + 2 * 2 / 8.0;
    tern.formula = "max pass read 4, quantise read 4 + write 2/8 | read 2/8, write 4";
    m.push_back(tern);
  }
  m.push_back(sparse_method(false));
  m.push_back(sparse_method(true));
  m.push_back(powersgd_method());
  return m;
}

}  // namespace lgreco::bench
