#include "traces/synth.hpp"

#include <algorithm>
#include <cmath>
#include <future>
#include <memory>
#include <regex>
#include <thread>

#include "core/build_info.hpp"
#include "core/text.hpp"
#include "core/cancel.hpp"
#include "core/error.hpp"
#include "core/int_math.hpp"
#include "core/json_util.hpp"
#include "core/rng.hpp"
#include "traces/buckets.hpp"
#include "traces/writer.hpp"

namespace lgreco::traces {
namespace {

// Independent keys for the uses of randomness, derived from the user's seed.
std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
std::uint64_t params_key(std::uint64_t seed) { return splitmix64(seed ^ 0x706172616d73ull); }
std::uint64_t factors_key(std::uint64_t seed) { return splitmix64(seed ^ 0x666163746f7273ull); }
std::uint64_t noise_key(std::uint64_t seed) { return splitmix64(seed ^ 0x6e6f697365ull); }
std::uint64_t pool_key(std::uint64_t seed) { return splitmix64(seed ^ 0x706f6f6cull); }
std::uint64_t scales_key(std::uint64_t seed) { return splitmix64(seed ^ 0x7363616c6573ull); }
std::uint64_t gain_key(std::uint64_t seed) { return splitmix64(seed ^ 0x6761696eull); }

// The flat profile's defaults (lgreco-synth-v1).
constexpr double kFlatDecay = 1.0, kFlatRho = 0.9, kFlatTail = 4.0, kFlatNoise = 0.3;
constexpr int kFlatRankTerms = 16, kMeasuredRankTerms = 24;

double flat_kind_factor(LayerKind k) {
  switch (k) {
    case LayerKind::kWeight: return 1.0;
    case LayerKind::kBias: return 0.5;
    case LayerKind::kNorm: return 0.3;
    case LayerKind::kEmbedding: return 0.1;
  }
  return 1.0;
}

// The measured profile. Fitted to recorded traces (docs/synthetic-traces.md: a character-level
// transformer LM, examples/charlm.py, and a small ResNet, examples/digits_cnn.py, measured with
// scripts/trace_stats.py). rms: the class's factor k in
//   log10 rms = log10(scale·k) + kDepthSlope·(f − 0.5) + kSizeExponent·log10(numel / kReferenceNumel) + kRmsJitter·z,
// a joint least-squares fit over the compressible matrices of both traces (slopes −0.48/−0.56 and
// −0.17/−0.18 in the two, residual sd 0.05), the class factors as medians of the residuals relative
// to the conv/linear matrices of the same trace. The spectral, temporal and tail parameters of conv,
// attention and linear matrices were fitted by simulation (Nelder-Mead on a numpy copy of this
// generator) to the class's medians of E1, E4, E8, corr1, the subspace overlaps, kurtosis and max_z,
// then adjusted on the synthetic traces of the charlm and digits-resnet presets; those of the head,
// embedding and vector classes were set by hand from a few simulations (one or two recorded
// tensors of each: docs/synthetic-traces.md says what is and is not matched).
struct ClassProfile {
  double rms;           // k
  double decay;         // α at depth 0.5 (× 0.9 + 0.2·u_l per layer)
  double noise_share;   // φ = η² / (Σσ² + η²) at depth 0.5
  double tail;          // ν of the noise (0 = Gaussian)
  double spread;        // τ of the row and column scales
  double rho_u, rho_v;  // AR(1) of the factor coefficients per step
  double pool_decay_u, pool_decay_v;  // β_u, β_v
};
//                                         k     α     φ     ν    τ     ρ_u   ρ_v   β_u   β_v
constexpr ClassProfile kConv{           1.00, 0.55, 0.06, 0.0, 0.25, 0.20, 0.55, 0.00, 0.30};
constexpr ClassProfile kAttention{      1.74, 0.45, 0.08, 0.0, 0.20, 0.20, 0.67, 0.00, 0.10};
constexpr ClassProfile kLinear{         1.00, 0.30, 0.12, 0.0, 0.26, 0.22, 0.65, 0.00, 0.00};
constexpr ClassProfile kHead{          12.00, 1.00, 0.05, 0.0, 0.40, 0.30, 0.60, 0.30, 0.30};
constexpr ClassProfile kEmbedding{      0.57, 0.45, 0.16, 0.0, 0.40, 0.20, 0.60, 0.00, 0.20};
constexpr ClassProfile kNormVector{     1.19, 0.00, 0.30, 0.0, 0.15, 0.60, 0.85, 0.30, 0.30};
constexpr ClassProfile kBiasVector{     1.09, 0.00, 0.30, 0.0, 0.20, 0.60, 0.85, 0.30, 0.30};
constexpr double kBatchNormFactor = 0.42;  // norm layers of a CNN (BatchNorm): k measured 0.32-0.55
constexpr double kDepthSlope = -0.52, kSizeExponent = -0.175, kReferenceNumel = 65536.0, kRmsJitter = 0.05;
// Later layers are less noisy and decay faster (E1 and E4 of the matrices rise from early to late
// layers): φ_l = φ · (1 − kNoiseDepth · (f − 0.5)),
constexpr double kNoiseDepth = 0.8;
// and α_l = α · (1 + kDecayDepth · (f − 0.5)).
constexpr double kDecayDepth = 0.4;
// All layers of a step share a gain exp(σ_g·z_s − σ_g²), z_s ~ N(0, 1) independent across steps: the
// per-step gradient norms of recorded traces move together (mean pairwise correlation of their logs
// 0.57 and 0.96) with no step-to-step memory; σ_g between the two traces' 0.07 and 0.58.
constexpr double kStepGain = 0.2;
constexpr int kPool = 32;

const ClassProfile& class_profile(LayerClass c) {
  switch (c) {
    case LayerClass::kConv: return kConv;
    case LayerClass::kAttention: return kAttention;
    case LayerClass::kLinear: return kLinear;
    case LayerClass::kHead: return kHead;
    case LayerClass::kEmbedding: return kEmbedding;
    case LayerClass::kNorm: return kNormVector;
    case LayerClass::kBias: return kBiasVector;
  }
  return kLinear;
}

bool attention_name(const std::string& name) {
  static const std::regex re(R"(attn|attention|qkv|query|key|value|(^|[._])[qkvo]_proj|in_proj|out_proj|(^|\.)proj\.weight$)");
  return std::regex_search(name, re);
}

// "layer4.1.fc.weight" → "fc"; "lm_head" → "lm_head".
std::string module_of(const std::string& name) {
  std::string s = name;
  if (s.size() > 7 && s.compare(s.size() - 7, 7, ".weight") == 0) s.resize(s.size() - 7);
  const auto dot = s.rfind('.');
  return dot == std::string::npos ? s : s.substr(dot + 1);
}

LayerClass classify_one(const TensorSpec& t, bool last_matrix) {
  switch (t.kind) {
    case LayerKind::kNorm: return LayerClass::kNorm;
    case LayerKind::kBias: return LayerClass::kBias;
    case LayerKind::kEmbedding: return LayerClass::kEmbedding;
    case LayerKind::kWeight: break;
  }
  if (t.shape.size() >= 3) return LayerClass::kConv;
  if (t.shape.size() < 2) return LayerClass::kBias;
  if (last_matrix) {
    const std::string mod = module_of(t.name);
    if (mod == "head" || mod == "lm_head" || mod == "fc" || mod == "linear" || mod == "classifier") return LayerClass::kHead;
  }
  return attention_name(t.name) ? LayerClass::kAttention : LayerClass::kLinear;
}

// Unit-variance noise by the polar method (Marsaglia for Gaussian, Bailey for Student-t): a point
// (U, V) uniform in the unit disc gives U·sqrt(-2 ln W / W) ~ N(0,1) and
// U·sqrt(ν (W^(-2/ν) − 1) / W) ~ t_ν. Element e first tries the point in words (2·(e mod 2),
// 2·(e mod 2)+1) of Philox block e/2 (two elements share a block); when it falls outside the disc
// (probability 1 − π/4) it tries the two points of blocks e + k·2^40, k = 1, 2, … (counters disjoint
// from the first ones while numel < 2^41).
inline bool polar(std::uint32_t a, std::uint32_t b, float nu, float t_scale, float& out) {
  const float u = 2.0f * rng::word_to_unit_float(a) - 1.0f;
  const float v = 2.0f * rng::word_to_unit_float(b) - 1.0f;
  const float w = u * u + v * v;
  if (!(w > 0.0f && w <= 1.0f)) return false;
  out = nu <= 0.0f ? u * std::sqrt(-2.0f * std::log(w) / w)
                   : t_scale * u * std::sqrt(nu * (std::pow(w, -2.0f / nu) - 1.0f) / w);
  return true;
}

float noise_fallback(std::uint64_t key, std::uint64_t stream, std::uint64_t index, float nu, float t_scale) {
  for (std::uint64_t attempt = 1;; ++attempt) {
    const rng::Block b = rng::block_at(key, stream, index + (attempt << 40));
    float out;
    if (polar(b.v[0], b.v[1], nu, t_scale, out) || polar(b.v[2], b.v[3], nu, t_scale, out)) return out;
  }
}

int rank_terms_of(const SynthOptions& o) {
  return o.rank_terms ? *o.rank_terms : (o.profile == SynthProfile::kFlat ? kFlatRankTerms : kMeasuredRankTerms);
}

// Depth of tensor i of L; `cnn`: the model's matrices are mostly convolutions (its norms are BatchNorm).
LayerParams params_of(const TensorSpec& t, std::size_t i, std::size_t num_layers, LayerClass cls, bool cnn,
                      const SynthOptions& o) {
  LayerParams p;
  p.cls = cls;
  p.depth = num_layers > 1 ? static_cast<double>(i) / static_cast<double>(num_layers - 1) : 1.0;
  const std::uint64_t pk = params_key(o.seed);
  const double z = rng::normal_at(pk, i, 0);
  const double u = static_cast<double>(rng::uniform_at(pk, i, 1));
  const std::int64_t numel = numel_of(t.shape), n = t.shape.at(0), m = numel / n;
  const int rank = static_cast<int>(std::min<std::int64_t>({rank_terms_of(o), n, m}));
  if (o.profile == SynthProfile::kFlat) {
    p.rms = o.scale * flat_kind_factor(t.kind) * (0.5 + p.depth) * std::exp(0.25 * z);
    p.decay = o.decay.value_or(kFlatDecay) * (0.8 + 0.4 * u);
    p.noise = o.noise.value_or(kFlatNoise);
    p.tail = o.tail.value_or(kFlatTail);
    p.rho_u = p.rho_v = o.rho.value_or(kFlatRho);
    return p;
  }
  const ClassProfile& c = class_profile(cls);
  const double k = cls == LayerClass::kNorm && cnn ? kBatchNormFactor : c.rms;
  p.rms = o.scale * k *
          std::pow(10.0, kDepthSlope * (p.depth - 0.5) +
                             kSizeExponent * std::log10(static_cast<double>(numel) / kReferenceNumel) + kRmsJitter * z);
  p.decay = (o.decay ? *o.decay : c.decay * (1.0 + kDecayDepth * (p.depth - 0.5))) * (0.9 + 0.2 * u);
  if (o.noise) {
    p.noise = *o.noise;
  } else {
    double sum_sq = 0;
    for (int r = 0; r < rank; ++r) sum_sq += std::pow(static_cast<double>(r + 1), -2.0 * p.decay);
    const double share = std::clamp(c.noise_share * (1.0 - kNoiseDepth * (p.depth - 0.5)), 0.0, 0.95);
    p.noise = std::sqrt(share / (1.0 - share) * sum_sq);
  }
  p.step_gain = kStepGain;
  p.tail = o.tail.value_or(c.tail);
  p.rho_u = o.rho.value_or(c.rho_u);
  p.rho_v = o.rho.value_or(c.rho_v);
  p.pool = kPool;
  p.pool_decay_u = c.pool_decay_u;
  p.pool_decay_v = c.pool_decay_v;
  p.spread = c.spread;
  return p;
}

bool mostly_conv(const std::vector<LayerClass>& classes) {
  std::size_t conv = 0, other = 0;
  for (auto c : classes) {
    if (c == LayerClass::kConv) ++conv;
    if (c == LayerClass::kAttention || c == LayerClass::kLinear) ++other;
  }
  return conv > other;
}

// Fixed directions scaled by their weights: out[k·len + i] = w_k · N(0, 1/len), w_k ∝ (k+1)^−β, Σ w_k² = 1.
std::vector<float> pool_directions(std::uint64_t key, std::uint64_t stream, std::uint64_t offset, int count,
                                   std::int64_t len, double beta) {
  std::vector<double> w(static_cast<std::size_t>(count));
  double sum = 0;
  for (int k = 0; k < count; ++k) sum += (w[k] = std::pow(static_cast<double>(k + 1), -2.0 * beta));
  std::vector<float> out(static_cast<std::size_t>(count * len));
  const double s = 1.0 / std::sqrt(static_cast<double>(len));
  for (int k = 0; k < count; ++k) {
    const double wk = std::sqrt(w[k] / sum) * s;
    for (std::int64_t i = 0; i < len; ++i) {
      const std::size_t e = static_cast<std::size_t>(k * len + i);
      out[e] = static_cast<float>(wk * rng::normal_at(key, stream, offset + e));
    }
  }
  return out;
}

// Log-normal scales exp(τ·z), normalised to mean square 1.
std::vector<float> log_normal_scales(std::uint64_t key, std::uint64_t stream, std::uint64_t offset, std::int64_t len,
                                     double spread) {
  std::vector<double> d(static_cast<std::size_t>(len));
  double ms = 0;
  for (std::int64_t i = 0; i < len; ++i) {
    d[i] = std::exp(spread * rng::normal_at(key, stream, offset + static_cast<std::uint64_t>(i)));
    ms += d[i] * d[i] / static_cast<double>(len);
  }
  std::vector<float> out(d.size());
  for (std::size_t i = 0; i < d.size(); ++i) out[i] = static_cast<float>(d[i] / std::sqrt(ms));
  return out;
}

}  // namespace

const char* to_string(SynthProfile p) { return p == SynthProfile::kFlat ? "flat" : "measured"; }

SynthProfile parse_synth_profile(const std::string& text) {
  if (text == "measured") return SynthProfile::kMeasured;
  if (text == "flat") return SynthProfile::kFlat;
  throw ConfigError("synthetic profile '" + printable(text) + "': expected measured or flat");
}

const char* to_string(LayerClass c) {
  switch (c) {
    case LayerClass::kConv: return "conv";
    case LayerClass::kAttention: return "attention";
    case LayerClass::kLinear: return "linear";
    case LayerClass::kHead: return "head";
    case LayerClass::kEmbedding: return "embedding";
    case LayerClass::kNorm: return "norm";
    case LayerClass::kBias: return "bias";
  }
  return "linear";
}

std::vector<LayerClass> classify_layers(const std::vector<TensorSpec>& tensors) {
  std::size_t last = tensors.size();
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].kind == LayerKind::kWeight && tensors[i].shape.size() == 2) last = i;
  }
  std::vector<LayerClass> out;
  for (std::size_t i = 0; i < tensors.size(); ++i) out.push_back(classify_one(tensors[i], i == last));
  return out;
}

void check_synth_options(const SynthOptions& o) {
  // Messages in the library's words; FieldError names the option (the CLI shows it as its flag).
  auto bad = [](const char* field, const std::string& what) { throw FieldError(field, what); };
  auto num = [](double v) { return std::to_string(v); };
  if (o.steps < 1) bad("steps", std::to_string(o.steps) + ": must be at least 1");
  if (o.burst_length < 0) bad("burst_length", std::to_string(o.burst_length) + ": must be at least 1");
  if (o.burst_length == 0 && (o.bursts < 1 || o.bursts > o.steps)) {
    bad("bursts", std::to_string(o.bursts) + ": must be between 1 and the number of steps (" + std::to_string(o.steps) + ")");
  }
  if (o.first_step < 0) bad("first_step", std::to_string(o.first_step) + ": must be >= 0");
  if (o.world_size < 1) bad("world_size", std::to_string(o.world_size) + ": must be at least 1");
  if (o.decay && !(*o.decay >= 0.0 && *o.decay <= 10.0)) bad("decay", num(*o.decay) + ": must be in [0, 10]");
  if (o.rho && !(*o.rho >= 0.0 && *o.rho < 1.0)) bad("rho", num(*o.rho) + ": must be in [0, 1)");
  if (o.tail && !(*o.tail == 0.0 || (*o.tail > 2.0 && *o.tail <= 1e6))) {
    bad("tail", num(*o.tail) + ": must be 0 (Gaussian) or Student-t degrees of freedom > 2");
  }
  if (o.rank_terms && (*o.rank_terms < 1 || *o.rank_terms > 256)) {
    bad("rank_terms", std::to_string(*o.rank_terms) + ": must be in 1..256");
  }
  if (o.noise && !(*o.noise >= 0.0 && *o.noise <= 1e3)) bad("noise", num(*o.noise) + ": must be in [0, 1000]");
  if (!(o.scale > 0.0 && o.scale < 1e4)) bad("scale", num(o.scale) + ": must be in (0, 10000)");
  if (o.deflate_level < 0 || o.deflate_level > 9) bad("deflate", std::to_string(o.deflate_level) + ": must be in 0..9");
  if (o.threads < 0 || o.threads > 1024) bad("threads", std::to_string(o.threads) + ": must be in 0..1024");
  if (!(o.compute_flops_per_s >= 0.0)) bad("compute_tflops", num(o.compute_flops_per_s / 1e12) + ": must be >= 0");
  const std::int64_t len = o.burst_length > 0 ? o.burst_length : (o.steps + o.bursts - 1) / o.bursts;
  if (o.burst_spacing < len) {
    bad("burst_spacing", std::to_string(o.burst_spacing) + ": shorter than a burst (" + std::to_string(len) + " steps)");
  }
  // The last burst starts at first_step + (bursts - 1) · spacing: it must stay a sane step id.
  const std::int64_t nbursts = o.burst_length > 0 ? (o.steps + o.burst_length - 1) / o.burst_length : o.bursts;
  const auto last = checked_mul(nbursts - 1, o.burst_spacing);
  const auto end = last ? checked_add(*last, o.first_step + len) : std::nullopt;
  if (!end || *end > kMaxSynthStepId) {
    bad("burst_spacing", std::to_string(o.burst_spacing) + " with " + std::to_string(nbursts) + " bursts puts step ids beyond " +
                             std::to_string(kMaxSynthStepId));
  }
}

std::vector<std::int64_t> synth_step_ids(const SynthOptions& o) {
  check_synth_options(o);
  std::vector<std::int64_t> lengths;
  if (o.burst_length > 0) {
    for (std::int64_t left = o.steps; left > 0; left -= o.burst_length) lengths.push_back(std::min(left, o.burst_length));
  } else {
    for (std::int64_t b = 0; b < o.bursts; ++b) lengths.push_back(o.steps / o.bursts + (b < o.steps % o.bursts ? 1 : 0));
  }
  std::vector<std::int64_t> ids;
  for (std::size_t b = 0; b < lengths.size(); ++b) {
    for (std::int64_t k = 0; k < lengths[b]; ++k) ids.push_back(o.first_step + static_cast<std::int64_t>(b) * o.burst_spacing + k);
  }
  return ids;
}

LayerParams layer_params(const std::vector<TensorSpec>& tensors, std::size_t layer, const SynthOptions& options) {
  const auto classes = classify_layers(tensors);
  return params_of(tensors.at(layer), layer, tensors.size(), classes[layer], mostly_conv(classes), options);
}

LayerGenerator::LayerGenerator(const std::vector<TensorSpec>& tensors, std::size_t layer, const SynthOptions& options)
    : LayerGenerator(tensors.at(layer), layer, layer_params(tensors, layer, options), options) {}

LayerGenerator::LayerGenerator(const TensorSpec& tensor, std::size_t layer_index, std::size_t num_layers,
                               const SynthOptions& options)
    : LayerGenerator(tensor, layer_index,
                     params_of(tensor, layer_index, num_layers, classify_one(tensor, false),
                               classify_one(tensor, false) == LayerClass::kConv, options),
                     options) {}

LayerGenerator::LayerGenerator(const TensorSpec& tensor, std::size_t layer_index, const LayerParams& params,
                               const SynthOptions& options)
    : layer_(layer_index), opt_(options), p_(params) {
  check_synth_options(options);
  const std::int64_t numel = numel_of(tensor.shape);
  n_ = tensor.shape.at(0);
  m_ = numel / n_;
  rank_ = static_cast<int>(std::min<std::int64_t>({rank_terms_of(options), n_, m_}));
  double sum_sq = 0;
  for (int r = 0; r < rank_; ++r) {
    sigma_.push_back(std::pow(static_cast<double>(r + 1), -p_.decay));
    sum_sq += sigma_.back() * sigma_.back();
  }
  const double nm = static_cast<double>(n_) * static_cast<double>(m_);
  amplitude_ = p_.rms * std::sqrt(nm / (sum_sq + p_.noise * p_.noise));
  noise_coef_ = amplitude_ * p_.noise / std::sqrt(nm);
  u_.assign(static_cast<std::size_t>(rank_ * n_), 0.0f);
  v_.assign(static_cast<std::size_t>(rank_ * m_), 0.0f);
  if (p_.pool > 0) {
    ku_ = static_cast<int>(std::min<std::int64_t>(p_.pool, n_));
    kv_ = static_cast<int>(std::min<std::int64_t>(p_.pool, m_));
    const std::uint64_t key = pool_key(options.seed);
    pool_u_ = pool_directions(key, layer_index, 0, ku_, n_, p_.pool_decay_u);
    pool_v_ = pool_directions(key, layer_index, pool_u_.size(), kv_, m_, p_.pool_decay_v);
    a_.assign(static_cast<std::size_t>(rank_ * ku_), 0.0f);
    b_.assign(static_cast<std::size_t>(rank_ * kv_), 0.0f);
  }
  if (p_.spread > 0) {
    const std::uint64_t key = scales_key(options.seed);
    row_scale_ = log_normal_scales(key, layer_index, 0, n_, p_.spread);
    col_scale_ = log_normal_scales(key, layer_index, static_cast<std::uint64_t>(n_), m_, p_.spread);
  }
}

void LayerGenerator::advance_factors(std::int64_t step_id) {
  if (started_ && step_id <= last_step_) {
    throw ConfigError("synthetic layer " + std::to_string(layer_) + ": step id " + std::to_string(step_id) +
                      " does not follow " + std::to_string(last_step_));
  }
  // AR(1) over step ids: keep ρ^d of the old state and add fresh N(0, 1 − ρ^{2d}) innovation.
  const double d = static_cast<double>(step_id - last_step_);
  const double keep_u = started_ ? std::pow(p_.rho_u, d) : 0.0, keep_v = started_ ? std::pow(p_.rho_v, d) : 0.0;
  const double fresh_u = std::sqrt(std::max(0.0, 1.0 - keep_u * keep_u));
  const double fresh_v = std::sqrt(std::max(0.0, 1.0 - keep_v * keep_v));
  const std::uint64_t key = factors_key(opt_.seed);
  const std::uint64_t stream = rng::stream_of(static_cast<std::uint64_t>(step_id), layer_);
  started_ = true;
  last_step_ = step_id;
  if (p_.pool == 0) {  // flat: the factors themselves
    const double su = 1.0 / std::sqrt(static_cast<double>(n_)), sv = 1.0 / std::sqrt(static_cast<double>(m_));
    for (std::size_t k = 0; k < u_.size(); ++k) {
      u_[k] = static_cast<float>(keep_u * u_[k] + fresh_u * su * rng::normal_at(key, stream, k));
    }
    for (std::size_t k = 0; k < v_.size(); ++k) {
      v_[k] = static_cast<float>(keep_v * v_[k] + fresh_v * sv * rng::normal_at(key, stream, u_.size() + k));
    }
    return;
  }
  for (std::size_t k = 0; k < a_.size(); ++k) {
    a_[k] = static_cast<float>(keep_u * a_[k] + fresh_u * rng::normal_at(key, stream, k));
  }
  for (std::size_t k = 0; k < b_.size(); ++k) {
    b_[k] = static_cast<float>(keep_v * b_[k] + fresh_v * rng::normal_at(key, stream, a_.size() + k));
  }
  // u_r = Σ_k A_rk · (w_k p_k), v_r = Σ_k B_rk · (w_k q_k).
  auto combine = [](const std::vector<float>& coef, const std::vector<float>& pool, int kk, std::int64_t len,
                    std::vector<float>& out, int rank) {
    std::fill(out.begin(), out.end(), 0.0f);
    for (int r = 0; r < rank; ++r) {
      float* o = out.data() + static_cast<std::size_t>(r) * len;
      for (int k = 0; k < kk; ++k) {
        const float c = coef[static_cast<std::size_t>(r * kk + k)];
        const float* p = pool.data() + static_cast<std::size_t>(k) * len;
        for (std::int64_t i = 0; i < len; ++i) o[i] += c * p[i];
      }
    }
  };
  combine(a_, pool_u_, ku_, n_, u_, rank_);
  combine(b_, pool_v_, kv_, m_, v_, rank_);
}

void LayerGenerator::generate(std::int64_t step_id, std::span<float> out) {
  if (static_cast<std::int64_t>(out.size()) != n_ * m_) {
    throw Error("synthetic layer " + std::to_string(layer_) + ": buffer has " + std::to_string(out.size()) +
                " elements, expected " + std::to_string(n_ * m_));
  }
  advance_factors(step_id);
  const std::uint64_t nkey = noise_key(opt_.seed);
  const std::uint64_t stream = rng::stream_of(static_cast<std::uint64_t>(step_id), layer_);
  const float nu = static_cast<float>(p_.tail);
  const float t_scale = nu > 0.0f ? std::sqrt((nu - 2.0f) / nu) : 1.0f;
  // The step's gain, shared by all layers (1 when step_gain = 0: the flat profile's exact values).
  const double gain = p_.step_gain > 0 ? std::exp(p_.step_gain * rng::normal_at(gain_key(opt_.seed), static_cast<std::uint64_t>(step_id), 0) -
                                                  p_.step_gain * p_.step_gain)
                                       : 1.0;
  const float ncoef = static_cast<float>(noise_coef_ * gain);
  std::vector<float> coef(static_cast<std::size_t>(rank_));
  for (int r = 0; r < rank_; ++r) coef[r] = static_cast<float>(amplitude_ * gain * sigma_[r]);
  const bool scaled = !row_scale_.empty();

  auto rows = [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t i = r0; i < r1; ++i) {
      float* row = out.data() + i * m_;
      const std::uint64_t base = static_cast<std::uint64_t>(i * m_);
      rng::Block blk{};
      std::uint64_t blk_id = ~0ull;
      for (std::int64_t j = 0; j < m_; ++j) {
        const std::uint64_t e = base + static_cast<std::uint64_t>(j);
        if ((e >> 1) != blk_id) {
          blk_id = e >> 1;
          blk = rng::block_at(nkey, stream, blk_id);
        }
        const unsigned lane = static_cast<unsigned>(e & 1u) * 2u;
        float x;
        if (!polar(blk.v[lane], blk.v[lane + 1], nu, t_scale, x)) x = noise_fallback(nkey, stream, e, nu, t_scale);
        row[j] = ncoef * x;
      }
      for (int r = 0; r < rank_; ++r) {
        const float cr = coef[r] * u_[static_cast<std::size_t>(r * n_ + i)];
        const float* v = v_.data() + static_cast<std::size_t>(r) * m_;
        for (std::int64_t j = 0; j < m_; ++j) row[j] += cr * v[j];
      }
      if (scaled) {
        const float ri = row_scale_[static_cast<std::size_t>(i)];
        const float* cs = col_scale_.data();
        for (std::int64_t j = 0; j < m_; ++j) row[j] *= ri * cs[j];
      }
    }
  };
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const std::int64_t threads =
      std::min<std::int64_t>(opt_.threads > 0 ? opt_.threads : static_cast<std::int64_t>(hw), n_);
  if (threads <= 1 || n_ * m_ < (1 << 16)) {
    rows(0, n_);
    return;
  }
  std::vector<std::thread> pool;
  for (std::int64_t k = 0; k < threads; ++k) pool.emplace_back(rows, n_ * k / threads, n_ * (k + 1) / threads);
  for (auto& th : pool) th.join();
}

void synthesize_trace(const ModelPreset& model, const SynthOptions& options, const std::filesystem::path& dest,
                      Overwrite policy, const std::function<void(std::int64_t, std::int64_t)>& progress) {
  const std::vector<std::int64_t> ids = synth_step_ids(options);
  if (model.tensors.empty()) throw ConfigError("trace synth: model '" + model.name + "' has no tensors");
  std::vector<std::uint64_t> bytes;
  for (const auto& t : model.tensors) bytes.push_back(4ull * static_cast<std::uint64_t>(numel_of(t.shape)));
  const BucketAssignment buckets = assign_ddp_buckets(bytes);
  std::vector<TraceLayer> layers;
  for (std::size_t i = 0; i < model.tensors.size(); ++i) {
    const auto& t = model.tensors[i];
    layers.push_back({t.name, t.shape, numel_of(t.shape), t.kind, buckets.bucket[i], buckets.backward_order[i], options.dtype});
  }
  const bool flat = options.profile == SynthProfile::kFlat;
  auto given = [](const auto& v) { return v ? Json(*v) : Json(nullptr); };
  const Json config = {{"generator", flat ? "lgreco-synth-v1" : "lgreco-synth-v2"}, {"profile", to_string(options.profile)},
                       {"steps", options.steps}, {"bursts", options.bursts},
                       {"burst_length", options.burst_length}, {"burst_spacing", options.burst_spacing},
                       {"first_step", options.first_step}, {"seed", options.seed},
                       {"decay", flat ? Json(options.decay.value_or(kFlatDecay)) : given(options.decay)},
                       {"rho", flat ? Json(options.rho.value_or(kFlatRho)) : given(options.rho)},
                       {"tail", flat ? Json(options.tail.value_or(kFlatTail)) : given(options.tail)},
                       {"rank_terms", rank_terms_of(options)},
                       {"noise", flat ? Json(options.noise.value_or(kFlatNoise)) : given(options.noise)},
                       {"scale", options.scale}, {"deflate_level", options.deflate_level},
                       {"compute_flops_per_s", options.compute_flops_per_s}};
  TraceHeader header{model.name, options.world_size, options.dtype,
                     options.producer + " (lgreco " + build_info::version() + ")", "", config.dump()};
  TraceWriter writer(dest, header, layers, policy, TraceWriterOptions{options.deflate_level});
  for (auto id : ids) writer.add_step(id);

  const std::size_t L = layers.size(), T = ids.size();
  const std::int64_t total = static_cast<std::int64_t>(L * T);
  const std::vector<LayerClass> classes = classify_layers(model.tensors);
  const bool cnn = mostly_conv(classes);
  std::unique_ptr<LayerGenerator> gen;
  std::size_t gen_layer = L;
  std::vector<float> bufs[2];
  // Generation of item k+1 runs while item k is compressed and written (HDF5 stays on this thread).
  auto produce = [&](std::int64_t k) {
    const std::size_t l = static_cast<std::size_t>(k) / T, t = static_cast<std::size_t>(k) % T;
    if (gen_layer != l) {
      gen = std::make_unique<LayerGenerator>(model.tensors[l], l,
                                             params_of(model.tensors[l], l, L, classes[l], cnn, options), options);
      gen_layer = l;
    }
    auto& buf = bufs[k % 2];
    buf.resize(static_cast<std::size_t>(layers[l].numel));
    gen->generate(ids[t], buf);
  };
  std::future<void> next;
  if (total > 0) next = std::async(std::launch::async, produce, 0);
  for (std::int64_t k = 0; k < total; ++k) {
    next.get();
    if (k + 1 < total) next = std::async(std::launch::async, produce, k + 1);
    throw_if_cancelled();
    const std::size_t l = static_cast<std::size_t>(k) / T, t = static_cast<std::size_t>(k) % T;
    writer.write(l, t, bufs[k % 2]);
    if (progress) progress(k + 1, total);
  }
  if (options.compute_flops_per_s > 0) {
    for (std::size_t l = 0; l < L; ++l) {
      const double flops = 4.0 * static_cast<double>(layers[l].numel) *
                           static_cast<double>(model.tensors[l].uses_per_sample) * static_cast<double>(model.batch_per_gpu);
      writer.set_compute_time_s(l, std::vector<double>(T, flops / options.compute_flops_per_s));
    }
  }
  writer.finish();
}

}  // namespace lgreco::traces
