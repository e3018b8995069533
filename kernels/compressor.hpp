#pragma once
/// One Compressor interface over the CPU reference and the CUDA backend.
///
/// compress(acc) → reconstruction c = C(acc) written into `out`, plus the wire size (exactly
/// kernels/wire.hpp's wire_plan for the layer's shape and step: every size on the wire is fixed by
/// the shape), the length of the data-dependent code where a method has one, and (top-k) the
/// encoding used. Error feedback is NOT done
/// by a compressor: kernels/error_feedback.hpp runs acc = g + e; c = C(acc); e ← acc − c for every
/// method alike (with top-k's DGC momentum correction folded in, see error_feedback.hpp). Per-layer
/// state that a method keeps across steps (PowerSGD's warm-start Q, DGC's velocity) lives in
/// LayerState, owned by the caller (normally ErrorFeedback).
///
/// Validation done by every backend before any work (Compressor::compress is non-virtual):
/// - acc.size() == out.size() == product(shape), N < 2^32 (a context without a shape, the empty
///   span, stands for the 1-D shape [acc.size()]: context_shape below);
/// - every acc[i] finite, else InputError "layer '<name>' (index <layer>) step <step>: non-finite
///   input value <v> at element <i> (gradients must be finite)" naming the first bad element.
/// Zero-length and all-zero layers are valid and reconstruct to zeros (see each method's header).
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "kernels/method.hpp"
#include "kernels/wire.hpp"

namespace lgreco::kernels {

/// Where the kernels run.
enum class Backend { kCpu, kCuda };

/// Parses "cpu" / "cuda"; ConfigError otherwise.
Backend backend_from_name(std::string_view name);
/// "cpu" / "cuda".
std::string to_string(Backend b);

/// Identity of the tensor being compressed: names it in errors, keys its random streams.
struct LayerContext {
  std::string_view name;                 ///< parameter name, for error messages
  std::uint64_t index = 0;               ///< layer index: rng::stream_of(step, index)
  std::uint64_t step = 0;                ///< training step: rng::stream_of(step, index)
  std::uint64_t seed = 0;                ///< run seed (PowerSGD uses its own `seed` parameter)
  std::span<const std::int64_t> shape;   ///< tensor shape; empty = not given (1-D of acc.size())
};

/// The shape a compression uses: ctx.shape, or [n] when the context gives none (for a scalar,
/// [] and [1] have the same matrix view and size, so the two readings agree).
std::vector<std::int64_t> context_shape(const LayerContext& ctx, std::uint64_t n);

/// What one compression produced, besides the reconstruction.
struct CompressInfo {
  WireSize wire;                                ///< bytes on the wire: wire_plan(spec, shape, step).size
  /// The data-dependent code's length where the method has one (top-k delta: 4k' + ⌈Σ gamma/8⌉;
  /// QSGD elias: ⌈Σ code bits/8⌉ + norms; DGC selection: the k' ≤ k entries kept), i.e. what a
  /// variable-size transport would carry; equal to wire.bytes for every other setting.
  std::uint64_t coded_bytes = 0;
  TopkEncoding encoding = TopkEncoding::kAuto;  ///< top-k: the encoding used (never kAuto there)
  std::uint64_t kept = 0;                       ///< top-k/random-k: entries sent; powersgd: r_eff
  bool compressed = true;                       ///< false when PowerSGD sent the layer dense
  /// top-k: the transmitted indices, strictly increasing (kept entries). Points into the
  /// compressor's scratch: valid until its next compress call. The CPU backend always fills it for
  /// top-k; the CUDA backend when momentum > 0 (it costs a device-to-host copy). Empty otherwise.
  std::span<const std::uint32_t> sent_indices;
};

/// Backend-specific per-layer storage (device copies of the state); owned by LayerState.
class BackendState {
 public:
  virtual ~BackendState() = default;
};

/// Everything kept per layer across steps. The host fields are the canonical state.
struct LayerState {
  std::vector<float> residual;           ///< error-feedback residual e (numel), managed by ErrorFeedback
  std::vector<float> velocity;           ///< DGC momentum velocity u (numel) when momentum > 0, by ErrorFeedback
  std::vector<float> q;                  ///< PowerSGD warm-start Q, m×r_eff row-major; empty = none yet
  std::int64_t q_rows = 0;               ///< m of q
  std::int64_t q_cols = 0;               ///< r_eff of q
  std::uint64_t steps = 0;               ///< compressions done with this state
  std::unique_ptr<BackendState> backend; ///< optional device-side mirror (CUDA backend)
};

/// A compression method bound to a backend. An instance keeps scratch buffers between calls and is
/// not thread-safe: use one per thread (the per-layer state lives in LayerState, not here).
class Compressor {
 public:
  virtual ~Compressor() = default;

  /// The method and its parameters.
  virtual const MethodSpec& spec() const = 0;
  /// The backend this compressor runs on.
  virtual Backend backend() const = 0;

  /// Validates (see the file comment) and compresses `acc` into `out` (same length, must not
  /// overlap acc). `state` is read and updated for stateful methods (PowerSGD Q); its `residual`
  /// is not touched. Deterministic: the same inputs, state and context give the same bytes.
  CompressInfo compress(std::span<const float> acc, std::span<float> out, LayerState& state, const LayerContext& ctx);

 protected:
  /// The method itself, called after validation.
  virtual CompressInfo do_compress(std::span<const float> acc, std::span<float> out, LayerState& state,
                                   const LayerContext& ctx) = 0;
};

/// Creates a compressor; Backend::kCuda throws CudaUnavailable when this build has no CUDA backend
/// or the machine has no device.
std::unique_ptr<Compressor> make_compressor(const MethodSpec& spec, Backend backend = Backend::kCpu);

/// Throws InputError naming the layer and the first non-finite element, if any; returns max |x|
/// (0 for no values).
float check_finite(std::span<const float> values, const LayerContext& ctx, std::string_view what = "input");

/// Compressor::compress scans the reconstruction for Inf/NaN (and throws InputError naming the
/// method) when the input's largest magnitude reaches this; below it no method can overflow fp32.
inline constexpr float kReconstructionCheckAbove = 65504.0f;

}  // namespace lgreco::kernels
