#include "kernels/wire.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.hpp"

namespace lgreco::kernels {
namespace {

std::string shape_text(std::span<const std::int64_t> shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// The last step of the warm-up stage containing `step` plus one (nullopt: no later change).
std::optional<std::uint64_t> stage_end(const TopkParams& p, std::uint64_t step) {
  if (p.warmup_steps <= 0 || topk_density_at(p, step) == p.density) return std::nullopt;
  const auto w = static_cast<std::uint64_t>(p.warmup_steps);
  return (step / w + 1) * w;
}

}  // namespace

std::uint64_t wire_numel(std::span<const std::int64_t> shape) {
  const auto n = shape_numel(shape);
  if (!n) throw ConfigError("shape " + shape_text(shape) + ": dimensions must be >= 0 and their product must fit in 64 bits");
  return static_cast<std::uint64_t>(*n);
}

MatrixView powersgd_view(std::span<const std::int64_t> shape, const PowerSgdParams& p) {
  MatrixView v;
  const auto N = static_cast<std::int64_t>(wire_numel(shape));
  v.n = shape.empty() ? 1 : shape[0];
  if (N == 0 || v.n == 0) return v;  // nothing to send; not "compressed"
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
  if (k >= static_cast<double>(numel)) return numel;
  return static_cast<std::uint64_t>(k);
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
  return topk_bytes(TopkEncoding::kBitmap, numel, k) < topk_bytes(TopkEncoding::kPairs, numel, k) ? TopkEncoding::kBitmap
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

std::uint64_t delta_bound_bits(std::uint64_t numel, std::uint64_t k) {
  if (k == 0) return 0;
  if (k > numel) throw Error("delta_bound_bits: k = " + std::to_string(k) + " exceeds N = " + std::to_string(numel));
  // Σ (2·f_j + 1) with f_j = floor(log2 g_j), maximal for Σ 2^f_j ≤ N: every f_j = p and u of them
  // p + 1, p = floor(log2(N/k)), u = floor((N − k·2^p) / 2^p) < k.
  const int p = floor_log2(numel / k);
  const std::uint64_t unit = std::uint64_t{1} << p;
  const std::uint64_t upgrades = std::min(k, (numel - k * unit) / unit);
  return 2 * (k * static_cast<std::uint64_t>(p) + upgrades) + k;
}

int qsgd_code_bits(int levels) { return ceil_log2(2 * static_cast<std::uint64_t>(levels) + 1); }
int qsgd_elias_max_bits(int levels) { return static_cast<int>(elias_gamma_bits(static_cast<std::uint64_t>(levels) + 1)) + 1; }
int nuqsgd_code_bits(int levels) { return 1 + ceil_log2(static_cast<std::uint64_t>(levels) + 2); }

WirePlan wire_plan(const MethodSpec& spec, std::span<const std::int64_t> shape, std::optional<std::uint64_t> step) {
  const std::uint64_t N = wire_numel(shape);
  WirePlan plan;
  WireSize& w = plan.size;
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
  auto per_bucket = [&](int bucket) { return ceil_div(N, static_cast<std::uint64_t>(bucket)); };
  switch (spec.method) {
    case Method::kNone:
      plan.raw = true;
      allreduce(4 * N, 0);
      break;
    case Method::kFp16:
    case Method::kBf16: allreduce(2 * N, 0); break;
    case Method::kPowerSgd: {
      plan.view = powersgd_view(shape, spec.powersgd);
      if (plan.view.compressed) {
        const auto q = static_cast<std::uint64_t>(spec.powersgd.power_iterations);
        const auto r = static_cast<std::uint64_t>(plan.view.r_eff);
        allreduce(q * 4 * r * static_cast<std::uint64_t>(plan.view.n), q * 4 * r * static_cast<std::uint64_t>(plan.view.m));
      } else {
        plan.raw = true;
        allreduce(4 * N, 0);
      }
      break;
    }
    case Method::kTopK: {
      const double d = step ? topk_density_at(spec.topk, *step) : spec.topk.density;
      plan.k = sparse_k(N, d);
      plan.encoding = spec.topk.encoding == TopkEncoding::kAuto ? topk_auto_encoding(N, plan.k) : spec.topk.encoding;
      const std::uint64_t bound = plan.encoding == TopkEncoding::kDelta ? delta_bound_bits(N, plan.k) : 0;
      allgather(topk_bytes(plan.encoding, N, plan.k, bound));
      break;
    }
    case Method::kRandomK:
      plan.k = sparse_k(N, spec.randomk.density);
      allreduce(4 * plan.k, 0);
      break;
    case Method::kQsgd: {
      const int b = spec.qsgd.encoding == QsgdEncoding::kElias ? qsgd_elias_max_bits(spec.qsgd.levels) : qsgd_code_bits(spec.qsgd.levels);
      plan.code_bits = b;
      allgather(ceil_div(N * static_cast<std::uint64_t>(b), 8) + 4 * per_bucket(spec.qsgd.bucket_size));
      break;
    }
    case Method::kMaxMin:
      if (N < 16) {
        plan.raw = true;
        allgather(4 * N);
      } else {
        plan.code_bits = spec.maxmin.bits;
        allgather(ceil_div(static_cast<std::uint64_t>(spec.maxmin.bits) * N, 8) + 8 * per_bucket(spec.maxmin.bucket_size));
      }
      break;
    case Method::kSign:
      plan.code_bits = 1;
      allgather(ceil_div(N, 8) + 4 * per_bucket(spec.sign.bucket_size));
      break;
    case Method::kTernGrad:
      plan.code_bits = 2;
      allgather(ceil_div(2 * N, 8) + 4);
      break;
    case Method::kNuqsgd: {
      const int b = nuqsgd_code_bits(spec.nuqsgd.levels);
      plan.code_bits = b;
      allgather(ceil_div(N * static_cast<std::uint64_t>(b), 8) + 4 * per_bucket(spec.nuqsgd.bucket_size));
      break;
    }
  }
  return plan;
}

WireSize wire_size(const MethodSpec& spec, std::span<const std::int64_t> shape, std::optional<std::uint64_t> step) {
  return wire_plan(spec, shape, step).size;
}

std::vector<WireStage> wire_stages(const MethodSpec& spec, std::span<const std::int64_t> shape, std::uint64_t from_step,
                                   std::optional<std::uint64_t> to_step) {
  std::vector<WireStage> out;
  const bool warm = spec.method == Method::kTopK && spec.topk.warmup_steps > 0;
  if (!warm) {
    out.push_back({from_step, to_step, wire_plan(spec, shape, from_step)});
    return out;
  }
  std::uint64_t s = from_step;
  while (!to_step || s < *to_step) {
    std::optional<std::uint64_t> end = stage_end(spec.topk, s);
    if (to_step && (!end || *end > *to_step)) end = to_step;
    out.push_back({s, end, wire_plan(spec, shape, s)});
    if (!end) break;
    s = *end;
  }
  return out;
}

}  // namespace lgreco::kernels
