#include "sim/replay_measure.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "kernels/cpu/powersgd.hpp"
#include "kernels/wire.hpp"

namespace lgreco::sim {

using kernels::Method;
using kernels::MethodSpec;

double frobenius_distance(std::span<const float> a, std::span<const float> b) {
  // Blocks of 1024 differences squared in fp32 (8 independent lanes, vectorisable), each block
  // added to a double: relative error ~1e-7 per block, none accumulated across the tensor.
  const std::size_t n = a.size();
  double total = 0;
  for (std::size_t start = 0; start < n; start += 1024) {
    const std::size_t end = std::min(n, start + 1024);
    float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    std::size_t i = start;
    for (; i + 8 <= end; i += 8) {
      for (int j = 0; j < 8; ++j) {
        const float d = a[i + j] - b[i + j];
        lane[j] += d * d;
      }
    }
    double block = 0;
    for (; i < end; ++i) {
      const double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
      block += d * d;
    }
    for (float v : lane) block += v;
    total += block;
  }
  return std::sqrt(total);
}

MethodSpec measurement_spec(const MethodSpec& candidate, int iterations, std::uint64_t seed) {
  MethodSpec m = candidate;
  if (m.method == Method::kPowerSgd) {
    m.powersgd.power_iterations = iterations;
    m.powersgd.warm_start = false;
    m.powersgd.seed = seed;
  }
  return m;
}

double candidate_bytes(const MethodSpec& spec, std::span<const std::int64_t> shape) {
  return static_cast<double>(kernels::wire_size(spec, shape).bytes);
}

std::vector<CandidateMeasure> measure_on_matrix(std::span<const float> a, std::span<const std::int64_t> shape,
                                                const std::vector<MethodSpec>& candidates, ErrorMode mode,
                                                const ReplayOptions& options, const kernels::LayerContext& ctx,
                                                std::span<float> scratch) {
  std::vector<CandidateMeasure> out;
  out.reserve(candidates.size());

  // Exact mode: one spectrum for every PowerSGD rank of the layer.
  kernels::cpu::ExactRankErrors exact;
  std::int64_t k_min = 0, k_max = -1;
  if (mode == ErrorMode::kExact) {
    for (const auto& c : candidates) {
      if (c.method != Method::kPowerSgd) continue;
      const auto v = kernels::powersgd_view(shape, c.powersgd);
      if (!v.compressed) continue;
      k_min = (k_max < 0) ? v.r_eff : std::min(k_min, v.r_eff);
      k_max = std::max(k_max, v.r_eff);
    }
    if (k_max >= 0) {
      const auto v = kernels::powersgd_view(shape, candidates.front().powersgd);
      kernels::cpu::ExactRankOptions eo;
      eo.seed = options.seed;
      // Certified to the relative accuracy eo.tolerance when exact.converged; otherwise every error
      // is still an upper bound on the best rank-k error (Ritz values bound σ² from below).
      exact = kernels::cpu::exact_rank_errors(a, v.n, v.m, k_min, k_max, eo);
    }
  }

  for (const auto& c : candidates) {
    CandidateMeasure m;
    m.spec = c;
    const auto wire = kernels::wire_size(c, shape);
    m.collective = wire.collective;
    if (mode == ErrorMode::kExact && c.method == Method::kPowerSgd &&
        kernels::powersgd_view(shape, c.powersgd).compressed) {
      const auto r = kernels::powersgd_view(shape, c.powersgd).r_eff;
      m.error = exact.errors.at(static_cast<std::size_t>(r - k_min));
      m.bytes = static_cast<double>(wire.bytes);
    } else {
      auto comp = kernels::make_compressor(measurement_spec(c, options.measure_iterations, options.seed), options.backend);
      kernels::LayerState st;
      comp->compress(a, scratch, st, ctx);
      m.error = frobenius_distance(a, scratch);
      m.bytes = static_cast<double>(wire.bytes);
    }
    if (!std::isfinite(m.error)) {
      throw InputError("layer '" + std::string(ctx.name) + "': candidate " + kernels::describe(c) + " has non-finite error");
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace lgreco::sim
