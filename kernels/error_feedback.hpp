#pragma once
/// Error feedback, the one mechanism shared by every method and backend:
///   acc = g + e;  c = C(acc);  e ← acc − c        (all in fp32, element-wise, in that order)
/// so that e_new[i] == acc[i] − c[i] bitwise. The residual starts at zero; per-layer state (the
/// residual and PowerSGD's warm-start Q) is created on first use of a layer index and kept until
/// reset().
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>

#include "kernels/compressor.hpp"

namespace lgreco::kernels {

/// Runs one compressor with error feedback over any number of layers.
class ErrorFeedback {
 public:
  /// Takes ownership of the compressor.
  explicit ErrorFeedback(std::unique_ptr<Compressor> compressor);

  /// One step of layer ctx.index: writes acc = g + e into `acc_out` and c = C(acc) into `recon_out`
  /// (both of g's length, not overlapping each other or g), updates e ← acc − c. Throws InputError
  /// if g (or acc) has a non-finite value, and InputError if the layer's length changed since its
  /// state was created. Empty spans mean "not wanted" for acc_out/recon_out (scratch is used).
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
