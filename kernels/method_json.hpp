#pragma once
/// JSON forms of methods and device profiles (full build only: library lgreco_kernels_json, which
/// links lgreco_core and nlohmann_json; the kernels-only build does not have it).
#include <string>

#include <nlohmann/json.hpp>

#include "kernels/method.hpp"
#include "kernels/profile.hpp"
#include "kernels/wire.hpp"

namespace lgreco::kernels {

/// {"method": "<name>", "params": {...}} → MethodSpec. Numbers, booleans and strings are accepted
/// as parameter values; unknown keys (top level or params) are ConfigError naming `where`.
MethodSpec method_from_json(const nlohmann::json& j, const std::string& where = "method");

/// MethodSpec → {"method": ..., "params": {every resolved param}} with numbers/booleans typed.
nlohmann::json method_to_json(const MethodSpec& spec);

/// The method registry (kernels/method.hpp) as a document: {"schema_version": 1, "kind":
/// "lgreco-methods", "methods": [{"name", "collective", "summary", "wire_formula", "planned_param",
/// "params": [{"name", "type": int|real|bool|choice, "meaning", "default", "min"/"max" (numbers;
/// reals also "min_open"/"max_open"), "choices", "alias_for" with "alias_values" (alias value →
/// the target's value, as text keys)}]}]}. What `lgreco methods --format json` prints and what the
/// Python package reads (python/lgreco/registry.json is generated from it and checked by a test).
nlohmann::json registry_to_json();

/// A wire plan as recorded in schedules and returned to Python: {"bytes", "collective", "rounds":
/// [P-round, Q-round allreduce bytes], "allgather_bytes"} plus what an implementation needs to send
/// exactly those bytes: "k" (topk, randomk), "encoding" (topk), "view" {"n", "m", "rank",
/// "compressed"} (powersgd), "code_bits" (quantisers), "raw": true (values sent as fp32).
nlohmann::json wire_plan_to_json(const WirePlan& plan, Method method);

/// A stage of a wire plan: {"from_step", "to_step" (null = open), "plan": wire_plan_to_json}.
nlohmann::json wire_stage_to_json(const WireStage& stage, Method method);

/// Parses a device profile document (kernels/profiles/<device>.json); ConfigError naming `where`.
DeviceProfile profile_from_json(const nlohmann::json& j, const std::string& where);

/// Reads and parses a profile file.
DeviceProfile load_profile(const std::string& path);

}  // namespace lgreco::kernels
