#pragma once
/// The algorithms and protocols of the collective model (collectives.hpp) and of NCCL's restrictions
/// on them (nccl_env.hpp).

namespace lgreco::net {

/// Algorithms considered (kNvlsTree: NVLS inside hosts and a tree across them; corpus presets only;
/// kHierarchical: not an NCCL algorithm, only where a what-if allows it).
enum class Algorithm { kRing, kTree, kNvls, kHierarchical, kNvlsTree };
inline constexpr int kNumAlgorithms = 5;
/// NCCL protocols.
enum class Protocol { kLL, kLL128, kSimple };
inline constexpr int kNumProtocols = 3;

const char* to_string(Algorithm a);
const char* to_string(Protocol p);

}  // namespace lgreco::net
