#pragma once
/// Synthetic gradient traces with the structure that matters for layer-wise compression.
///
/// Layer l with shape [n, ...] is viewed as a matrix n × m (m = numel / n, as PowerSGD does). At a
/// recorded step s its gradient is
///
///   G_s = a_l · D_r ( Σ_{r<R'} σ_r · u_{r,s} v_{r,s}ᵀ  +  η_l · E_s / √(n·m) ) D_c,
///   σ_r = (r + 1)^(−α_l),   a_l = rms_l · √( n·m / (Σ_r σ_r² + η_l²) ),
///
/// with R' = min(R, n, m) rank-1 terms, noise E_s with independent unit-variance entries (Student-t
/// with ν_l degrees of freedom scaled by √((ν−2)/ν), or Gaussian when ν = 0, fresh every step) and
/// fixed diagonal row and column scales D_r, D_c (entries exp(τ_l·N(0, 1)), normalised to mean
/// square 1), so that E‖G_s‖²_F ≈ rms_l² · n·m. Below, z_l ~ N(0, 1) and u_l ~ U[0, 1) are drawn
/// per layer from the seed.
///
/// Two profiles say where the per-layer parameters come from:
///
/// - `measured` (the default): the factors live in fixed per-layer subspaces. u_{r,s} = Σ_{k<K}
///   A_{rk,s} · w_k · p_k with K = min(32, n) fixed random directions p_k (entries N(0, 1/n)),
///   weights w_k ∝ (k + 1)^(−β_u) (Σ w_k² = 1), and coefficients A following an AR(1) process over
///   step ids with ρ_u; v likewise with q_k, β_v, ρ_v. Fresh coefficients give consecutive steps a
///   small cosine while their top singular subspaces persist, as in recorded traces. Every layer of
///   a step is multiplied by a shared gain exp(σ_g·z_s − σ_g²), z_s ~ N(0, 1) per step id (σ_g = 0.2).
///   The per-layer parameters depend on the layer's class (classify_layers), its depth
///   f = i/(N−1) and its size, fitted to recorded traces (docs/synthetic-traces.md):
///     log10 rms_l = log10(scale · k_class) − 0.52 · (f − 0.5) − 0.175 · log10(numel / 65536) + 0.05 · z_l,
///     α_l = α_class · (1 + 0.4 · (f − 0.5)) · (0.9 + 0.2 · u_l),
///     η_l² = φ_l / (1 − φ_l) · Σ_r σ_r²  with noise share φ_l = φ_class · (1 − 0.8 · (f − 0.5)),
///   and ν, τ, ρ_u, ρ_v, β_u, β_v per class (the table in synth.cpp); R = 24 rank-1 terms, so that
///   the spectrum keeps decaying past rank 8 inside the layer's persistent subspaces (what error
///   feedback accumulates) instead of ending in white noise.
/// - `flat`: the generator of lgreco ≤ 0.1 ("lgreco-synth-v1"), kept bit for bit: the factors
///   themselves follow AR(1) with ρ (u ~ N(0, 1/n), v ~ N(0, 1/m)), no row/column scales, no step
///   gain, R = 16, and
///     rms_l = scale · kind_factor · (0.5 + f) · exp(0.25·z_l)  (weight 1, bias 0.5, norm 0.3,
///     embedding 0.1),  α_l = decay · (0.8 + 0.4·u_l),  η = noise,  ν = tail,
///   the same structure in every layer: adaptive plans gain little over uniform ones on it.
///
/// `decay`, `rho`, `tail` and `noise`, when set, override the profile's values for every layer
/// (measured: α_l = decay · (0.9 + 0.2·u_l), ρ_u = ρ_v = rho).
///
/// Determinism: every random number is a counter-based draw (core/rng.hpp) keyed by (seed, step id,
/// layer, element), so a trace is a pure function of its options, whatever the thread count.
/// Cost per layer-step: R'·n·m multiply-adds plus one noise draw per element (measured: plus
/// R'·K·(n + m) for the factors and one multiply per element for the scales). Memory: a few
/// buffers of the largest layer (generation of the next layer-step overlaps compression of the
/// current one).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/atomic_file.hpp"
#include "traces/presets.hpp"
#include "traces/trace_format.hpp"

namespace lgreco::traces {

/// Largest step id the generator writes (2^40: ids stay exact in a double and far from overflow).
inline constexpr std::int64_t kMaxSynthStepId = std::int64_t{1} << 40;

/// Where the per-layer parameters of a synthetic trace come from (see above).
enum class SynthProfile { kMeasured, kFlat };
/// "measured", "flat".
const char* to_string(SynthProfile profile);
/// Inverse of to_string; ConfigError naming the accepted values otherwise.
SynthProfile parse_synth_profile(const std::string& text);

/// What a tensor is for the generator, finer than LayerKind (scripts/trace_stats.py uses the same
/// rule): norm, bias and embedding from the kind; weights with ≥ 3 dimensions are conv; the last
/// 2-D weight in parameter order is the head when its module is called head, lm_head, fc, linear or
/// classifier; 2-D weights of attention (names with attn, attention, qkv, query, key, value,
/// q/k/v/o_proj, in_proj, out_proj, or a module called proj) are attention; other 2-D weights are
/// linear; a 1-D weight counts as a bias.
enum class LayerClass { kConv, kAttention, kLinear, kHead, kEmbedding, kNorm, kBias };
/// "conv", "attention", "linear", "head", "embedding", "norm", "bias".
const char* to_string(LayerClass cls);
/// The class of every tensor of a model (parameter order).
std::vector<LayerClass> classify_layers(const std::vector<TensorSpec>& tensors);

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
  SynthProfile profile = SynthProfile::kMeasured;
  std::optional<double> decay;  ///< spectral decay exponent α (σ_r = (r+1)^−α); flat default 1.0
  std::optional<double> rho;    ///< AR(1) coefficient of the factors per step, [0, 1); flat default 0.9
  std::optional<double> tail;   ///< Student-t degrees of freedom of the noise (> 2), 0 = Gaussian; flat default 4
  std::optional<double> noise;  ///< η: noise Frobenius norm relative to a unit low-rank part; flat default 0.3
  std::optional<int> rank_terms;  ///< R: rank-1 terms per layer (1..256); default 24 (measured), 16 (flat)
  /// Element RMS: flat, of a weight at depth 0.5; measured, of a conv or linear matrix of 65,536
  /// elements at depth 0.5.
  double scale = 1e-3;
  int deflate_level = 1;    ///< HDF5 deflate level 0..9
  int threads = 0;          ///< generator threads (0 = hardware concurrency)
  double compute_flops_per_s = 0;  ///< > 0: write compute_time_s = 4·numel·uses·batch / flops
  std::string producer = "lgreco trace synth";
};

/// Throws ConfigError naming the option when a knob is out of range.
void check_synth_options(const SynthOptions& options);
/// Recorded step ids implied by steps / bursts / burst_length / burst_spacing / first_step.
std::vector<std::int64_t> synth_step_ids(const SynthOptions& options);

/// The parameters of one layer's generator (the symbols of the model above).
struct LayerParams {
  LayerClass cls = LayerClass::kLinear;
  double depth = 1.0;   ///< f
  double rms = 0;       ///< target element RMS
  double decay = 0;     ///< α
  double noise = 0;     ///< η
  double tail = 0;      ///< ν (0 = Gaussian)
  double rho_u = 0, rho_v = 0;            ///< AR(1) coefficients per step (flat: both ρ)
  int pool = 0;                           ///< K (0: flat, the factors themselves follow AR(1))
  double pool_decay_u = 0, pool_decay_v = 0;  ///< β_u, β_v
  double spread = 0;                      ///< τ (0: no row/column scales)
  double step_gain = 0;                   ///< σ_g of the gain shared by all layers of a step (0: none)
};

/// Parameters of tensor `layer` of a model under `options` (its class from classify_layers).
LayerParams layer_params(const std::vector<TensorSpec>& tensors, std::size_t layer, const SynthOptions& options);

/// Generates the gradients of one layer step by step (AR(1) state kept between calls).
class LayerGenerator {
 public:
  /// Tensor `layer` of a model: class and depth from the model (what synthesize_trace uses).
  LayerGenerator(const std::vector<TensorSpec>& tensors, std::size_t layer, const SynthOptions& options);
  /// A tensor on its own, placed at `layer_index` of `num_layers` (never classified as a head).
  LayerGenerator(const TensorSpec& tensor, std::size_t layer_index, std::size_t num_layers, const SynthOptions& options);
  /// A tensor with explicit parameters (`layer_index` keys its random streams).
  LayerGenerator(const TensorSpec& tensor, std::size_t layer_index, const LayerParams& params, const SynthOptions& options);
  /// Writes G at `step_id` into out (size numel); step ids must increase from call to call.
  void generate(std::int64_t step_id, std::span<float> out);
  /// The per-layer parameters in use.
  const LayerParams& params() const { return p_; }
  double rms() const { return p_.rms; }
  double decay() const { return p_.decay; }
  int rank() const { return rank_; }

 private:
  void advance_factors(std::int64_t step_id);

  std::int64_t n_, m_;
  std::size_t layer_;
  SynthOptions opt_;
  LayerParams p_;
  int rank_;
  int ku_ = 0, kv_ = 0;  // pool sizes (measured)
  double amplitude_, noise_coef_;
  std::vector<double> sigma_;
  std::vector<float> u_, v_;          // rank_ × n and rank_ × m: the factors at the current step
  std::vector<float> a_, b_;          // rank_ × ku_, rank_ × kv_: AR(1) coefficients (measured)
  std::vector<float> pool_u_, pool_v_;  // ku_ × n, kv_ × m: w_k·p_k and w_k·q_k (measured)
  std::vector<float> row_scale_, col_scale_;  // D_r, D_c (empty: none)
  bool started_ = false;
  std::int64_t last_step_ = 0;
};

/// Writes a synthetic trace of `model` to `dest` (atomically; nothing is left on failure or
/// Ctrl-C). Layer table: the model's tensors with DDP buckets (assign_ddp_buckets on fp32 bytes).
/// `progress(done, total)` counts layer-steps written.
void synthesize_trace(const ModelPreset& model, const SynthOptions& options, const std::filesystem::path& dest,
                      Overwrite policy, const std::function<void(std::int64_t, std::int64_t)>& progress = {});

}  // namespace lgreco::traces
