#pragma once
/// Synthetic gradient traces with the structure that matters for compression.
///
/// Layer l with shape [n, ...] is viewed as a matrix n × m (m = numel / n, as PowerSGD does). At a
/// recorded step s its gradient is
///
///   G_s = a_l · ( Σ_{r<R'} σ_r · u_{r,s} v_{r,s}ᵀ  +  η · E_s / √(n·m) ),   σ_r = (r + 1)^(−decay_l),
///   a_l = rms_l · √( n·m / (Σ_r σ_r² + η²) )           (so E‖G_s‖²_F ≈ rms_l² · n·m),
///
/// with R' = min(R, n, m) rank-1 terms, factor entries u ~ N(0, 1/n), v ~ N(0, 1/m), and noise E_s
/// with independent unit-variance entries: Student-t with ν = tail degrees of freedom (scaled by
/// √((ν−2)/ν)), or Gaussian when tail = 0. The factors follow an AR(1) process over step ids:
/// u_{s'} = ρ^d u_s + √(1 − ρ^{2d}) z with d = s' − s (consecutive steps: ρ; across a gap between
/// bursts the correlation decays as ρ^gap), so error feedback and warm-started power iterations see
/// realistic step-to-step correlation; the noise is fresh every step.
///
/// Per-layer parameters (deterministic from the seed; depth f = i/(L−1) ∈ [0, 1]):
///   rms_l   = scale · kind_factor · (0.5 + f) · exp(0.25·z_l)   kind_factor: weight 1, bias 0.5,
///                                                                norm 0.3, embedding 0.1
///   decay_l = decay · (0.8 + 0.4·u_l)                           u_l ~ U[0, 1), z_l ~ N(0, 1)
///
/// Determinism: every random number is a counter-based draw (core/rng.hpp) keyed by (seed, step id,
/// layer, element), so a trace is a pure function of its options, whatever the thread count.
/// Cost: R'·n·m multiply-adds plus one noise draw per element and step. Memory: a few buffers of
/// the largest layer (generation of the next layer-step overlaps compression of the current one).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/atomic_file.hpp"
#include "traces/presets.hpp"
#include "traces/trace_format.hpp"

namespace lgreco::traces {

/// Largest step id the generator writes (2^40: ids stay exact in a double and far from overflow).
inline constexpr std::int64_t kMaxSynthStepId = std::int64_t{1} << 40;

/// Knobs of the generator and of the trace it writes.
struct SynthOptions {
  std::int64_t steps = 8;             ///< recorded steps T (≥ 1)
  std::int64_t bursts = 1;            ///< number of bursts (used when burst_length == 0)
  std::int64_t burst_length = 0;      ///< steps per burst (last may be shorter); 0 = use `bursts`
  std::int64_t burst_spacing = 1000;  ///< step-id distance between burst starts (≥ burst length)
  std::int64_t first_step = 0;        ///< step id of the first recorded step
  StorageDtype dtype = StorageDtype::kFloat32;
  std::uint64_t seed = 0;
  std::int64_t world_size = 1;
  double decay = 1.0;       ///< spectral decay exponent (σ_r = (r+1)^−decay)
  double rho = 0.9;         ///< AR(1) coefficient of the factors per step (0 ≤ ρ < 1)
  double tail = 4.0;        ///< Student-t degrees of freedom of the noise (> 2), 0 = Gaussian
  int rank_terms = 16;      ///< R: rank-1 terms per layer (1..256)
  double noise = 0.3;       ///< η: noise Frobenius norm relative to a unit low-rank part
  double scale = 1e-3;      ///< base element RMS of a gradient
  int deflate_level = 1;    ///< HDF5 deflate level 0..9
  int threads = 0;          ///< generator threads (0 = hardware concurrency)
  double compute_flops_per_s = 0;  ///< > 0: write compute_time_s = 4·numel·uses·batch / flops
  std::string producer = "lgreco trace synth";
};

/// Throws ConfigError naming the option when a knob is out of range.
void check_synth_options(const SynthOptions& options);
/// Recorded step ids implied by steps / bursts / burst_length / burst_spacing / first_step.
std::vector<std::int64_t> synth_step_ids(const SynthOptions& options);

/// Generates the gradients of one layer step by step (AR(1) state kept between calls).
class LayerGenerator {
 public:
  /// `layer_index` and `num_layers` place the layer in depth; the tensor gives shape and kind.
  LayerGenerator(const TensorSpec& tensor, std::size_t layer_index, std::size_t num_layers, const SynthOptions& options);
  /// Writes G at `step_id` into out (size numel); step ids must increase from call to call.
  void generate(std::int64_t step_id, std::span<float> out);
  /// The per-layer parameters in use.
  double rms() const { return rms_; }
  double decay() const { return decay_; }
  int rank() const { return rank_; }

 private:
  void advance_factors(std::int64_t step_id);

  std::int64_t n_, m_;
  std::size_t layer_;
  SynthOptions opt_;
  int rank_;
  double rms_, decay_, amplitude_, noise_coef_;
  std::vector<double> sigma_;
  std::vector<float> u_, v_;  // rank_ × n and rank_ × m, AR(1) state
  bool started_ = false;
  std::int64_t last_step_ = 0;
};

/// Writes a synthetic trace of `model` to `dest` (atomically; nothing is left on failure or
/// Ctrl-C). Layer table: the model's tensors with DDP buckets (assign_ddp_buckets on fp32 bytes).
/// `progress(done, total)` counts layer-steps written.
void synthesize_trace(const ModelPreset& model, const SynthOptions& options, const std::filesystem::path& dest,
                      Overwrite policy, const std::function<void(std::int64_t, std::int64_t)>& progress = {});

}  // namespace lgreco::traces
