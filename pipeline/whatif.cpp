#include "pipeline/whatif.hpp"

#include <algorithm>

#include "core/cancel.hpp"
#include "core/units.hpp"

namespace lgreco::pipeline {

SpeedupRanges speedup_ranges_p80(const planner::Window& w, const std::vector<planner::Candidate>& chosen, const planner::PlanOptions& opt,
                                 const net::CollectiveCost& cost, net::PredictionClass c, int ranks, std::pair<double, double> nominal) {
  std::vector<planner::Candidate> uniform;
  for (const auto& l : w.layers) uniform.push_back(l.candidates[l.default_index]);
  const std::vector<planner::Candidate> raw = planner::uncompressed(w);
  SpeedupRanges out{{nominal.first, nominal.first}, {nominal.second, nominal.second}};
  auto widen = [](std::pair<double, double>& r, double v) { r = {std::min(r.first, v), std::max(r.second, v)}; };
  for (int direction : {-1, 1}) {
    const net::BandScaledCost scaled(cost, c, ranks, direction);
    const double raw_s = planner::predict_step(w, raw, opt, scaled).step_s;
    widen(out.uniform, raw_s / planner::predict_step(w, uniform, opt, scaled).step_s);
    widen(out.adaptive, raw_s / planner::predict_step(w, chosen, opt, scaled).step_s);
  }
  return out;
}

Json range_json(const std::pair<double, double>& r) { return Json::array({r.first, r.second}); }

std::vector<WhatIfPoint> whatif(const planner::Window& w, const planner::WindowPlan& plan, const planner::PlanOptions& opt,
                                const WhatIfGrid& grid) {
  const bool time_aware = opt.engine == planner::Engine::kTime;
  std::vector<planner::Candidate> uniform;
  for (const auto& l : w.layers) uniform.push_back(l.candidates[l.default_index]);
  const std::vector<planner::Candidate> raw = planner::uncompressed(w);
  auto sum_bytes = [](const std::vector<planner::Candidate>& cs) {
    double b = 0;
    for (const auto& c : cs) b += c.bytes;
    return b;
  };
  std::vector<WhatIfPoint> out;
  for (int n : grid.nodes) {
    for (double bw : grid.bandwidths_Bps) {
      throw_if_cancelled();
      const Cluster c = make_cluster(grid.topology, n, grid.gpus_per_node, bw, grid.network_fit, grid.fit_origin, grid.nccl_env);
      planner::PlanOptions o = opt;
      o.kernel_time = kernel_time_fn(grid.kernel_time, c);  // this point's GPU count
      const planner::WindowPlan p = time_aware ? planner::plan_window(w, o, c.cost.get()) : plan;
      const auto r = planner::predict_step(w, raw, o, *c.cost);
      const auto u = planner::predict_step(w, uniform, o, *c.cost);
      const auto a = planner::predict_step(w, p.chosen, o, *c.cost);
      WhatIfPoint pt;
      pt.bandwidth_Bps = bw;
      pt.nodes = n;
      pt.ranks = c.ranks();
      pt.uncompressed_step_s = r.step_s;
      pt.uniform_step_s = u.step_s;
      pt.adaptive_step_s = a.step_s;
      pt.uncompressed_exposed_s = r.exposed_comm_s;
      pt.uniform_exposed_s = u.exposed_comm_s;
      pt.adaptive_exposed_s = a.exposed_comm_s;
      pt.uncompressed_bytes = sum_bytes(raw);
      pt.uniform_bytes = sum_bytes(uniform);
      pt.adaptive_bytes = sum_bytes(p.chosen);
      pt.compute_s = r.compute_s;
      pt.network_class = c.network_class;
      if (c.network_class) {
        // The speedups if the network times were off as most held-out rows of this class were, both ways.
        const SpeedupRanges sr = speedup_ranges_p80(w, p.chosen, o, *c.cost, *c.network_class, c.ranks(),
                                                    {pt.uncompressed_step_s / pt.uniform_step_s, pt.uncompressed_step_s / pt.adaptive_step_s});
        pt.uniform_speedup_p80 = sr.uniform;
        pt.adaptive_speedup_p80 = sr.adaptive;
      }
      out.push_back(pt);
    }
  }
  return out;
}

Json point_json(const WhatIfPoint& p) {
  return Json{{"bandwidth_Gbps", units::Bps_to_gbps(p.bandwidth_Bps)},
              {"nodes", p.nodes},
              {"ranks", p.ranks},
              {"uncompressed_step_s", p.uncompressed_step_s},
              {"uniform_step_s", p.uniform_step_s},
              {"adaptive_step_s", p.adaptive_step_s},
              {"uncompressed_exposed_comm_s", p.uncompressed_exposed_s},
              {"uniform_exposed_comm_s", p.uniform_exposed_s},
              {"adaptive_exposed_comm_s", p.adaptive_exposed_s},
              {"uniform_speedup", p.uncompressed_step_s / p.uniform_step_s},
              {"adaptive_speedup", p.uncompressed_step_s / p.adaptive_step_s},
              {"adaptive_vs_uniform", p.uniform_step_s / p.adaptive_step_s},
              {"uncompressed_bytes_per_step", p.uncompressed_bytes},
              {"uniform_bytes_per_step", p.uniform_bytes},
              {"adaptive_bytes_per_step", p.adaptive_bytes},
              {"compute_s", p.compute_s},
              {"network_class", p.network_class ? Json(net::to_string(*p.network_class)) : Json(nullptr)},
              {"uniform_speedup_range_p80", p.uniform_speedup_p80 ? range_json(*p.uniform_speedup_p80) : Json(nullptr)},
              {"adaptive_speedup_range_p80", p.adaptive_speedup_p80 ? range_json(*p.adaptive_speedup_p80) : Json(nullptr)}};
}

}  // namespace lgreco::pipeline
