#pragma once
/// Compression methods as schedules and tables name them: {"method": name, "params": {...}}.
///
/// The known methods, their parameters and defaults, wire bytes and collectives follow the shared
/// contract (N = numel, payload per worker per step, fp32 gradients):
/// - none 4N; fp16/bf16 2N (allreduce)
/// - powersgd: n = shape[0], m = N/n, r = min(n, m, rank); compressible iff (n+m)·r·rate < n·m with
///   rate = min_compression_rate; then 4·r·(n+m) (P = 4rn in allreduce round 0, Q = 4rm in round 1),
///   else 4N in round 0
/// - topk: k = N == 0 ? 0 : max(1, ⌈density·N⌉); pairs 8k, bitmap ⌈N/8⌉+4k, auto = min (allgather);
///   "delta" is data dependent (no closed form here). With DGC's warm-up (warmup_steps > 0) the
///   bytes here are the steady state at the target density; the first steps of training send more
///   (kernels/wire.hpp: topk_density_at). momentum does not change the size.
/// - randomk: 4k (allreduce); qsgd: ⌈N·⌈log2(2s+1)⌉/8⌉ + 4⌈N/bucket⌉ with s = levels or 2^(bits−1)−1
/// - maxmin: N < 16 → 4N, else ⌈bits·N/8⌉ + 8⌈N/bucket⌉; sign: ⌈N/8⌉ + 4⌈N/bucket⌉;
///   terngrad: ⌈2N/8⌉ + 4; nuqsgd: ⌈N·(1+⌈log2(s+2)⌉)/8⌉ + 4⌈N/bucket⌉ (allgather)
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json_util.hpp"
#include "sim/timeline.hpp"

namespace lgreco::planner {

/// A method with its parameters. After normalize_method every parameter is present (defaults filled).
struct MethodSpec {
  std::string method;          ///< "none", "powersgd", ...
  Json params = Json::object();  ///< parameter name → value

  bool operator==(const MethodSpec& o) const { return method == o.method && params == o.params; }
};

/// Names of all known methods, in the contract's order.
const std::vector<std::string>& known_methods();

/// Validates `method` and `params` (unknown method or parameter, wrong type or range → ConfigError
/// naming `where`, the parameter and the value) and returns the spec with every default filled in.
/// For qsgd, "levels" wins over "bits" when both are given and must agree with it.
MethodSpec normalize_method(const std::string& method, const Json& params, const std::string& where);

/// Parses "powersgd:rank=2,power_iterations=2" or "none"; values are read as JSON scalars when they
/// parse as such ("2" → 2, "true" → true), else as strings. Normalised.
MethodSpec parse_method_text(const std::string& text, const std::string& where);

/// Short readable form: the method and its non-default parameters ("powersgd rank=2").
std::string method_label(const MethodSpec& spec);

/// The collective a method's payload needs (allgather for sparse/quantised methods).
sim::Collective method_collective(const std::string& method);

/// PowerSGD's compressibility rule for a tensor of `shape` at `rank` and `min_rate`.
bool powersgd_compressible(const std::vector<std::int64_t>& shape, std::int64_t rank, double min_rate);

/// Wire bytes per worker per step, split like the step timeline: {allreduce round 0, allreduce
/// round 1, allgather}. std::nullopt when data dependent (topk "delta"). Spec must be normalised.
std::optional<std::array<double, 3>> wire_bytes_split(const MethodSpec& spec, const std::vector<std::int64_t>& shape);

/// Total wire bytes (the sum of wire_bytes_split), or std::nullopt when data dependent.
std::optional<double> wire_bytes(const MethodSpec& spec, const std::vector<std::int64_t>& shape);

/// Product of the shape (1 for a scalar shape []).
std::int64_t shape_numel(const std::vector<std::int64_t>& shape);

}  // namespace lgreco::planner
