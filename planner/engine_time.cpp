#include "planner/engine_time.hpp"
#include "core/units.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "core/cancel.hpp"
#include "core/error.hpp"

namespace lgreco::planner {
namespace {

using units::kInf;
/// A bucket's load: allreduce round 0, round 1 and allgather bytes, and kernel seconds.
using Bytes3 = std::array<double, 4>;

struct Pt {
  Bytes3 b;
  std::int32_t parent_state, parent_point, cand;
};

double comm_time(const Bytes3& b, const net::CollectiveCost& cost) {
  double t = 0;
  if (b[0] > 0) t += cost.time_s(Collective::kAllreduce, b[0]);
  if (b[1] > 0) t += cost.time_s(Collective::kAllreduce, b[1]);
  if (b[2] > 0) t += cost.time_s(Collective::kAllgather, b[2]);
  return t + b[3];
}

bool dominates(const Bytes3& a, const Bytes3& b) { return a[0] <= b[0] && a[1] <= b[1] && a[2] <= b[2] && a[3] <= b[3]; }

// Per-bucket DP: states[s] holds up to F points per error state (flat), count per state.
struct BucketDp {
  std::vector<std::vector<Pt>> steps;  // per layer of the bucket: (G+1)·F points
  std::vector<std::vector<int>> count;
  std::vector<int> layer_ids;
  std::vector<double> best_time;       // C_b[e] (prefix-minimised)
  std::vector<int> best_state, best_point;
};

class Inserter {
 public:
  Inserter(int F, const net::CollectiveCost& cost, bool& exact) : F_(F), cost_(cost), exact_(exact) {}
  void insert(Pt* slot, int& n, const Pt& p) {
    for (int i = 0; i < n; ++i) {
      if (dominates(slot[i].b, p.b)) return;
    }
    int m = 0;
    for (int i = 0; i < n; ++i) {
      if (!dominates(p.b, slot[i].b)) slot[m++] = slot[i];
    }
    n = m;
    if (n < F_) {
      slot[n++] = p;
      return;
    }
    exact_ = false;  // full: keep the F points of least communication time
    int worst = 0;
    double worst_t = -1;
    for (int i = 0; i < n; ++i) {
      const double t = comm_time(slot[i].b, cost_);
      if (t > worst_t) worst_t = t, worst = i;
    }
    if (comm_time(p.b, cost_) < worst_t) slot[worst] = p;
  }

 private:
  int F_;
  const net::CollectiveCost& cost_;
  bool& exact_;
};

Bytes3 bytes_of(const sim::LayerComm& c) {
  return {c.allreduce_bytes[0], c.allreduce_bytes[1], c.allgather_bytes, c.compress_s + c.decompress_s};
}

}  // namespace

double predict_step_s(const TimeProblem& p, const std::vector<int>& choice, const net::CollectiveCost& cost) {
  std::vector<sim::LayerComm> comm(p.layers.size());
  for (std::size_t i = 0; i < p.layers.size(); ++i) comm[i] = p.layers[i].comm.at(choice.at(i));
  return sim::simulate_step(p.model, comm, cost).step_s;
}

TimeResult solve_time(const TimeProblem& p, const net::CollectiveCost& cost, const TimeOptions& opt,
                      const std::vector<int>* reference_choice) {
  const int G = opt.grid, F = opt.max_points;
  if (G < 1 || F < 1) throw ConfigError("time engine: grid and max_points must be >= 1");
  if (!(p.error_budget >= 0) || !std::isfinite(p.error_budget)) throw InputError("time engine: error budget must be finite and >= 0");
  const std::size_t n = p.layers.size();
  if (p.model.backward_s.size() != n) throw InputError("time engine: step model and layers differ in size");
  const double w = p.error_budget / G;
  auto disc = [&](double e) -> long long {
    if (e == 0) return 0;
    if (w == 0) return G + 1;
    const double q = std::ceil(e / w);
    return q > G ? G + 1 : static_cast<long long>(q);
  };
  // Ready time of each bucket from the backward order (no kernel time; see header).
  std::vector<double> ready(n, 0);
  double t = p.model.forward_s;
  for (int id : p.model.backward_order) ready.at(id) = (t += p.model.backward_s.at(id));
  const std::size_t NB = p.model.buckets.size();
  TimeResult out;
  std::vector<BucketDp> bdp(NB);
  for (std::size_t b = 0; b < NB; ++b) {
    throw_if_cancelled();
    BucketDp& d = bdp[b];
    d.layer_ids = p.model.buckets[b];
    std::vector<Pt> cur((G + 1) * static_cast<std::size_t>(F));
    std::vector<int> cnt(G + 1, 0);
    cur[0] = {{0, 0, 0, 0}, -1, -1, -1};
    cnt[0] = 1;
    Inserter ins(F, cost, out.exact_discretised);
    for (int id : d.layer_ids) {
      const TimeLayer& L = p.layers.at(id);
      std::vector<Pt> nxt((G + 1) * static_cast<std::size_t>(F));
      std::vector<int> ncnt(G + 1, 0);
      for (int e = 0; e <= G; ++e) {
        for (int i = 0; i < cnt[e]; ++i) {
          const Pt& src = cur[static_cast<std::size_t>(e) * F + i];
          for (std::size_t c = 0; c < L.error.size(); ++c) {
            const long long ne = e + disc(L.error[c]);
            if (ne > G) continue;
            const Bytes3 add = bytes_of(L.comm[c]);
            Pt np{{src.b[0] + add[0], src.b[1] + add[1], src.b[2] + add[2], src.b[3] + add[3]}, e, i, static_cast<std::int32_t>(c)};
            ins.insert(&nxt[static_cast<std::size_t>(ne) * F], ncnt[ne], np);
          }
        }
      }
      d.steps.push_back(nxt);
      d.count.push_back(ncnt);
      cur.swap(nxt);
      cnt.swap(ncnt);
    }
    d.best_time.assign(G + 1, kInf);
    d.best_state.assign(G + 1, -1);
    d.best_point.assign(G + 1, -1);
    for (int e = 0; e <= G; ++e) {
      if (e > 0) d.best_time[e] = d.best_time[e - 1], d.best_state[e] = d.best_state[e - 1], d.best_point[e] = d.best_point[e - 1];
      for (int i = 0; i < cnt[e]; ++i) {
        const double ct = comm_time(cur[static_cast<std::size_t>(e) * F + i].b, cost);
        if (ct < d.best_time[e]) d.best_time[e] = ct, d.best_state[e] = e, d.best_point[e] = i;
      }
    }
  }
  // Outer DP over buckets.
  std::vector<double> Fprev(G + 1, 0.0), Fcur(G + 1);
  std::vector<std::vector<int>> arg(NB, std::vector<int>(G + 1, -1));
  for (std::size_t b = 0; b < NB; ++b) {
    double rb = p.model.forward_s;
    for (int id : p.model.buckets[b]) rb = std::max(rb, ready[id]);
    for (int E = 0; E <= G; ++E) {
      double best = kInf;
      int best_e = -1;
      for (int e = 0; e <= E; ++e) {
        if (!(bdp[b].best_time[e] < kInf) || !(Fprev[E - e] < kInf)) continue;
        const double v = std::max(rb, Fprev[E - e]) + bdp[b].best_time[e];
        if (v < best) best = v, best_e = e;
      }
      Fcur[E] = best;
      arg[b][E] = best_e;
    }
    Fprev.swap(Fcur);
  }
  std::optional<std::vector<int>> dp_choice;
  if (NB == 0 || Fprev[G] < kInf) {
    std::vector<int> choice(n, 0);
    int E = G;
    for (std::size_t b = NB; b-- > 0;) {
      const int e = arg[b][E];
      E -= e;
      const BucketDp& d = bdp[b];
      int state = d.best_state[e], point = d.best_point[e];
      for (std::size_t j = d.layer_ids.size(); j-- > 0;) {
        const Pt& pt = d.steps[j][static_cast<std::size_t>(state) * F + point];
        choice[d.layer_ids[j]] = pt.cand;
        state = pt.parent_state;
        point = pt.parent_point;
      }
    }
    double err = 0;
    for (std::size_t i = 0; i < n; ++i) err += p.layers[i].error[choice[i]];
    if (err <= p.error_budget) dp_choice = choice;  // guards against rounding at the last ulp
  }
  if (dp_choice) out.dp_step_s = predict_step_s(p, *dp_choice, cost);
  if (reference_choice) out.reference_step_s = predict_step_s(p, *reference_choice, cost);
  if (dp_choice && (!reference_choice || *out.dp_step_s < *out.reference_step_s)) {
    out.choice = *dp_choice;
    out.step_s = *out.dp_step_s;
    out.source = "time-dp";
  } else if (reference_choice) {
    out.choice = *reference_choice;
    out.step_s = *out.reference_step_s;
    out.source = "reference";
  } else {
    // Nothing meets the budget on the grid: the least-error plan, flagged infeasible.
    out.choice.assign(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      const auto& e = p.layers[i].error;
      out.choice[i] = static_cast<int>(std::min_element(e.begin(), e.end()) - e.begin());
    }
    out.step_s = predict_step_s(p, out.choice, cost);
    out.source = "least-error";
    out.status = PlanStatus::kInfeasible;
  }
  out.total_error = 0;
  for (std::size_t i = 0; i < n; ++i) out.total_error += p.layers[i].error[out.choice[i]];
  if (out.status != PlanStatus::kInfeasible && out.total_error > p.error_budget) out.status = PlanStatus::kInfeasible;
  return out;
}

}  // namespace lgreco::planner
