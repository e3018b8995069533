#pragma once
// Helpers shared by `lgreco net ...` and `lgreco simulate`: resolving a topology with an optional
// calibration into a CollectiveModel.
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "core/text.hpp"
#include "tools/args.hpp"
#include "network_models/collectives.hpp"
#include "network_models/fit.hpp"
#include "network_models/presets.hpp"

namespace lgreco::cli {

/// Help of --nccl-env, the same on every command that predicts collectives.
inline constexpr const char* kNcclEnvHelp =
    "the job's NCCL restrictions in NCCL's syntax, e.g. 'NCCL_ALGO=Ring NCCL_PROTO=^LL128' (NCCL_ALGO, NCCL_PROTO, "
    "NCCL_NVLS_ENABLE, NCCL_TREE_THRESHOLD; default: none)";

/// --nccl-env parsed (no restriction when empty); ConfigError naming the option and the value.
inline net::NcclEnv nccl_env_option(const std::string& text) {
  try {
    return net::parse_nccl_env(text, "--nccl-env");
  } catch (const ConfigError& e) {
    throw UsageError(e.what());
  }
}

/// --ranks' value: 0 when not given (every GPU), else a positive count (UsageError naming the option otherwise).
inline int parse_ranks(const std::string& s) {
  if (s.empty()) return 0;
  const long long r = parse_int("--ranks", s);
  if (r < 1 || r > 1 << 20) throw UsageError("--ranks " + s + ": expected a positive rank count");
  return static_cast<int>(r);
}

/// `ranks` (parse_ranks) on topology `t`: every GPU for 0; more than it has is --ranks' usage error.
inline int ranks_on(const net::Topology& t, int ranks) {
  if (ranks == 0) return t.gpus();
  if (ranks > t.gpus())
    throw UsageError("--ranks " + std::to_string(ranks) + ": topology " + printable(t.name) + " has " + std::to_string(t.gpus()) + " GPUs");
  return ranks;
}

/// The model for `topology` at `ranks` ranks (0: every GPU; more than the topology has is --ranks' usage error), with `fit_path` applied when given and the
/// job's `nccl_env` (--nccl-env text). Appends the files read to `inputs` (for provenance).
inline net::CollectiveModel resolve_model(const std::string& topology, int ranks, const std::string& fit_path,
                                          std::vector<std::filesystem::path>* inputs, net::Topology* topo_out = nullptr,
                                          const std::string& nccl_env = {}) {
  net::Topology t = net::resolve_topology(topology);
  if (std::error_code ec; std::filesystem::is_regular_file(topology, ec)) inputs->push_back(topology);
  ranks = ranks_on(t, ranks);
  net::ModelParams p = net::default_params(t, ranks);
  if (!fit_path.empty()) {
    p = net::params_from_fit(read_json_file(fit_path), fit_path, t, ranks);
    inputs->push_back(fit_path);
  }
  p.nccl_env = nccl_env_option(nccl_env);
  if (topo_out) *topo_out = t;
  return net::CollectiveModel(t, ranks, p);
}

}  // namespace lgreco::cli
