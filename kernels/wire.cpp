#include "kernels/wire.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace lgreco::kernels {

MatrixView powersgd_view(std::span<const std::int64_t> shape, std::uint64_t numel, const PowerSgdParams& p) {
  MatrixView v;
  const auto N = static_cast<std::int64_t>(numel);
  v.n = shape.empty() ? N : shape[0];
  if (N == 0 || v.n == 0) {
    v.n = shape.empty() ? 0 : v.n;
    v.m = 0;
    return v;  // nothing to send; not "compressed"
  }
  v.m = N / v.n;
  v.r_eff = std::min<std::int64_t>({v.n, v.m, p.rank});
  if (p.rank == 0) {
    v.compressed = true;
  } else {
    const double lhs = static_cast<double>(v.n + v.m) * static_cast<double>(v.r_eff) * p.min_compression_rate;
    v.compressed = lhs < static_cast<double>(v.n) * static_cast<double>(v.m);
  }
  return v;
}

std::uint64_t sparse_k(std::uint64_t numel, double density) {
  if (numel == 0) return 0;
  const double k = std::ceil(density * static_cast<double>(numel));
  if (!(k >= 1.0)) return 1;
  return std::min<std::uint64_t>(numel, static_cast<std::uint64_t>(k));
}

double topk_density_at(const TopkParams& p, std::uint64_t step) {
  if (p.warmup_steps <= 0) return p.density;
  const std::uint64_t stage = step / static_cast<std::uint64_t>(p.warmup_steps);
  // 0.25·4^(−stage) = 2^(−2−2·stage); below 2^−1074 it is 0 in double, so stop early.
  if (stage >= 600) return p.density;
  const double warm = std::ldexp(1.0, -2 - 2 * static_cast<int>(stage));
  return std::max(p.density, warm);
}

std::uint64_t topk_bytes(TopkEncoding enc, std::uint64_t numel, std::uint64_t k, std::uint64_t delta_bits) {
  switch (enc) {
    case TopkEncoding::kPairs: return 8 * k;
    case TopkEncoding::kBitmap: return ceil_div(numel, 8) + 4 * k;
    case TopkEncoding::kDelta: return 4 * k + ceil_div(delta_bits, 8);
    case TopkEncoding::kAuto: break;
  }
  throw Error("topk_bytes: encoding 'auto' must be resolved first");
}

TopkEncoding topk_auto_encoding(std::uint64_t numel, std::uint64_t k) {
  return topk_bytes(TopkEncoding::kBitmap, numel, k) < topk_bytes(TopkEncoding::kPairs, numel, k)
             ? TopkEncoding::kBitmap
             : TopkEncoding::kPairs;
}

std::uint64_t delta_gamma_bits(std::span<const std::uint32_t> idx) {
  std::uint64_t bits = 0;
  std::uint64_t prev = 0;
  for (std::size_t j = 0; j < idx.size(); ++j) {
    const std::uint64_t gap = j == 0 ? std::uint64_t{idx[0]} + 1 : std::uint64_t{idx[j]} - prev;
    bits += elias_gamma_bits(gap);
    prev = idx[j];
  }
  return bits;
}

int qsgd_code_bits(int levels) { return ceil_log2(2 * static_cast<std::uint64_t>(levels) + 1); }
int nuqsgd_code_bits(int levels) { return 1 + ceil_log2(static_cast<std::uint64_t>(levels) + 2); }

WireSize wire_size(const MethodSpec& spec, std::span<const std::int64_t> shape, std::uint64_t N) {
  MethodSpec steady = spec;
  steady.topk.warmup_steps = 0;
  return wire_size(steady, shape, N, 0);
}

WireSize wire_size(const MethodSpec& spec, std::span<const std::int64_t> shape, std::uint64_t N, std::uint64_t step) {
  WireSize w;
  auto allgather = [&](std::uint64_t bytes) {
    w.collective = Collective::kAllgather;
    w.allgather_bytes = bytes;
    w.bytes = bytes;
  };
  auto allreduce = [&](std::uint64_t round0, std::uint64_t round1) {
    w.collective = Collective::kAllreduce;
    w.allreduce_round_bytes = {round0, round1};
    w.bytes = round0 + round1;
  };
  switch (spec.method) {
    case Method::kNone: allreduce(4 * N, 0); break;
    case Method::kFp16:
    case Method::kBf16: allreduce(2 * N, 0); break;
    case Method::kPowerSgd: {
      const MatrixView v = powersgd_view(shape, N, spec.powersgd);
      if (v.compressed) {
        const auto q = static_cast<std::uint64_t>(spec.powersgd.power_iterations);
        const auto r = static_cast<std::uint64_t>(v.r_eff);
        allreduce(q * 4 * r * static_cast<std::uint64_t>(v.n), q * 4 * r * static_cast<std::uint64_t>(v.m));
      } else {
        allreduce(4 * N, 0);
      }
      break;
    }
    case Method::kTopK: {
      const std::uint64_t k = sparse_k(N, topk_density_at(spec.topk, step));
      TopkEncoding e = spec.topk.encoding;
      if (e == TopkEncoding::kAuto) e = topk_auto_encoding(N, k);
      if (e == TopkEncoding::kDelta) e = TopkEncoding::kPairs;  // data dependent: estimate
      allgather(topk_bytes(e, N, k));
      break;
    }
    case Method::kRandomK: allreduce(4 * sparse_k(N, spec.randomk.density), 0); break;
    case Method::kQsgd: {
      const int b = qsgd_code_bits(spec.qsgd.levels);
      allgather(ceil_div(N * static_cast<std::uint64_t>(b), 8) +
                4 * ceil_div(N, static_cast<std::uint64_t>(spec.qsgd.bucket_size)));
      break;
    }
    case Method::kMaxMin:
      if (N < 16) allgather(4 * N);
      else
        allgather(ceil_div(static_cast<std::uint64_t>(spec.maxmin.bits) * N, 8) +
                  8 * ceil_div(N, static_cast<std::uint64_t>(spec.maxmin.bucket_size)));
      break;
    case Method::kSign: allgather(ceil_div(N, 8) + 4 * ceil_div(N, static_cast<std::uint64_t>(spec.sign.bucket_size))); break;
    case Method::kTernGrad: allgather(ceil_div(2 * N, 8) + 4); break;
    case Method::kNuqsgd: {
      const int b = nuqsgd_code_bits(spec.nuqsgd.levels);
      allgather(ceil_div(N * static_cast<std::uint64_t>(b), 8) +
                4 * ceil_div(N, static_cast<std::uint64_t>(spec.nuqsgd.bucket_size)));
      break;
    }
  }
  return w;
}

}  // namespace lgreco::kernels
