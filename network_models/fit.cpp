// Levenberg–Marquardt calibration of the collective model (objective stated in fit.hpp).
#include "network_models/fit.hpp"

#include "core/text.hpp"
#include "network_models/levenberg.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

namespace lgreco::net {
namespace {

constexpr double kCauchyScale = 0.05;  // ln-error at which a row's weight halves
constexpr double kPriorWeight = 0.05;  // one prior σ costs as much as a 5 % error on one row
constexpr int kStarts = 400;
constexpr std::uint64_t kCalibrationSeed = 20261202;

/// One fitted parameter: its JSON name, unit factor (internal × factor = JSON), prior and bounds.
struct ParamDef {
  std::string name;
  double json_factor = 1;
  double center = 1, sigma = 1, lo = 0, hi = 0;  // internal units
  std::function<void(ModelParams&, double)> set;
  std::function<double(const ModelParams&)> get;
};

const char* kProtoNames[] = {"LL", "LL128", "Simple"};
const char* kClassNames[] = {"nvlink", "pcie", "net"};

/// All parameters; `defaults` gives NCCL's values (prior centres of latencies); `floor_centre_s`
/// is the prior centre of the pipeline floor (NCCL's Simple ring latency for the configuration).
std::vector<ParamDef> all_params(const ModelParams& defaults, double floor_centre_s = 50e-6) {
  std::vector<ParamDef> d;
  for (int q = 0; q < kNumProtocols; ++q) {
    const std::string p = kProtoNames[q];
    const double ratio = defaults.proto[q].tree_base_s / defaults.proto[q].ring_base_s;
    d.push_back({p + ".base_latency_us", 1e6, defaults.proto[q].ring_base_s, 1.5, 0.1e-6, 5e-3,
                 [q, ratio](ModelParams& m, double v) { m.proto[q].ring_base_s = v; m.proto[q].tree_base_s = v * ratio; },
                 [q](const ModelParams& m) { return m.proto[q].ring_base_s; }});
    d.push_back({p + ".bw_multiplier", 1, 1.0, 1.5, 0.02, 1.25, [q](ModelParams& m, double v) { m.proto[q].bw_multiplier = v; },
                 [q](const ModelParams& m) { return m.proto[q].bw_multiplier; }});
    // Efficiency loss (H/S)^q: read for every protocol, fitted for Simple only (Problem).
    d.push_back({p + ".loss_bytes", 1, 1048576.0, 5.0, 0.0, 68719476736.0, [q](ModelParams& m, double v) { m.proto[q].loss_bytes = v; },
                 [q](const ModelParams& m) { return m.proto[q].loss_bytes; }});
    d.push_back({p + ".loss_exponent", 1, 0.5, 1.0, 0.1, 1.0, [q](ModelParams& m, double v) { m.proto[q].loss_exponent = v; },
                 [q](const ModelParams& m) { return m.proto[q].loss_exponent; }});
  }
  for (int c = 0; c < kNumClasses; ++c) {
    d.push_back({std::string("hop_scale.") + kClassNames[c], 1, 1.0, 1.0, 0.01, 100.0, [c](ModelParams& m, double v) { m.hop_scale[c] = v; },
                 [c](const ModelParams& m) { return m.hop_scale[c]; }});
  }
  d.push_back({"net_efficiency", 1, defaults.net_efficiency, 1.0, 0.01, 1.5, [](ModelParams& m, double v) { m.net_efficiency = v; },
               [](const ModelParams& m) { return m.net_efficiency; }});
  d.push_back({"pipeline_floor_us", 1e6, floor_centre_s, 2.0, 0.0, 10e-3, [](ModelParams& m, double v) { m.pipeline_floor_s = v; },
               [](const ModelParams& m) { return m.pipeline_floor_s; }});
  d.push_back({"nvls.latency_us", 1e6, defaults.nvls_latency_s, 1.5, 0.1e-6, 5e-3, [](ModelParams& m, double v) { m.nvls_latency_s = v; },
               [](const ModelParams& m) { return m.nvls_latency_s; }});
  d.push_back({"nvls.bw_multiplier", 1, 1.0, 0.5, 0.02, 3.0, [](ModelParams& m, double v) { m.nvls_multiplier = v; },
               [](const ModelParams& m) { return m.nvls_multiplier; }});
  return d;
}

class Problem {
 public:
  Problem(const Topology& t, int ranks, Collective c, const std::vector<NcclTestsPoint>& data, Selection sel, const NcclEnv& env)
      : t_(t), emb_(embed(t, ranks)), c_(c), data_(data), nccl_(nccl_params(t, emb_)), base_(nccl_) {
    base_.selection = sel;
    base_.nccl_env = env;
    // The calibrated form (collectives.hpp): LL additive, LL128 and Simple pipelined.
    base_.proto[static_cast<int>(Protocol::kLL128)].pipelined = true;
    base_.proto[static_cast<int>(Protocol::kSimple)].pipelined = true;
    const auto simple = CollectiveModel(emb_, t, nccl_, nccl_).evaluate(c, Algorithm::kRing, Protocol::kSimple, 1.0);
    const double floor_centre = simple ? simple->latency_s : 50e-6;
    for (auto& d : all_params(base_, floor_centre)) {
      const bool multi = emb_.hosts > 1;
      const bool nvls = t.nvls && emb_.hosts == 1 && emb_.ranks_per_host >= 5 && c != Collective::kBroadcast;
      if (d.name == "hop_scale.net" || d.name == "net_efficiency") { if (!multi) continue; }
      else if (d.name.rfind("hop_scale.", 0) == 0) { if (d.name != std::string("hop_scale.") + (emb_.intra_class == LinkClass::kNvlink ? "nvlink" : "pcie")) continue; }
      else if (d.name.rfind("nvls.", 0) == 0 && !nvls) continue;
      else if (d.name.find(".loss_") != std::string::npos && d.name.rfind("Simple.", 0) != 0) continue;
      defs_.push_back(d);
    }
  }
  std::size_t size() const { return defs_.size(); }
  const std::vector<ParamDef>& defs() const { return defs_; }
  std::vector<double> centre() const {
    std::vector<double> x;
    for (const auto& d : defs_) x.push_back(std::log(d.center));
    return x;
  }
  ModelParams params(const std::vector<double>& x) const {
    ModelParams p = base_;
    for (std::size_t j = 0; j < x.size(); ++j) defs_[j].set(p, std::exp(x[j]));
    return p;
  }
  CollectiveModel model(const std::vector<double>& x) const { return CollectiveModel(emb_, t_, params(x), nccl_); }
  /// Residuals ln(pred/meas).
  std::vector<double> residuals(const std::vector<double>& x) const {
    const CollectiveModel m = model(x);
    std::vector<double> r;
    for (const auto& pt : data_) r.push_back(std::log(m.best(c_, pt.size_bytes).time_s / pt.time_s));
    return r;
  }
  /// The Levenberg–Marquardt problem (levenberg.hpp) over ln of the parameters.
  LmProblem lm() const {
    LmProblem p;
    p.residuals = [this](const std::vector<double>& x) { return residuals(x); };
    for (const auto& d : defs_) {
      p.centre.push_back(std::log(d.center));
      p.sigma.push_back(d.sigma);
      p.lo.push_back(std::log(std::max(d.lo, 1e-12)));
      p.hi.push_back(std::log(d.hi));
    }
    p.prior_weight = kPriorWeight;
    p.cauchy_scale = kCauchyScale;
    return p;
  }

 private:
  const Topology& t_;
  Embedding emb_;
  Collective c_;
  const std::vector<NcclTestsPoint>& data_;
  ModelParams nccl_;  ///< NCCL's own parameters for this embedding (the prior, and the tuning table of every model)
  ModelParams base_;
  std::vector<ParamDef> defs_;
};

}  // namespace

std::vector<FitPoint> compare(const CollectiveModel& model, Collective c, const std::vector<NcclTestsPoint>& data) {
  std::vector<FitPoint> out;
  for (const auto& pt : data) {
    const Choice ch = model.best(c, pt.size_bytes);
    out.push_back({pt.size_bytes, pt.time_s, ch.time_s, ch.algorithm, ch.protocol});
  }
  return out;
}

FitResult fit_model(const Topology& t, int ranks, Collective c, const std::vector<NcclTestsPoint>& data, Selection selection,
                    const NcclEnv& env) {
  if (data.size() < 2) throw InputError("calibration needs at least 2 measured sizes, got " + std::to_string(data.size()));
  if (ranks < 2) throw InputError("calibration needs at least 2 ranks, got " + std::to_string(ranks));
  Problem pb(t, ranks, c, data, selection, env);
  const LmProblem lm = pb.lm();
  std::mt19937_64 gen(kCalibrationSeed);
  std::vector<double> best_x;
  double best_f = std::numeric_limits<double>::infinity();
  for (int s = 0; s < kStarts; ++s) {
    auto x = pb.centre();
    if (s > 0) {
      for (std::size_t j = 0; j < x.size(); ++j) x[j] += lm_gaussian(gen) * std::min(pb.defs()[j].sigma, 3.0);
    }
    lm_clamp(lm, x);
    x = levenberg_marquardt(lm, x);
    const double f = lm_end_objective(lm, x);
    if (f < best_f) {
      best_f = f;
      best_x = x;
    }
  }
  FitResult res;
  res.topology = t.name;
  res.ranks = ranks;
  res.collective = c;
  res.params = pb.params(best_x);
  res.points = compare(pb.model(best_x), c, data);
  res.objective = best_f;
  res.starts = kStarts;
  const LmCurvature curvature = lm_curvature(lm, best_x);
  const std::vector<double> se = lm_standard_errors(curvature, lm_gram(curvature), lm_residual_variance(curvature));
  for (std::size_t j = 0; j < se.size(); ++j) res.std_ln.emplace_back(pb.defs()[j].name, se[j]);
  double sq = 0;
  for (const auto& p : res.points) {
    const double r = std::log(p.predicted_s / p.measured_s);
    sq += r * r;
    res.max_abs_rel_error = std::max(res.max_abs_rel_error, std::abs(p.predicted_s / p.measured_s - 1));
  }
  res.rms_log_error = std::sqrt(sq / res.points.size());
  return res;
}

HoldoutCheck holdout_check(const Topology& t, int ranks, Collective c, const std::vector<NcclTestsPoint>& data,
                           Selection selection, const NcclEnv& env) {
  if (data.size() < 4) throw InputError("held-out check needs at least 4 measured sizes, got " + std::to_string(data.size()));
  std::vector<NcclTestsPoint> sorted = data, even, odd;
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.size_bytes < b.size_bytes; });
  for (std::size_t i = 0; i < sorted.size(); ++i) (i % 2 == 0 ? even : odd).push_back(sorted[i]);
  HoldoutCheck h;
  h.even_to_odd = compare(CollectiveModel(t, ranks, fit_model(t, ranks, c, even, selection, env).params), c, odd);
  h.odd_to_even = compare(CollectiveModel(t, ranks, fit_model(t, ranks, c, odd, selection, env).params), c, even);
  for (const auto* v : {&h.even_to_odd, &h.odd_to_even})
    for (const auto& p : *v) h.max_abs_rel_error = std::max(h.max_abs_rel_error, std::abs(p.predicted_s / p.measured_s - 1));
  return h;
}

namespace {
Json points_json(const std::vector<FitPoint>& pts) {
  Json points = Json::array();
  for (const auto& p : pts) {
    points.push_back({{"size_bytes", p.size_bytes}, {"measured_us", p.measured_s * 1e6}, {"predicted_us", p.predicted_s * 1e6},
                      {"error_pct", 100 * (p.predicted_s / p.measured_s - 1)}, {"algorithm", to_string(p.algorithm)},
                      {"protocol", to_string(p.protocol)}});
  }
  return points;
}
}  // namespace

Json fit_to_json(const FitResult& f, const Json& config, const Json& provenance, const HoldoutCheck* holdout) {
  Json params = Json::object();
  for (const auto& d : all_params(f.params)) params[d.name] = d.get(f.params) * d.json_factor;
  const Json points = points_json(f.points);
  Json se = Json::object();
  for (const auto& [name, v] : f.std_ln) se[name] = std::exp(v);
  Json pipelined = Json::array();
  for (int q = 0; q < kNumProtocols; ++q)
    if (f.params.proto[q].pipelined) pipelined.push_back(kProtoNames[q]);
  Json doc{{"schema_version", 2},
          {"kind", "lgreco-network-fit"},
          {"topology", f.topology},
          {"ranks", f.ranks},
          {"collective", to_string(f.collective)},
          {"nccl_version", f.params.nccl_version},
          {"selection", to_string(f.params.selection)},
          {"pipelined_protocols", pipelined},
          {"parameters", params},
          {"fit_quality",
           {{"rms_log_error", f.rms_log_error}, {"max_abs_error_pct", 100 * f.max_abs_rel_error}, {"objective", f.objective},
            {"starts", f.starts}, {"standard_error_factor", se}, {"points", points}}},
          {"config", config},
          {"provenance", provenance}};
  if (holdout) {
    doc["holdout"] = {{"split", "points sorted by size; fit on the even-indexed half, predict the odd, and the reverse"},
                      {"max_abs_error_pct", 100 * holdout->max_abs_rel_error},
                      {"even_to_odd", points_json(holdout->even_to_odd)},
                      {"odd_to_even", points_json(holdout->odd_to_even)}};
  }
  return doc;
}

ModelParams params_from_fit(const Json& fit, const std::string& origin, const Topology& t, int ranks,
                            const std::string& derived_from) {
  JsonObject o(fit, origin);
  const int version = o.get<int>("schema_version");
  if (version == 1) throw ConfigError(origin + ": schema_version 1 is the earlier model form (channel ramp); rerun `lgreco net calibrate` to refit");
  if (version != 2) throw ConfigError(origin + ": schema_version " + std::to_string(version) + ", expected 2");
  const std::string kind = o.get<std::string>("kind");
  if (kind != "lgreco-network-fit") throw ConfigError(origin + ": kind \"" + kind + "\", expected \"lgreco-network-fit\"");
  const std::string topo = o.get<std::string>("topology");
  if (topo != t.name && (derived_from.empty() || topo != derived_from)) {
    throw ConfigError(origin + ": fitted for topology \"" + printable(topo) + "\", not \"" + printable(t.name) + "\"" +
                      (derived_from.empty() || derived_from == t.name ? "" : " (built from \"" + derived_from + "\")"));
  }
  o.get<int>("ranks");
  parse_collective(o.get<std::string>("collective"), o.child("collective"));
  ModelParams p = nccl_params(t, ranks);
  p.nccl_version = o.get<std::string>("nccl_version");
  p.selection = parse_selection(o.get_or<std::string>("selection", "fastest"), o.child("selection"));
  const Json& pl = o.require("pipelined_protocols");
  if (!pl.is_array()) throw ConfigError(o.child("pipelined_protocols") + ": expected an array of protocol names");
  for (const auto& name : pl) {
    int found = -1;
    for (int q = 0; q < kNumProtocols; ++q)
      if (name.is_string() && name.get<std::string>() == kProtoNames[q]) found = q;
    if (found < 0) throw ConfigError(o.child("pipelined_protocols") + ": " + name.dump() + " is not a protocol (LL, LL128, Simple)");
    p.proto[found].pipelined = true;
  }
  JsonObject params(o.require("parameters"), o.child("parameters"));
  for (const auto& d : all_params(p)) {
    auto v = params.get_optional<double>(d.name);
    if (!v) continue;
    const double internal = *v / d.json_factor;
    if (!std::isfinite(internal) || internal < d.lo * 0.999 || internal > d.hi * 1.001) {
      throw ConfigError(params.child(d.name) + ": " + std::to_string(*v) + " is outside [" + std::to_string(d.lo * d.json_factor) + ", " +
                        std::to_string(d.hi * d.json_factor) + "]");
    }
    d.set(p, internal);
  }
  params.finish();
  o.allow({"fit_quality", "holdout", "config", "provenance"});
  o.finish();
  return p;
}

}  // namespace lgreco::net
