#pragma once
// Helpers shared by `lgreco net ...` and `lgreco simulate`: resolving a topology with an optional
// calibration into a CollectiveModel.
#include <filesystem>
#include <string>
#include <vector>

#include "core/json_util.hpp"
#include "network_models/collectives.hpp"
#include "network_models/fit.hpp"
#include "network_models/presets.hpp"

namespace lgreco::cli {

/// The model for `topology` at `ranks` ranks (0: every GPU), with `fit_path` applied when given.
/// Appends the files read to `inputs` (for provenance).
inline net::CollectiveModel resolve_model(const std::string& topology, int ranks, const std::string& fit_path,
                                          std::vector<std::filesystem::path>* inputs, net::Topology* topo_out = nullptr) {
  net::Topology t = net::resolve_topology(topology);
  if (std::error_code ec; std::filesystem::is_regular_file(topology, ec)) inputs->push_back(topology);
  if (ranks == 0) ranks = t.gpus();
  net::ModelParams p = net::default_params(t, ranks);
  if (!fit_path.empty()) {
    p = net::params_from_fit(read_json_file(fit_path), fit_path, t, ranks);
    inputs->push_back(fit_path);
  }
  if (topo_out) *topo_out = t;
  return net::CollectiveModel(t, ranks, p);
}

}  // namespace lgreco::cli
