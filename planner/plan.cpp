#include "planner/plan.hpp"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <numeric>
#include <regex>

#include "core/error.hpp"
#include "core/text.hpp"
#include "kernels/wire.hpp"

namespace lgreco::planner {
namespace {

Candidate none_candidate(const LayerTable& l) { return make_candidate(kernels::MethodSpec{}, l.shape, 0.0); }

std::regex compile(const std::string& re, const char* what) {
  try {
    return compile_name_pattern(re);
  } catch (const ConfigError& e) {
    throw ConfigError(std::string(what) + " expression " + e.what());
  }
}

// Whether `name` contains a match of `re`; ConfigError for a name too long to match safely.
bool matches(const std::string& name, const std::regex& re, const char* what) {
  if (name.size() > kMaxMatchedNameBytes) {
    throw ConfigError("parameter name of " + std::to_string(name.size()) + " bytes ('" + printable(name.substr(0, 40)) +
                      "...'): longer than the " + std::to_string(kMaxMatchedNameBytes) + " bytes an " + what +
                      " expression is matched against");
  }
  return std::regex_search(name, re);
}

// Candidates a planned layer may use, as indices into l.candidates.
std::vector<int> allowed_candidates(const LayerTable& l, const PlanOptions& o) {
  std::vector<int> out;
  for (int k = 0; k < static_cast<int>(l.candidates.size()); ++k) {
    const Candidate& c = l.candidates[k];
    if (c.spec.method == kernels::Method::kPowerSgd && k != l.default_index) {
      kernels::PowerSgdParams p = c.spec.powersgd;
      if (o.min_compression_rate) p.min_compression_rate = *o.min_compression_rate;
      const auto v = kernels::powersgd_view(l.shape, p);
      if (!(v.compressed && v.r_eff >= 1)) continue;
    }
    if (o.max_layer_error && c.error > *o.max_layer_error) continue;
    out.push_back(k);
  }
  if (out.empty()) {
    throw ConfigError("layer '" + l.name + "': no candidate left after the per-layer error cap " +
                      (o.max_layer_error ? std::to_string(*o.max_layer_error) : std::string("(none)")) +
                      " and the PowerSGD minimum compression rate");
  }
  return out;
}

void predict(const Window& w, const PlanOptions& o, const net::CollectiveCost* cost, WindowPlan& p) {
  p.uniform_error = p.uniform_bytes = p.uncompressed_bytes = 0;
  for (const auto& l : w.layers) {
    p.uniform_error += l.candidates[l.default_index].error;
    p.uniform_bytes += l.candidates[l.default_index].bytes;
    p.uncompressed_bytes += 4.0 * static_cast<double>(l.numel);
  }
  p.total_error = p.total_bytes = 0;
  for (const auto& c : p.chosen) {
    p.total_error += c.error;
    p.total_bytes += c.bytes;
  }
  if (!cost) return;
  std::vector<Candidate> uniform;
  for (const LayerTable& l : w.layers) uniform.push_back(l.candidates[l.default_index]);
  p.step_s = predict_step(w, p.chosen, o, *cost).step_s;
  p.uniform_step_s = predict_step(w, uniform, o, *cost).step_s;
  p.uncompressed_step_s = predict_step(w, uncompressed(w), o, *cost).step_s;
}

}  // namespace

std::regex compile_name_pattern(const std::string& re) {
  const std::string shown = "'" + printable(re.size() > 60 ? re.substr(0, 60) + "..." : re) + "'";
  if (re.size() > kMaxNamePatternChars) {
    throw ConfigError(shown + ": " + std::to_string(re.size()) + " characters; lgreco takes expressions of at most " +
                      std::to_string(kMaxNamePatternChars));
  }
  try {
    return std::regex(re, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw ConfigError(shown + ": invalid regular expression (" + e.what() + ")");
  }
}

std::string role_name(Role r) {
  switch (r) {
    case Role::kPlanned: return "planned";
    case Role::kFixed: return "fixed";
    case Role::kExcluded: return "excluded";
    case Role::kPinned: return "pinned";
  }
  return "?";
}

std::string engine_name(Engine e) {
  switch (e) {
    case Engine::kReference: return "reference";
    case Engine::kExact: return "exact";
    case Engine::kTime: return "time";
    case Engine::kDual: return "dual";
  }
  return "?";
}

Engine parse_engine(const std::string& name) {
  for (Engine e : {Engine::kReference, Engine::kExact, Engine::kTime, Engine::kDual}) {
    if (engine_name(e) == name) return e;
  }
  throw ConfigError("engine " + quote_name(name) + ": expected reference, exact, time or dual");
}

sim::StepResult predict_step(const Window& w, const std::vector<Candidate>& chosen, const PlanOptions& opt,
                             const net::CollectiveCost& cost) {
  if (chosen.size() != w.layers.size())
    throw Error("predict_step: " + std::to_string(chosen.size()) + " settings for " + std::to_string(w.layers.size()) + " layers");
  std::vector<sim::LayerComm> comm;
  comm.reserve(chosen.size());
  for (std::size_t i = 0; i < w.layers.size(); ++i) comm.push_back(layer_comm_of(w.layers[i], chosen[i], opt.kernel_time));
  return sim::simulate_step(step_model_of(w, opt.forward_s, opt.optimizer_s), comm, cost);
}

std::vector<Candidate> uncompressed(const Window& w) {
  std::vector<Candidate> out;
  out.reserve(w.layers.size());
  for (const LayerTable& l : w.layers) out.push_back(none_candidate(l));
  return out;
}

sim::StepModel step_model_of(const Window& w, double forward_s, double optimizer_s) {
  sim::StepModel m;
  m.forward_s = forward_s;
  m.optimizer_s = optimizer_s;
  const std::size_t n = w.layers.size();
  for (const auto& l : w.layers) m.backward_s.push_back(l.compute_time_s.value_or(0.0));
  m.backward_order.resize(n);
  std::iota(m.backward_order.begin(), m.backward_order.end(), 0);
  std::stable_sort(m.backward_order.begin(), m.backward_order.end(),
                   [&](int a, int b) { return w.layers[a].backward_order < w.layers[b].backward_order; });
  std::vector<int> ids;
  for (const auto& l : w.layers) ids.push_back(l.bucket);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  m.buckets.assign(ids.size(), {});
  for (int li : m.backward_order) {
    const auto pos = std::lower_bound(ids.begin(), ids.end(), w.layers[li].bucket) - ids.begin();
    m.buckets[pos].push_back(li);
  }
  return m;
}

sim::LayerComm layer_comm_of(const LayerTable& layer, const Candidate& c, const KernelTimeFn& kernel_time) {
  sim::LayerComm lc;
  const kernels::WireSize w = kernels::wire_size(c.spec, layer.shape);
  lc.allreduce_bytes = {static_cast<double>(w.allreduce_round_bytes[0]), static_cast<double>(w.allreduce_round_bytes[1])};
  lc.allgather_bytes = static_cast<double>(w.allgather_bytes);
  if (c.kernel_time_s) {
    lc.compress_s = lc.decompress_s = 0.5 * *c.kernel_time_s;
  } else if (kernel_time && c.spec.method != kernels::Method::kNone) {
    const auto [comp, decomp] = kernel_time(layer, c);
    lc.compress_s = comp;
    lc.decompress_s = decomp;
  }
  return lc;
}

WindowPlan uniform_plan(const Window& w, const PlanOptions& opt, const net::CollectiveCost* cost) {
  WindowPlan p;
  for (const auto& l : w.layers) {
    p.choice.push_back(l.default_index);
    p.role.push_back(Role::kFixed);
    p.chosen.push_back(l.candidates[l.default_index]);
  }
  p.status = PlanStatus::kUniform;
  predict(w, opt, cost, p);
  return p;
}

std::string budget_problem(const Budget& b, Engine e) {
  const bool dual = e == Engine::kDual;
  const bool byte_budget = b.kind == Budget::Kind::kBytes || b.kind == Budget::Kind::kTime;
  if (dual != byte_budget) {
    return dual ? "the dual engine needs a byte or time budget"
                : "a byte or time budget needs the dual engine (the other engines take an error budget)";
  }
  const std::string why = budget_value_problem(b);
  return why.empty() ? why : std::string(budget_kind_label(b.kind)) + " " + Json(b.value).dump() + ": " + why;
}

std::string budget_value_problem(const Budget& b) {
  if (b.kind == Budget::Kind::kAlpha) {
    if (!(b.value > 0 && b.value <= kMaxAlpha)) {
      char most[32];
      std::snprintf(most, sizeof most, "%g", kMaxAlpha);
      return std::string("expected a number > 0 and at most ") + most;
    }
  } else if (!(b.value >= 0) || !std::isfinite(b.value)) {
    return "expected a finite number >= 0";
  }
  return "";
}

const char* budget_kind_label(Budget::Kind k) {
  switch (k) {
    case Budget::Kind::kAlpha: return "alpha";
    case Budget::Kind::kError: return "error budget";
    case Budget::Kind::kBytes: return "byte budget";
    case Budget::Kind::kTime: return "time budget";
  }
  return "budget";
}

WindowPlan plan_window(const Window& w, const PlanOptions& o, const net::CollectiveCost* cost) {
  const std::size_t n = w.layers.size();
  if ((o.engine == Engine::kTime) && !cost) throw ConfigError("the time engine needs a network model (a topology or a bandwidth)");
  if (const std::string why = budget_problem(o.budget, o.engine); !why.empty()) throw ConfigError(why);
  const bool dual = o.engine == Engine::kDual;
  const std::optional<std::regex> inc = o.include_re ? std::optional(compile(*o.include_re, "include")) : std::nullopt;
  const std::optional<std::regex> exc = o.exclude_re ? std::optional(compile(*o.exclude_re, "exclude")) : std::nullopt;
  for (const auto& pin : o.pins) {
    const std::string& name = pin.first;
    if (std::none_of(w.layers.begin(), w.layers.end(), [&](const LayerTable& l) { return l.name == name; })) {
      throw ConfigError("pin " + quote_name(name) + ": no such parameter in the tables");
    }
  }
  WindowPlan p;
  p.choice.assign(n, 0);
  p.role.assign(n, Role::kPlanned);
  p.chosen.resize(n);
  std::vector<std::vector<int>> allowed(n);
  for (std::size_t i = 0; i < n; ++i) {
    const LayerTable& l = w.layers[i];
    auto pin = std::find_if(o.pins.begin(), o.pins.end(), [&](const auto& pr) { return pr.first == l.name; });
    if (pin != o.pins.end()) {
      p.role[i] = Role::kPinned;
      auto it = std::find_if(l.candidates.begin(), l.candidates.end(), [&](const Candidate& c) { return c.spec == pin->second; });
      if (it != l.candidates.end()) {
        p.choice[i] = static_cast<int>(it - l.candidates.begin());
        p.chosen[i] = *it;
      } else if (pin->second.method == kernels::Method::kNone) {
        p.choice[i] = -1;
        p.chosen[i] = none_candidate(l);
      } else {
        throw ConfigError("pin '" + l.name + "' = " + kernels::describe(pin->second) + ": not among the layer's candidates (only 'none' may be pinned without one)");
      }
      continue;
    }
    if ((inc && !matches(l.name, *inc, "include")) || (exc && matches(l.name, *exc, "exclude"))) {
      p.role[i] = Role::kExcluded;
      p.choice[i] = l.default_index;
      p.chosen[i] = l.candidates[l.default_index];
      continue;
    }
    allowed[i] = allowed_candidates(l, o);
    if (allowed[i].size() == 1) {
      p.role[i] = Role::kFixed;
      p.choice[i] = allowed[i][0];
      p.chosen[i] = l.candidates[allowed[i][0]];
    }
  }
  // Budget, with fixed layers charged first.
  double uniform_error = 0, fixed_error = 0, fixed_bytes = 0;
  for (std::size_t i = 0; i < n; ++i) {
    uniform_error += w.layers[i].candidates[w.layers[i].default_index].error;
    if (p.role[i] != Role::kPlanned) fixed_error += p.chosen[i].error, fixed_bytes += p.chosen[i].bytes;
  }
  double budget = 0;
  if (o.budget.kind == Budget::Kind::kAlpha) budget = o.budget.value * uniform_error;
  if (o.budget.kind == Budget::Kind::kError || o.budget.kind == Budget::Kind::kBytes) budget = o.budget.value;
  if (o.budget.kind == Budget::Kind::kTime) {
    if (!o.bandwidth_Bps) throw ConfigError("a time budget needs a bandwidth (bytes budget = time × bandwidth)");
    budget = o.budget.value * *o.bandwidth_Bps;
  }
  if (dual) p.bytes_budget = budget;
  else p.error_budget = budget;
  if (!dual && budget == 0 && o.budget.kind == Budget::Kind::kAlpha) {
    WindowPlan u = uniform_plan(w, o, cost);
    u.error_budget = 0;
    u.warnings.push_back("the uniform default has zero total error (T = 0): nothing to trade, using the uniform plan");
    return u;
  }
  // Planned layers in DDP bucket order.
  std::vector<int> order;
  for (std::size_t i = 0; i < n; ++i) {
    if (p.role[i] == Role::kPlanned) order.push_back(static_cast<int>(i));
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const auto& la = w.layers[a];
    const auto& lb = w.layers[b];
    return la.bucket != lb.bucket ? la.bucket < lb.bucket : la.backward_order < lb.backward_order;
  });
  Knapsack ks;
  for (int i : order) {
    KnapsackLayer kl;
    for (int k : allowed[i]) {
      kl.error.push_back(w.layers[i].candidates[k].error);
      kl.bytes.push_back(w.layers[i].candidates[k].bytes);
    }
    ks.layers.push_back(std::move(kl));
  }
  ks.budget = budget - (dual ? fixed_bytes : fixed_error);
  KnapsackResult r;
  if (ks.budget < 0) {
    r.status = PlanStatus::kInfeasible;
    r.choice = dual ? least_bytes_choice(ks) : least_error_choice(ks);
  } else if (o.engine == Engine::kReference || o.engine == Engine::kTime) {
    if (ks.budget > 0 || ks.layers.empty()) {
      r = ks.layers.empty() ? KnapsackResult{} : solve_reference(ks, o.reference);
    } else {
      r = solve_exact(ks, o.front);  // a zero budget for planned layers: only zero-error plans qualify
    }
  } else if (o.engine == Engine::kExact) {
    r = solve_exact(ks, o.front);
  } else {
    r = solve_dual(ks, o.front);
  }
  p.gap_bound = r.gap_bound;
  auto apply = [&](const std::vector<int>& local) {
    for (std::size_t j = 0; j < order.size(); ++j) {
      const int i = order[j];
      p.choice[i] = allowed[i][local[j]];
      p.chosen[i] = w.layers[i].candidates[p.choice[i]];
    }
  };
  apply(r.choice);
  p.status = r.status;
  if (r.status == PlanStatus::kInfeasible && ks.budget >= 0 && !r.choice.empty()) {
    // The reference DP rounds every error up to its buckets, so a plan at the budget exactly (the
    // uniform one at α = 1) can look infeasible: judge the returned (least-error) plan by its real
    // total. (Relative slack: the sums are the same numbers added in another order.)
    double e = 0, b = 0;
    for (std::size_t j = 0; j < order.size(); ++j) {
      const Candidate& c = w.layers[order[j]].candidates[static_cast<std::size_t>(allowed[order[j]][r.choice[j]])];
      e += c.error;
      b += c.bytes;
    }
    if ((dual ? b : e) <= ks.budget * (1 + 1e-12)) p.status = PlanStatus::kFeasible;
  }
  if (o.engine == Engine::kTime) {
    TimeProblem tp;
    tp.model = step_model_of(w, o.forward_s, o.optimizer_s);
    tp.error_budget = budget;
    std::vector<int> ref_full(n);
    std::vector<std::vector<int>> local_index(n);  // time-problem candidate → table candidate
    for (std::size_t i = 0; i < n; ++i) {
      TimeLayer tl;
      const std::vector<int> cands = p.role[i] == Role::kPlanned ? allowed[i] : std::vector<int>{p.choice[i]};
      for (std::size_t c = 0; c < cands.size(); ++c) {
        const Candidate& cand = cands[c] < 0 ? p.chosen[i] : w.layers[i].candidates[cands[c]];
        tl.error.push_back(cand.error);
        tl.comm.push_back(layer_comm_of(w.layers[i], cand, o.kernel_time));
        if (cands[c] == p.choice[i]) ref_full[i] = static_cast<int>(c);
      }
      local_index[i] = cands;
      tp.layers.push_back(std::move(tl));
    }
    const bool ref_ok = r.status != PlanStatus::kInfeasible;
    TimeResult tr = solve_time(tp, *cost, o.time, ref_ok ? &ref_full : nullptr);
    for (std::size_t i = 0; i < n; ++i) {
      if (p.role[i] != Role::kPlanned) continue;
      p.choice[i] = local_index[i][tr.choice[i]];
      p.chosen[i] = w.layers[i].candidates[p.choice[i]];
    }
    p.status = tr.status == PlanStatus::kInfeasible ? PlanStatus::kInfeasible : PlanStatus::kFeasible;
    p.gap_bound = -1;
    p.detail = "plan from " + tr.source + (tr.exact_discretised ? "" : " (bucket fronts were capped)") +
               (tr.dp_step_s ? "; time-dp step " + std::to_string(*tr.dp_step_s) + " s" : "") +
               (tr.reference_step_s ? "; reference step " + std::to_string(*tr.reference_step_s) + " s" : "");
  }
  if (p.status == PlanStatus::kInfeasible) {
    p.warnings.push_back(std::string("no plan meets the ") + (dual ? "byte" : "error") + " budget " + std::to_string(budget) +
                         "; returning the least-" + (dual ? "bytes" : "error") + " plan");
  }
  predict(w, o, cost, p);
  return p;
}

}  // namespace lgreco::planner
