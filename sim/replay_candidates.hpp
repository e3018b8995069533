#pragma once
/// Candidate sets: which compression settings replay measures for each layer.
///
/// Defaults follow L-GreCo (reference-lgreco.md), extended to the other families:
/// - powersgd, default rank r: every rank in [⌊γ·r⌋, ⌈β·r⌉] (γ = 0.5, β = 2: ranks 2..8 for r = 4;
///   rank 0, "send nothing", only when ⌊γ·r⌋ = 0). A layer is planned iff it is compressible at the
///   default rank ((n + m)·min(n, m, r)·rate < n·m); other layers get the single candidate "none".
///   Ranks whose r_eff repeats a smaller rank's are dropped (identical to it); a rank at which the
///   layer is no longer compressible is the candidate "none" (4N bytes, error 0), listed once.
/// - topk / randomk, default density d: d·2^(j/2) for j = −2..2 (×1/2, ×1/√2, ×1, ×√2, ×2),
///   clamped to ≤ 1.
/// - qsgd / maxmin, default b bits: every b' in [max(lo, ⌊b/2⌋), min(hi, 2b)] (b = 4 → 2..8), with
///   (lo, hi) = (2, 16) for qsgd and (1, 8) for maxmin; nuqsgd, default s levels: every s' in
///   [max(1, ⌊s/2⌋), min(30, 2s)].
/// - fp16, bf16, sign, terngrad: the default setting only (nothing to vary).
/// - mixed: layers compressible by PowerSGD at the default rank get the PowerSGD ranks AND the
///   max-min bits; other planned layers get the max-min bits; small layers get "none".
/// - all (comparisons and benchmarks): PowerSGD ranks on PowerSGD-compressible matrices, plus the
///   top-k densities and max-min bits on every planned matrix.
/// For every family but powersgd (and mixed's max-min-only layers) a layer is planned iff it has ≥ 2
/// dimensions and numel ≥ min_numel (default 1024); biases, norms and tiny matrices get "none".
/// The default (uniform) setting is always one of the candidates; `default_index` points at it.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kernels/method.hpp"

namespace lgreco::sim {

/// The method family being planned: one registry method (its planned parameter varies across the
/// candidates; a method without one contributes its single setting), or a combination.
struct Family {
  enum class Kind { kMethod, kMixed, kAll };
  Kind kind = Kind::kMethod;
  kernels::Method method = kernels::Method::kPowerSgd;  ///< for Kind::kMethod

  static const Family kPowerSgd, kTopK, kQsgd, kMaxMin, kMixed, kAll;
  bool operator==(const Family& o) const { return kind == o.kind && (kind != Kind::kMethod || method == o.method); }
};
inline constexpr Family Family::kPowerSgd{Family::Kind::kMethod, kernels::Method::kPowerSgd};
inline constexpr Family Family::kTopK{Family::Kind::kMethod, kernels::Method::kTopK};
inline constexpr Family Family::kQsgd{Family::Kind::kMethod, kernels::Method::kQsgd};
inline constexpr Family Family::kMaxMin{Family::Kind::kMethod, kernels::Method::kMaxMin};
inline constexpr Family Family::kMixed{Family::Kind::kMixed, kernels::Method::kPowerSgd};
inline constexpr Family Family::kAll{Family::Kind::kAll, kernels::Method::kPowerSgd};

/// Parses a registry method name (except "none"), "mixed" or "all"; ConfigError listing them.
Family family_from_name(const std::string& name);
/// The family's name.
std::string to_string(Family f);
/// Every family name, in registry order, then mixed and all.
std::vector<std::string> family_names();

/// The family's default settings: the uniform plan's methods.
struct FamilyDefaults {
  kernels::MethodSpec matrix;  ///< powersgd (or topk/qsgd/maxmin) setting for planned layers
  kernels::MethodSpec other;   ///< mixed/all: max-min setting for layers PowerSGD does not compress
  kernels::MethodSpec sparse;  ///< all: top-k setting
};

/// Builds the defaults from "key=value" pairs (`--default rank=4`). Keys are the family method's
/// parameters; for mixed, powersgd keys and maxmin keys (bits, bucket_size, rounding) may be mixed;
/// for all, also topk keys (density, encoding, selection, momentum, warmup_steps).
/// Unknown keys are ConfigError naming the key and the family.
FamilyDefaults parse_family_defaults(Family family, const std::vector<std::pair<std::string, std::string>>& kv);

/// Candidate range parameters (see the file comment).
struct CandidateRanges {
  double rank_low = 0.5;           ///< γ
  double rank_high = 2.0;          ///< β
  std::uint64_t min_numel = 1024;  ///< smallest planned tensor for non-PowerSGD methods
};

/// The candidates of one layer.
struct CandidateSet {
  std::vector<kernels::MethodSpec> candidates;  ///< in ascending cost order within a method
  int default_index = 0;                        ///< the uniform plan's choice
  bool planned = false;                         ///< more than one candidate
};

/// Candidates for a tensor of `shape` (numel = product).
CandidateSet make_candidates(Family family, const FamilyDefaults& defaults, std::span<const std::int64_t> shape,
                             const CandidateRanges& ranges = {});

/// The uncompressed method.
kernels::MethodSpec none_spec();

}  // namespace lgreco::sim
