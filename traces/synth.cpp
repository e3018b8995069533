#include "traces/synth.hpp"

#include <algorithm>
#include <cmath>
#include <future>
#include <memory>
#include <thread>

#include "core/build_info.hpp"
#include "core/cancel.hpp"
#include "core/error.hpp"
#include "core/int_math.hpp"
#include "core/json_util.hpp"
#include "core/rng.hpp"
#include "traces/buckets.hpp"
#include "traces/writer.hpp"

namespace lgreco::traces {
namespace {

// Independent keys for the three uses of randomness, derived from the user's seed.
std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
std::uint64_t params_key(std::uint64_t seed) { return splitmix64(seed ^ 0x706172616d73ull); }
std::uint64_t factors_key(std::uint64_t seed) { return splitmix64(seed ^ 0x666163746f7273ull); }
std::uint64_t noise_key(std::uint64_t seed) { return splitmix64(seed ^ 0x6e6f697365ull); }

double kind_factor(LayerKind k) {
  switch (k) {
    case LayerKind::kWeight: return 1.0;
    case LayerKind::kBias: return 0.5;
    case LayerKind::kNorm: return 0.3;
    case LayerKind::kEmbedding: return 0.1;
  }
  return 1.0;
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

}  // namespace

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
  if (!(o.decay >= 0.0 && o.decay <= 10.0)) bad("decay", num(o.decay) + ": must be in [0, 10]");
  if (!(o.rho >= 0.0 && o.rho < 1.0)) bad("rho", num(o.rho) + ": must be in [0, 1)");
  if (!(o.tail == 0.0 || (o.tail > 2.0 && o.tail <= 1e6))) {
    bad("tail", num(o.tail) + ": must be 0 (Gaussian) or Student-t degrees of freedom > 2");
  }
  if (o.rank_terms < 1 || o.rank_terms > 256) bad("rank_terms", std::to_string(o.rank_terms) + ": must be in 1..256");
  if (!(o.noise >= 0.0 && o.noise <= 1e3)) bad("noise", num(o.noise) + ": must be in [0, 1000]");
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

LayerGenerator::LayerGenerator(const TensorSpec& tensor, std::size_t layer_index, std::size_t num_layers,
                               const SynthOptions& options)
    : layer_(layer_index), opt_(options) {
  const std::int64_t numel = numel_of(tensor.shape);
  n_ = tensor.shape.at(0);
  m_ = numel / n_;
  rank_ = static_cast<int>(std::min<std::int64_t>({options.rank_terms, n_, m_}));
  const std::uint64_t pk = params_key(options.seed);
  const double depth = num_layers > 1 ? static_cast<double>(layer_index) / static_cast<double>(num_layers - 1) : 1.0;
  rms_ = options.scale * kind_factor(tensor.kind) * (0.5 + depth) * std::exp(0.25 * rng::normal_at(pk, layer_index, 0));
  decay_ = options.decay * (0.8 + 0.4 * static_cast<double>(rng::uniform_at(pk, layer_index, 1)));
  double sum_sq = 0;
  for (int r = 0; r < rank_; ++r) {
    sigma_.push_back(std::pow(static_cast<double>(r + 1), -decay_));
    sum_sq += sigma_.back() * sigma_.back();
  }
  const double nm = static_cast<double>(n_) * static_cast<double>(m_);
  amplitude_ = rms_ * std::sqrt(nm / (sum_sq + options.noise * options.noise));
  noise_coef_ = amplitude_ * options.noise / std::sqrt(nm);
  u_.assign(static_cast<std::size_t>(rank_ * n_), 0.0f);
  v_.assign(static_cast<std::size_t>(rank_ * m_), 0.0f);
}

void LayerGenerator::advance_factors(std::int64_t step_id) {
  if (started_ && step_id <= last_step_) {
    throw ConfigError("synthetic layer " + std::to_string(layer_) + ": step id " + std::to_string(step_id) +
                      " does not follow " + std::to_string(last_step_));
  }
  // AR(1) over step ids: keep ρ^d of the old factors and add fresh N(0, 1 − ρ^{2d}) innovation.
  const double keep = started_ ? std::pow(opt_.rho, static_cast<double>(step_id - last_step_)) : 0.0;
  const double fresh = std::sqrt(std::max(0.0, 1.0 - keep * keep));
  const std::uint64_t key = factors_key(opt_.seed);
  const std::uint64_t stream = rng::stream_of(static_cast<std::uint64_t>(step_id), layer_);
  const double su = 1.0 / std::sqrt(static_cast<double>(n_)), sv = 1.0 / std::sqrt(static_cast<double>(m_));
  for (std::size_t k = 0; k < u_.size(); ++k) {
    u_[k] = static_cast<float>(keep * u_[k] + fresh * su * rng::normal_at(key, stream, k));
  }
  for (std::size_t k = 0; k < v_.size(); ++k) {
    v_[k] = static_cast<float>(keep * v_[k] + fresh * sv * rng::normal_at(key, stream, u_.size() + k));
  }
  started_ = true;
  last_step_ = step_id;
}

void LayerGenerator::generate(std::int64_t step_id, std::span<float> out) {
  if (static_cast<std::int64_t>(out.size()) != n_ * m_) {
    throw Error("synthetic layer " + std::to_string(layer_) + ": buffer has " + std::to_string(out.size()) +
                " elements, expected " + std::to_string(n_ * m_));
  }
  advance_factors(step_id);
  const std::uint64_t nkey = noise_key(opt_.seed);
  const std::uint64_t stream = rng::stream_of(static_cast<std::uint64_t>(step_id), layer_);
  const float nu = static_cast<float>(opt_.tail);
  const float t_scale = nu > 0.0f ? std::sqrt((nu - 2.0f) / nu) : 1.0f;
  const float ncoef = static_cast<float>(noise_coef_);
  std::vector<float> coef(static_cast<std::size_t>(rank_));
  for (int r = 0; r < rank_; ++r) coef[r] = static_cast<float>(amplitude_ * sigma_[r]);

  auto rows = [&](std::int64_t r0, std::int64_t r1) {
    std::vector<float> c(static_cast<std::size_t>(rank_));
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
  const Json config = {{"generator", "lgreco-synth-v1"}, {"steps", options.steps}, {"bursts", options.bursts},
                       {"burst_length", options.burst_length}, {"burst_spacing", options.burst_spacing},
                       {"first_step", options.first_step}, {"seed", options.seed}, {"decay", options.decay},
                       {"rho", options.rho}, {"tail", options.tail}, {"rank_terms", options.rank_terms},
                       {"noise", options.noise}, {"scale", options.scale}, {"deflate_level", options.deflate_level},
                       {"compute_flops_per_s", options.compute_flops_per_s}};
  TraceHeader header{model.name, options.world_size, options.dtype,
                     options.producer + " (lgreco " + build_info::version() + ")", "", config.dump()};
  TraceWriter writer(dest, header, layers, policy, TraceWriterOptions{options.deflate_level});
  for (auto id : ids) writer.add_step(id);

  const std::size_t L = layers.size(), T = ids.size();
  const std::int64_t total = static_cast<std::int64_t>(L * T);
  std::unique_ptr<LayerGenerator> gen;
  std::size_t gen_layer = L;
  std::vector<float> bufs[2];
  // Generation of item k+1 runs while item k is compressed and written (HDF5 stays on this thread).
  auto produce = [&](std::int64_t k) {
    const std::size_t l = static_cast<std::size_t>(k) / T, t = static_cast<std::size_t>(k) % T;
    if (gen_layer != l) {
      gen = std::make_unique<LayerGenerator>(model.tensors[l], l, L, options);
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
