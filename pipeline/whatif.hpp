#pragma once
/// What-if studies: the step time of the uncompressed, uniform and adaptive settings of one window
/// over a grid of node counts and inter-node bandwidths, each point a cluster built from a base
/// topology (pipeline/cluster.hpp), each prediction planner::predict_step. Time-aware engines
/// re-plan per point; the others keep the plan they were given.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/json_util.hpp"
#include "pipeline/cluster.hpp"
#include "planner/plan.hpp"

namespace lgreco::pipeline {

/// The grid and the base cluster.
struct WhatIfGrid {
  std::string topology;                    ///< base cluster (preset name or topology file)
  std::vector<int> nodes;                  ///< node counts
  std::vector<double> bandwidths_Bps;      ///< per-node inter-node bandwidths
  std::optional<int> gpus_per_node;        ///< override of the topology's
  const Json* network_fit = nullptr;       ///< calibration of the base topology, carried to every point
  std::string fit_origin;
  net::NcclEnv nccl_env;                   ///< the job's NCCL restrictions, at every point
  KernelTime kernel_time;
};

/// One point of the grid.
struct WhatIfPoint {
  double bandwidth_Bps = 0;
  int nodes = 0, ranks = 0;
  double uncompressed_step_s = 0, uniform_step_s = 0, adaptive_step_s = 0;
  double uncompressed_exposed_s = 0, uniform_exposed_s = 0, adaptive_exposed_s = 0;
  double uncompressed_bytes = 0, uniform_bytes = 0, adaptive_bytes = 0;
  double compute_s = 0;
  std::optional<net::PredictionClass> network_class;  ///< Cluster::network_class of the point
  /// With the presets: the lowest and highest speedup over uncompressed among the nominal network times and the
  /// same times slower and faster by the 80 % factor of the held-out rows of the point's class
  /// (net::BandScaledCost; the plan is the one made with the nominal times).
  std::optional<std::pair<double, double>> uniform_speedup_p80, adaptive_speedup_p80;
};

/// The speedups over uncompressed of window `w`'s uniform setting and of `chosen`: `nominal` (uniform, adaptive: those
/// on `cost`, which the caller has predicted already) and those on `cost` with every collective slower and faster
/// by the 80 % held-out factor of class `c` (net::BandScaledCost, `ranks` ranks); the lowest and highest of the
/// three for each. `opt`: the plan options with the compute model applied.
struct SpeedupRanges {
  std::pair<double, double> uniform, adaptive;
};
SpeedupRanges speedup_ranges_p80(const planner::Window& w, const std::vector<planner::Candidate>& chosen, const planner::PlanOptions& opt,
                                 const net::CollectiveCost& cost, net::PredictionClass c, int ranks, std::pair<double, double> nominal);
/// A range as JSON [low, high].
Json range_json(const std::pair<double, double>& r);

/// Predicts every point for window `w` and the plan made from it; `opt` are the plan options the
/// plan was made with (compute model applied). Throws Cancelled between points when interrupted.
std::vector<WhatIfPoint> whatif(const planner::Window& w, const planner::WindowPlan& plan, const planner::PlanOptions& opt,
                                const WhatIfGrid& grid);

/// A point as JSON (the keys of `lgreco whatif --format json`).
Json point_json(const WhatIfPoint& p);

}  // namespace lgreco::pipeline
