#include "sim/replay_candidates.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "kernels/wire.hpp"

namespace lgreco::sim {
namespace {

using kernels::Method;
using kernels::MethodSpec;

bool same_setting(const MethodSpec& a, const MethodSpec& b) { return a == b; }

void push_unique(CandidateSet& set, const MethodSpec& s) {
  for (const auto& c : set.candidates) {
    if (same_setting(c, s)) return;
  }
  set.candidates.push_back(s);
}

std::uint64_t numel_of(std::span<const std::int64_t> shape) {
  std::uint64_t n = 1;
  for (auto d : shape) n *= static_cast<std::uint64_t>(d);
  return n;
}

bool powersgd_compressible(const kernels::PowerSgdParams& p, std::span<const std::int64_t> shape) {
  if (shape.size() < 2) return false;
  return kernels::powersgd_view(shape, numel_of(shape), p).compressed && p.rank > 0;
}

void add_powersgd(CandidateSet& set, const MethodSpec& def, std::span<const std::int64_t> shape, const CandidateRanges& r) {
  const int rank = def.powersgd.rank;
  const int lo = static_cast<int>(std::floor(r.rank_low * rank));
  const int hi = static_cast<int>(std::ceil(r.rank_high * rank));
  std::int64_t last_reff = -1;
  bool have_none = false;
  for (int k = std::max(0, lo); k <= hi; ++k) {
    MethodSpec s = def;
    s.powersgd.rank = k;
    const auto view = kernels::powersgd_view(shape, numel_of(shape), s.powersgd);
    if (k > 0 && !view.compressed) {
      if (!have_none) push_unique(set, none_spec());
      have_none = true;
      continue;
    }
    if (view.r_eff == last_reff) continue;  // ranks above min(n, m) repeat the largest one
    last_reff = view.r_eff;
    push_unique(set, s);
  }
}

void add_bits(CandidateSet& set, const MethodSpec& def) {
  const bool qsgd = def.method == Method::kQsgd;
  // QSGD stores levels s; bits b ⇔ s = 2^(b−1) − 1.
  const int b = qsgd ? static_cast<int>(std::lround(std::log2(def.qsgd.levels + 1.0))) + 1 : def.maxmin.bits;
  const int lo_cap = qsgd ? 2 : 1, hi_cap = qsgd ? 16 : 8;
  for (int bits = std::max(lo_cap, b / 2); bits <= std::min(hi_cap, 2 * b); ++bits) {
    MethodSpec s = def;
    if (qsgd) s.qsgd.levels = (1 << (bits - 1)) - 1;
    else s.maxmin.bits = bits;
    push_unique(set, s);
  }
  if (qsgd && (def.qsgd.levels + 1) != (1 << (b - 1))) push_unique(set, def);  // a levels value between bit widths
}

void add_density(CandidateSet& set, const MethodSpec& def) {
  for (int j = -2; j <= 2; ++j) {
    MethodSpec s = def;
    s.topk.density = std::min(1.0, def.topk.density * std::pow(2.0, j / 2.0));
    push_unique(set, s);
  }
}

int index_of(const CandidateSet& set, const MethodSpec& s) {
  for (std::size_t i = 0; i < set.candidates.size(); ++i) {
    if (same_setting(set.candidates[i], s)) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

MethodSpec none_spec() { return kernels::parse_method("none"); }

Family family_from_name(const std::string& name) {
  if (name == "powersgd") return Family::kPowerSgd;
  if (name == "topk") return Family::kTopK;
  if (name == "qsgd") return Family::kQsgd;
  if (name == "maxmin") return Family::kMaxMin;
  if (name == "mixed") return Family::kMixed;
  if (name == "all") return Family::kAll;
  throw ConfigError("unknown family '" + name + "' (expected powersgd, topk, qsgd, maxmin, mixed or all)");
}

std::string to_string(Family f) {
  switch (f) {
    case Family::kPowerSgd: return "powersgd";
    case Family::kTopK: return "topk";
    case Family::kQsgd: return "qsgd";
    case Family::kMaxMin: return "maxmin";
    case Family::kMixed: return "mixed";
    case Family::kAll: return "all";
  }
  return "?";
}

FamilyDefaults parse_family_defaults(Family family, const std::vector<std::pair<std::string, std::string>>& kv) {
  FamilyDefaults d;
  if (family != Family::kMixed && family != Family::kAll) {
    d.matrix = kernels::parse_method(to_string(family), kv);
    d.other = d.sparse = d.matrix;
    return d;
  }
  kernels::ParamList psgd, mm, tk;
  for (const auto& [k, v] : kv) {
    if (k == "bits" || k == "bucket_size" || k == "rounding") mm.emplace_back(k, v);
    else if (family == Family::kAll && (k == "density" || k == "encoding" || k == "selection" || k == "momentum" ||
                                        k == "warmup_steps"))
      tk.emplace_back(k, v);
    else psgd.emplace_back(k, v);
  }
  d.sparse = kernels::parse_method("topk", tk);
  try {
    d.matrix = kernels::parse_method("powersgd", psgd);
  } catch (const ConfigError& e) {
    throw ConfigError("family " + to_string(family) + ": --default: " + e.what() +
                      " (max-min keys: bits, bucket_size, rounding; top-k keys with family all: density, encoding, selection, momentum, warmup_steps)");
  }
  d.other = kernels::parse_method("maxmin", mm);
  return d;
}

CandidateSet make_candidates(Family family, const FamilyDefaults& defaults, std::span<const std::int64_t> shape,
                             const CandidateRanges& ranges) {
  CandidateSet set;
  const std::uint64_t numel = numel_of(shape);
  const bool big_matrix = shape.size() >= 2 && numel >= ranges.min_numel;
  MethodSpec def = none_spec();
  switch (family) {
    case Family::kPowerSgd:
      if (powersgd_compressible(defaults.matrix.powersgd, shape)) {
        add_powersgd(set, defaults.matrix, shape, ranges);
        def = defaults.matrix;
      }
      break;
    case Family::kTopK:
      if (big_matrix) {
        add_density(set, defaults.matrix);
        def = defaults.matrix;
      }
      break;
    case Family::kQsgd:
    case Family::kMaxMin:
      if (big_matrix) {
        add_bits(set, defaults.matrix);
        def = defaults.matrix;
      }
      break;
    case Family::kMixed:
      if (powersgd_compressible(defaults.matrix.powersgd, shape)) {
        add_powersgd(set, defaults.matrix, shape, ranges);
        add_bits(set, defaults.other);
        def = defaults.matrix;
      } else if (big_matrix) {
        add_bits(set, defaults.other);
        def = defaults.other;
      }
      break;
    case Family::kAll:
      if (powersgd_compressible(defaults.matrix.powersgd, shape)) {
        add_powersgd(set, defaults.matrix, shape, ranges);
        def = defaults.matrix;
      }
      if (big_matrix) {
        add_density(set, defaults.sparse);
        add_bits(set, defaults.other);
        if (def.method == Method::kNone) def = defaults.other;
      }
      break;
  }
  if (set.candidates.empty()) set.candidates.push_back(none_spec());
  set.default_index = index_of(set, def);
  if (set.default_index < 0) throw Error("candidate set lacks its default " + kernels::describe(def));
  set.planned = set.candidates.size() > 1;
  return set;
}

}  // namespace lgreco::sim
