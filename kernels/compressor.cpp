#include "kernels/compressor.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "core/error.hpp"
#include "core/int_math.hpp"
#include "kernels/cpu/compressor.hpp"
#include "kernels/cpu/simd.hpp"
#include "kernels/cuda_backend.hpp"

namespace lgreco::kernels {

Backend backend_from_name(std::string_view name) {
  if (name == "cpu") return Backend::kCpu;
  if (name == "cuda") return Backend::kCuda;
  throw ConfigError("unknown kernel backend '" + std::string(name) + "'; known: cpu, cuda");
}

std::string to_string(Backend b) { return b == Backend::kCpu ? "cpu" : "cuda"; }

std::vector<std::int64_t> context_shape(const LayerContext& ctx, std::uint64_t n) {
  if (ctx.shape.empty()) return {static_cast<std::int64_t>(n)};
  return {ctx.shape.begin(), ctx.shape.end()};
}

namespace {
std::string layer_label(const LayerContext& ctx) {
  return "layer '" + std::string(ctx.name) + "' (index " + std::to_string(ctx.index) + ")";
}
}  // namespace

namespace {
// The largest magnitude bit pattern (sign cleared) of the values: ≥ 0x7F800000 iff some value is
// Inf or NaN, otherwise the bits of max |x| (0 for none). Kept separate from the throwing caller:
// functions compiled as target clones must not throw (GCC's clone dispatch does not carry unwind
// information).
LGRECO_CPU_CLONES std::int32_t max_magnitude_bits(const float* p, std::size_t n) noexcept {
  std::int32_t lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) {
      std::int32_t b;
      std::memcpy(&b, p + i + l, sizeof b);
      b &= 0x7FFFFFFF;
      lane[l] = b > lane[l] ? b : lane[l];
    }
  std::int32_t worst = 0;
  for (; i < n; ++i) {
    std::int32_t b;
    std::memcpy(&b, p + i, sizeof b);
    worst = std::max(worst, b & 0x7FFFFFFF);
  }
  for (std::int32_t l : lane) worst = std::max(worst, l);
  return worst;
}

std::size_t first_non_finite(std::span<const float> values) {
  for (std::size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i])) return i;
  return values.size();
}
}  // namespace

float check_finite(std::span<const float> values, const LayerContext& ctx, std::string_view what) {
  const std::int32_t bits = max_magnitude_bits(values.data(), values.size());
  if (bits < 0x7F800000) {
    float m;
    std::memcpy(&m, &bits, sizeof m);
    return m;
  }
  const std::size_t i = first_non_finite(values);
  std::ostringstream os;
  os << layer_label(ctx) << " step " << ctx.step << ": non-finite " << what << " value " << values[i] << " at element " << i
     << " (gradients must be finite)";
  throw InputError(os.str());
}

CompressInfo Compressor::compress(std::span<const float> acc, std::span<float> out, LayerState& state,
                                  const LayerContext& ctx) {
  if (out.size() != acc.size())
    throw InputError(layer_label(ctx) + ": output has " + std::to_string(out.size()) + " elements, input " +
                     std::to_string(acc.size()));
  if (!ctx.shape.empty()) {
    const auto numel = shape_numel(ctx.shape);
    if (!numel || static_cast<std::uint64_t>(*numel) != acc.size())
      throw InputError(layer_label(ctx) + ": shape has " + (numel ? std::to_string(*numel) : std::string("an invalid number of")) +
                       " elements, the tensor " + std::to_string(acc.size()));
  }
  if (acc.size() >= (std::uint64_t{1} << 32))
    throw InputError(layer_label(ctx) + ": " + std::to_string(acc.size()) + " elements; at most 2^32 − 1 supported");
  if (!acc.empty() && !out.empty() && acc.data() < out.data() + out.size() && out.data() < acc.data() + acc.size())
    throw InputError(layer_label(ctx) + ": output overlaps the input");
  const float largest = check_finite(acc, ctx);
  CompressInfo info = do_compress(acc, out, state, ctx);
  // Finite input can still overflow fp32 inside a method (fp16 above 65504, a max-min range or a
  // QSGD norm beyond FLT_MAX, PowerSGD's products). Below 65504 no method can (the largest
  // intermediate, a PowerSGD column's sum of squares, stays under 2^32 · (65504 · 2^16)^2 ≈ 8e28),
  // so the reconstruction is only scanned for larger inputs: real gradients pay nothing.
  if (largest >= kReconstructionCheckAbove && max_magnitude_bits(out.data(), out.size()) >= 0x7F800000) {
    const std::size_t i = first_non_finite(out);
    {
      std::ostringstream os;
      os << layer_label(ctx) << " step " << ctx.step << ": method '" << method_name(spec().method)
         << "' cannot represent this input (largest |value| " << largest << "; reconstruction " << out[i]
         << " at element " << i << "); scale the gradients or choose another method";
      throw InputError(os.str());
    }
  }
  ++state.steps;
  return info;
}

std::unique_ptr<Compressor> make_compressor(const MethodSpec& spec, Backend backend) {
  if (backend == Backend::kCuda) return cuda::make_compressor(spec);
  return cpu::make_compressor(spec);
}

}  // namespace lgreco::kernels
