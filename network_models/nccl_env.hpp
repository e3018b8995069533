#pragma once
/// The restrictions a job puts on NCCL's choice of algorithm and protocol through its environment, as
/// NCCL reads them, so a prediction describes the run that was (or will be) made:
///
///   NCCL_ALGO, NCCL_PROTO   NCCL's list syntax (src/graph/tuning.cc, parseList): entries separated by
///                           ';', each "[function:][^]name,name,..."; only the first may omit the
///                           function; '^' keeps everything but the names; names and functions are
///                           case-insensitive. Algorithms: Tree, Ring, CollNetDirect, CollNetChain, NVLS,
///                           NVLSTree, PAT; protocols: LL, LL128, Simple; functions: Broadcast, Reduce,
///                           AllGather, ReduceScatter, AllReduce.
///   NCCL_NVLS_ENABLE=0      no NVLS and no NVLS-tree (1 and 2 leave the model's choice).
///   NCCL_TREE_THRESHOLD=T   NCCL 2.4: the tree only for buffers of at most T bytes (0: never).
///
/// The model has no CollNet or PAT: naming them enables nothing it prices. A restriction can only narrow
/// what the model offers on the hardware (LL128 where NCCL enables it, NVLS on NVSwitch hosts); the
/// hierarchical what-if algorithm is not NCCL's and is not affected. Any other variable, an unknown name,
/// a malformed value or a variable given twice is a ConfigError naming it.
#include <array>
#include <limits>
#include <string>
#include <string_view>

#include "core/collective.hpp"
#include "network_models/algorithms.hpp"

namespace lgreco::net {

struct NcclEnv {
  static constexpr int kCollectives = 4;  ///< Collective's values
  /// Enabled algorithms and protocols by collective (all by default).
  std::array<std::array<bool, kNumAlgorithms>, kCollectives> algorithm{};
  std::array<std::array<bool, kNumProtocols>, kCollectives> protocol{};
  double tree_threshold_bytes = std::numeric_limits<double>::infinity();
  std::string text;  ///< the assignments as given ("" when nothing is restricted)

  NcclEnv();
  bool operator==(const NcclEnv&) const = default;
  /// Whether NCCL may run (a, p) for a collective of `size_bytes` (nccl-tests size) under these settings.
  bool allows(Collective c, Algorithm a, Protocol p, double size_bytes) const;
  bool restricted() const { return !text.empty(); }
};

/// Parses whitespace-separated NAME=VALUE assignments (the variables above); `where` names the
/// source in errors (a file and line, or a command-line option). Empty text: no restriction.
NcclEnv parse_nccl_env(std::string_view assignments, const std::string& where);

}  // namespace lgreco::net
