#pragma once
/// Calibration of the collective model (collectives.hpp) against nccl-tests measurements.
///
/// The fitted model has the calibrated form of collectives.hpp: LL additive (L + transfer), LL128
/// and Simple pipelined (max(F, L, transfer)). Parameters fitted, all positive and fitted as
/// logarithms (a handful; no per-size table, so a fit transfers to other sizes, rank counts and
/// host counts):
///   per protocol p ∈ {LL, LL128, Simple}: base latency (ring; tree scaled alike) and bandwidth
///   multiplier m_p; for Simple the efficiency loss H and q; the pipeline floor F;
///   hop-latency scale of the intra-host class (nvlink or pcie) and, with several hosts, of the
///   network class and the network efficiency η_net; NVLS latency and multiplier when NVLS is used.
/// Objective: Σ_i w_i·r_i² + Σ_j (λ·(x_j − μ_j)/σ_j)², r_i = ln(predicted_i / measured_i), Cauchy
/// weights w_i = 1 / (1 + (r_i / 0.05)²) refreshed every iteration (robust to single bad rows), and
/// weak priors (λ = 0.05; μ = NCCL's constants, σ per parameter) that keep parameters the data do
/// not determine near NCCL's values. Minimised by Levenberg–Marquardt (numeric Jacobian) from 400
/// deterministic (seeded) starting points (FitResult::starts); the best end point wins.
#include <string>
#include <vector>

#include "core/json_util.hpp"
#include "network_models/collectives.hpp"
#include "network_models/nccl_tests.hpp"

namespace lgreco::net {

/// One measured point with the model's prediction.
struct FitPoint {
  double size_bytes = 0, measured_s = 0, predicted_s = 0;
  Algorithm algorithm = Algorithm::kRing;
  Protocol protocol = Protocol::kSimple;
};

/// A calibration.
struct FitResult {
  std::string topology;
  int ranks = 0;
  Collective collective = Collective::kAllreduce;
  ModelParams params;
  std::vector<FitPoint> points;
  double rms_log_error = 0;      ///< sqrt(mean r_i²)
  double max_abs_rel_error = 0;  ///< max |predicted/measured − 1|
  double objective = 0;
  int starts = 0;
  /// Each fitted parameter's standard error of ln(value), every parameter fitted together (lm_standard_errors:
  /// the objective's Gauss–Newton matrix at the fit, the weighted residuals' spread), in the fit's parameter
  /// order: e^se is the factor the value is known to, times or divided.
  std::vector<std::pair<std::string, double>> std_ln;
};

/// The largest rms ln-error (FitResult::rms_log_error) of a calibration `lgreco net calibrate` writes without
/// --allow-poor-fit: the model then misses its own sweep by a typical factor of 1.65. Every sweep of the
/// corpus calibrates below 0.27 (docs/network-model.md "Calibration"); above it the sweep is not the
/// collective, rank count or topology it was said to be, or not a timing at all.
inline constexpr double kPoorFitRmsLn = 0.5;

/// Fits the model for topology `t` at `ranks` ranks to the measured points (≥ 2 sizes).
/// `selection` is the pair-selection rule of the fitted model (collectives.hpp); `env` the NCCL
/// restrictions the sweep ran under (nccl_env.hpp: a sweep with NCCL_ALGO=Ring is fitted as rings).
FitResult fit_model(const Topology& t, int ranks, Collective c, const std::vector<NcclTestsPoint>& data,
                    Selection selection = Selection::kFastest, const NcclEnv& env = {});

/// How a calibration transfers to sizes it has not seen: the points sorted by size are split into
/// even- and odd-indexed halves; fit on one half, predict the other, both ways round.
struct HoldoutCheck {
  std::vector<FitPoint> even_to_odd, odd_to_even;  ///< predictions of the held-out half
  double max_abs_rel_error = 0;                    ///< worst |predicted/measured − 1| of both
};

/// The two-fold check above; InputError with fewer than 4 points.
HoldoutCheck holdout_check(const Topology& t, int ranks, Collective c, const std::vector<NcclTestsPoint>& data,
                           Selection selection = Selection::kFastest, const NcclEnv& env = {});

/// Predictions of `model` at the measured sizes (the quality table of an uncalibrated model).
std::vector<FitPoint> compare(const CollectiveModel& model, Collective c, const std::vector<NcclTestsPoint>& data);

/// The fit document {"schema_version": 2, "kind": "lgreco-network-fit", "topology", "ranks",
/// "collective", "nccl_version", "selection", "pipelined_protocols", "parameters", "fit_quality", "config", "provenance"};
/// fit_quality has "standard_error_factor": {parameter: e^se} for the fitted parameters (FitResult::std_ln).
/// With `holdout`, the document also has "holdout": {"max_abs_error_pct", "even_to_odd", "odd_to_even"}.
Json fit_to_json(const FitResult& f, const Json& config, const Json& provenance, const HoldoutCheck* holdout = nullptr);

/// Reads a fit document (strict) and returns the parameters for `t` at `ranks`: NCCL's defaults
/// for that configuration with the fitted parameters applied. ConfigError when the fit was made
/// for another topology, unless it was made for `derived_from`: the topology `t` was built from
/// with another node count or network rate (what-if points), to which the fit transfers.
ModelParams params_from_fit(const Json& fit, const std::string& origin, const Topology& t, int ranks,
                            const std::string& derived_from = "");

}  // namespace lgreco::net
