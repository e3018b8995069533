#include "sim/replay_candidates.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/text.hpp"
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


bool powersgd_compressible(const kernels::PowerSgdParams& p, std::span<const std::int64_t> shape) {
  if (shape.size() < 2) return false;
  return kernels::powersgd_view(shape, p).compressed && p.rank > 0;
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
    const auto view = kernels::powersgd_view(shape, s.powersgd);
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
    double& d = def.method == Method::kRandomK ? s.randomk.density : s.topk.density;
    d = std::min(1.0, (def.method == Method::kRandomK ? def.randomk.density : def.topk.density) * std::pow(2.0, j / 2.0));
    push_unique(set, s);
  }
}

void add_levels(CandidateSet& set, const MethodSpec& def) {
  const int s0 = def.nuqsgd.levels;
  for (int s = std::max(1, s0 / 2); s <= std::min(30, 2 * s0); ++s) {
    MethodSpec c = def;
    c.nuqsgd.levels = s;
    push_unique(set, c);
  }
}

// The candidates of a one-method family on a planned (big enough) matrix.
void add_method(CandidateSet& set, const MethodSpec& def) {
  switch (def.method) {
    case Method::kTopK:
    case Method::kRandomK: add_density(set, def); break;
    case Method::kQsgd:
    case Method::kMaxMin: add_bits(set, def); break;
    case Method::kNuqsgd: add_levels(set, def); break;
    default: push_unique(set, def); break;
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
  if (name == "mixed") return Family::kMixed;
  if (name == "all") return Family::kAll;
  const kernels::MethodInfo* m = kernels::find_method(name);
  if (!m || m->method == Method::kNone) {
    std::string known;
    for (const auto& n : family_names()) known += (known.empty() ? "" : ", ") + n;
    throw ConfigError("unknown family '" + printable(name) + "' (expected " + known + ")");
  }
  return Family{Family::Kind::kMethod, m->method};
}

std::string to_string(Family f) {
  switch (f.kind) {
    case Family::Kind::kMixed: return "mixed";
    case Family::Kind::kAll: return "all";
    case Family::Kind::kMethod: break;
  }
  return kernels::method_name(f.method);
}

std::vector<std::string> family_names() {
  std::vector<std::string> out;
  for (const auto& m : kernels::methods())
    if (m.method != Method::kNone) out.push_back(m.name);
  out.push_back("mixed");
  out.push_back("all");
  return out;
}

FamilyDefaults parse_family_defaults(Family family, const std::vector<std::pair<std::string, std::string>>& kv) {
  FamilyDefaults d;
  auto check_rank = [&](const kernels::MethodSpec& m) {
    if (m.method == Method::kPowerSgd && m.powersgd.rank < 1)
      throw ConfigError("family " + to_string(family) + ": default rank 0 sends nothing (every layer would go to the residual); "
                        "the uniform default needs rank >= 1 (rank 0 is a candidate when the default is rank 1)");
  };
  if (family.kind == Family::Kind::kMethod) {
    d.matrix = kernels::parse_method(to_string(family), kv);
    d.other = d.sparse = d.matrix;
    check_rank(d.matrix);
    return d;
  }
  // Each key goes to the method of the combination that has it (the registry decides).
  const auto& psgd_info = kernels::method_info(Method::kPowerSgd);
  const auto& mm_info = kernels::method_info(Method::kMaxMin);
  const auto& tk_info = kernels::method_info(Method::kTopK);
  kernels::ParamList psgd, mm, tk;
  for (const auto& [k, v] : kv) {
    if (kernels::find_param(psgd_info, k)) psgd.emplace_back(k, v);
    else if (kernels::find_param(mm_info, k)) mm.emplace_back(k, v);
    else if (family == Family::kAll && kernels::find_param(tk_info, k)) tk.emplace_back(k, v);
    else {
      std::string known;
      for (const auto* info : {&psgd_info, &mm_info, &tk_info}) {
        if (info == &tk_info && !(family == Family::kAll)) continue;
        for (const auto& p : info->params) known += (known.empty() ? "" : ", ") + std::string(info->name) + "." + p.name;
      }
      throw ConfigError("family " + to_string(family) + ": unknown default parameter '" + printable(k) + "'; known: " + known);
    }
  }
  d.sparse = kernels::parse_method("topk", tk);
  d.matrix = kernels::parse_method("powersgd", psgd);
  check_rank(d.matrix);
  d.other = kernels::parse_method("maxmin", mm);
  return d;
}

CandidateSet make_candidates(Family family, const FamilyDefaults& defaults, std::span<const std::int64_t> shape,
                             const CandidateRanges& ranges) {
  CandidateSet set;
  const std::uint64_t numel = kernels::wire_numel(shape);
  const bool big_matrix = shape.size() >= 2 && numel >= ranges.min_numel;
  MethodSpec def = none_spec();
  if (family == Family::kPowerSgd) {
    if (powersgd_compressible(defaults.matrix.powersgd, shape)) {
      add_powersgd(set, defaults.matrix, shape, ranges);
      def = defaults.matrix;
    }
  } else if (family.kind == Family::Kind::kMethod) {
    if (big_matrix) {
      add_method(set, defaults.matrix);
      def = defaults.matrix;
    }
  } else if (family.kind == Family::Kind::kMixed) {
    if (powersgd_compressible(defaults.matrix.powersgd, shape)) {
      add_powersgd(set, defaults.matrix, shape, ranges);
      add_bits(set, defaults.other);
      def = defaults.matrix;
    } else if (big_matrix) {
      add_bits(set, defaults.other);
      def = defaults.other;
    }
  } else {
    if (powersgd_compressible(defaults.matrix.powersgd, shape)) {
      add_powersgd(set, defaults.matrix, shape, ranges);
      def = defaults.matrix;
    }
    if (big_matrix) {
      add_density(set, defaults.sparse);
      add_bits(set, defaults.other);
      if (def.method == Method::kNone) def = defaults.other;
    }
  }
  if (set.candidates.empty()) set.candidates.push_back(none_spec());
  set.default_index = index_of(set, def);
  if (set.default_index < 0) throw Error("candidate set lacks its default " + kernels::describe(def));
  set.planned = set.candidates.size() > 1;
  return set;
}

}  // namespace lgreco::sim
