#pragma once
/// Error feedback, the one mechanism shared by every method and backend:
///   acc = g + e;  c = C(acc);  e ← acc − c        (all in fp32, element-wise, in that order)
/// so that e_new[i] == acc[i] − c[i] bitwise. The residual starts at zero; per-layer state (the
/// residual, PowerSGD's warm-start Q, DGC's velocity) is created on first use of a layer index and
/// kept until reset().
///
/// DGC momentum correction (top-k with momentum m > 0; Lin et al. 2018, §3.2), the same mechanism
/// with the velocity u (LayerState::velocity, starts at zero) in front of it; e plays DGC's v:
///   u ← m·u + g;  acc = e + u;  c = C(acc);  e ← acc − c;  u[i] ← 0 for every sent index i
/// (momentum factor masking; e[i] = acc[i] − acc[i] = 0 there by construction). Every operation is
/// one fp32 rounding (no fused multiply-add), m is rounded to fp32 once. m = 0 runs the plain rule
/// above, with no velocity, so its results are those of plain error feedback bit for bit.
/// Conservation (per element, exactly in fp32): c_t + e_t = acc_t = e_{t−1} + U_t, where
/// U_t = m·u_{t−1} + g_t is the velocity before masking; so Σ_t c_t + e_T = Σ_t U_t up to the
/// roundings of the additions (exactly when they are exact).
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>

#include "kernels/compressor.hpp"

namespace lgreco::kernels {

/// DGC momentum accumulation, element-wise (the CPU reference of the CUDA kernel):
///   u[i] ← m·u[i] + g[i];  acc[i] = e[i] + u[i]      (fp32, one rounding per operation).
/// All spans have the same length; acc may alias neither g, u nor e.
void momentum_accumulate(std::span<const float> g, std::span<float> u, std::span<const float> e, float m,
                         std::span<float> acc);

/// DGC momentum factor masking: u[j] = 0 for every j in `indices` (each < u.size()).
void momentum_mask(std::span<const std::uint32_t> indices, std::span<float> u);

/// The momentum factor a spec asks ErrorFeedback for: top-k's `momentum` in fp32, else 0.
float ef_momentum(const MethodSpec& spec);

/// Runs one compressor with error feedback over any number of layers.
class ErrorFeedback {
 public:
  /// Takes ownership of the compressor.
  explicit ErrorFeedback(std::unique_ptr<Compressor> compressor);

  /// One step of layer ctx.index: writes acc = g + e into `acc_out` and c = C(acc) into `recon_out`
  /// (both of g's length, not overlapping each other or g), updates e ← acc − c (and, with DGC
  /// momentum, u; see the file comment: then acc = e + u). Throws InputError if g (or acc) has a
  /// non-finite value, and InputError if the layer's length changed since its state was created.
  /// Empty spans mean "not wanted" for acc_out/recon_out (scratch is used).
  CompressInfo step(std::span<const float> grad, std::span<float> acc_out, std::span<float> recon_out,
                    const LayerContext& ctx);

  /// The state of a layer (created empty if absent).
  LayerState& state(std::uint64_t layer_index);
  /// Whether a layer has state.
  bool has_state(std::uint64_t layer_index) const;
  /// Forgets every layer's state (residuals back to zero, PowerSGD Q redrawn).
  void reset();
  /// The wrapped compressor.
  Compressor& compressor() { return *compressor_; }

 private:
  std::unique_ptr<Compressor> compressor_;
  std::unordered_map<std::uint64_t, LayerState> states_;
  std::vector<float> scratch_acc_, scratch_out_;
};

}  // namespace lgreco::kernels
