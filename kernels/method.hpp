#pragma once
/// Compression methods, their typed parameters, and the method registry (standard library only).
///
/// The registry (methods() below, kernels/registry.cpp) is the one table of methods in lgreco:
/// every method's name, the collective its payload needs, and every parameter with its type,
/// default, range and meaning. The planner, the simulator, the CLI (`lgreco methods`) and the
/// Python package (the native module, or the file generated from this table) all read it; the
/// wire-size formulas live next to it in kernels/wire.hpp.
///
/// A method is written {"method": "<name>", "params": {...}}. Every parameter has a default (the
/// member initialisers of the parameter structs below are the defaults); an unknown parameter, a
/// malformed value or a value out of range is a ConfigError naming the method, the parameter, the
/// value and what was expected. Parameter values arrive as text (JSON numbers, booleans and strings
/// have an obvious text form; kernels/method_json.hpp converts JSON).
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/collective.hpp"

namespace lgreco::kernels {

/// The compression methods, in registry order.
enum class Method { kNone, kFp16, kBf16, kPowerSgd, kTopK, kRandomK, kQsgd, kMaxMin, kSign, kTernGrad, kNuqsgd };

/// PowerSGD orthogonalisation of P (and of the warm-start Q).
enum class Orthogonalization { kAuto, kGramSchmidt, kQr };

/// Top-k index encodings; kAuto = cheaper of pairs and bitmap (ties → pairs).
enum class TopkEncoding { kAuto, kPairs, kBitmap, kDelta };

/// Top-k selection: exact radix select, or DGC's sampled threshold.
enum class TopkSelection { kExact, kDgc };

/// QSGD norm: L2 of the bucket (QSGD) or max |v| of the bucket (QSGDinf).
enum class QsgdNorm { kL2, kMax };

/// QSGD codes: fixed width, or Elias-gamma coded levels (packed into the fixed worst-case length
/// on the wire, kernels/wire.hpp).
enum class QsgdEncoding { kFixed, kElias };

/// Rounding to a quantisation level.
enum class Rounding { kStochastic, kNearest };

/// PowerSGD parameters (PyTorch hook semantics).
struct PowerSgdParams {
  int rank = 4;                          ///< target rank r (0 allowed: send nothing)
  int power_iterations = 1;              ///< subspace iterations per step (each allreduces P and Q)
  double min_compression_rate = 2.0;     ///< compress iff (n+m)·r_eff·rate < n·m
  bool warm_start = true;                ///< keep Q across steps
  Orthogonalization orthogonalization = Orthogonalization::kAuto;  ///< auto: GS for r_eff ≤ 2, else QR
  std::uint64_t seed = 0;                ///< seed of the first Q
};

/// Top-k parameters. `momentum` and `warmup_steps` are DGC's (Lin et al. 2018, §3.2 and §3.4):
/// - momentum m > 0 turns on momentum correction with factor masking, done by ErrorFeedback
///   (kernels/error_feedback.hpp): u ← m·u + g; v ← v + u; send top-k of v; u, v ← 0 where sent.
///   m = 0 is plain error feedback, bit for bit.
/// - warmup_steps W > 0 turns on the warm-up density schedule: the density used at training step t
///   is topk_density_at(params, t) (kernels/wire.hpp): 25 %, 6.25 %, 1.5625 %, … (×1/4 every W
///   steps) until it would fall to `density` or below, then `density`.
struct TopkParams {
  double density = 0.01;                        ///< target: k = N == 0 ? 0 : max(1, ceil(density·N))
  TopkEncoding encoding = TopkEncoding::kAuto;  ///< index encoding on the wire
  TopkSelection selection = TopkSelection::kExact;  ///< exact or DGC sampled threshold
  double momentum = 0.0;                        ///< DGC momentum correction m in [0, 1) (applied in fp32)
  std::int64_t warmup_steps = 0;                ///< DGC warm-up: steps per stage; 0 = no warm-up
};

/// Random-k parameters.
struct RandomkParams {
  double density = 0.01;  ///< k as for top-k
  bool scaled = false;    ///< false: reconstruction keeps the values; true: values × N/k (unbiased)
};

/// QSGD parameters; `levels` is s (the input alias bits b ⇔ s = 2^(b−1) − 1).
struct QsgdParams {
  int levels = 7;                           ///< s ≥ 1
  int bucket_size = 512;                    ///< elements per norm
  QsgdNorm norm = QsgdNorm::kL2;            ///< bucket scale
  QsgdEncoding encoding = QsgdEncoding::kFixed;  ///< code format
};

/// Max-min (CGX) parameters.
struct MaxMinParams {
  int bits = 4;                              ///< 1..8
  int bucket_size = 1024;                    ///< elements per (unit, min) pair
  Rounding rounding = Rounding::kStochastic; ///< u = uniform draw or 0.5
};

/// EF-SignSGD parameters.
struct SignParams {
  int bucket_size = 1024;  ///< elements per scale
};

/// NUQSGD parameters: levels {0, 2^−s, …, 1/2, 1}.
struct NuqsgdParams {
  int levels = 4;          ///< s ≥ 1 (s + 2 magnitude levels)
  int bucket_size = 512;   ///< elements per L2 norm
};

/// A method with its resolved parameters. Only the member matching `method` is meaningful; the
/// others keep their defaults.
struct MethodSpec {
  Method method = Method::kNone;  ///< which method
  PowerSgdParams powersgd;        ///< when method == kPowerSgd
  TopkParams topk;                ///< when method == kTopK
  RandomkParams randomk;          ///< when method == kRandomK
  QsgdParams qsgd;                ///< when method == kQsgd
  MaxMinParams maxmin;            ///< when method == kMaxMin
  SignParams sign;                ///< when method == kSign
  NuqsgdParams nuqsgd;            ///< when method == kNuqsgd
};

/// Key/value parameter strings as written by the user.
using ParamList = std::vector<std::pair<std::string, std::string>>;

// ---------------------------------------------------------------------------------------------
// The registry.

/// How a parameter's value is written.
enum class ParamType { kInt, kReal, kBool, kChoice };

/// A typed parameter value.
using ParamValue = std::variant<std::int64_t, double, bool, std::string>;

/// One parameter of one method.
struct ParamInfo {
  const char* name;                    ///< as in JSON and --default
  ParamType type;
  const char* meaning;                 ///< one line for help texts and docs
  std::int64_t int_min = 0, int_max = 0;  ///< kInt: inclusive range
  double real_min = 0, real_max = 0;   ///< kReal: range, ends open or closed as below
  bool min_open = false, max_open = false;
  std::span<const char* const> choices;  ///< kChoice: allowed strings
  /// Input-only alias of another parameter (qsgd "bits" → "levels"): accepted by the parsers,
  /// never written; giving both is an error.
  const char* alias_for = nullptr;
  void (*set)(MethodSpec&, const ParamValue&) = nullptr;  ///< stores a validated value
  ParamValue (*get)(const MethodSpec&) = nullptr;         ///< reads it back (nullptr for aliases)
};

/// One method.
struct MethodInfo {
  Method method;
  const char* name;
  Collective collective;               ///< allreduce (summable payloads) or allgather
  const char* summary;                 ///< one line
  const char* wire_formula;            ///< bytes per worker per step, as kernels/wire.hpp computes them
  std::span<const ParamInfo> params;   ///< in canonical order (aliases last)
  /// The parameter a family of this method varies across candidates ("" = none: a family of this
  /// method is its single setting).
  const char* planned_param;
};

/// Every method, in the order of the Method enum.
std::span<const MethodInfo> methods();
/// The registry entry of a method.
const MethodInfo& method_info(Method m);
/// The entry named `name`, or nullptr.
const MethodInfo* find_method(std::string_view name);
/// A parameter of a method (aliases included), or nullptr.
const ParamInfo* find_param(const MethodInfo& m, std::string_view name);

/// Parses a method name and its parameters; throws ConfigError (unknown method or parameter,
/// duplicate key, malformed or out-of-range value, an alias given together with its target).
MethodSpec parse_method(std::string_view name, const ParamList& params = {});

/// Parses "name[:key=value,...]" (the CLI's --pin and --method form); ConfigError as above.
MethodSpec parse_method_text(std::string_view text);

/// The canonical name ("powersgd", "topk", ...).
std::string method_name(Method m);

/// Parses a method name alone; throws ConfigError listing the known names.
Method method_from_name(std::string_view name);

/// The collective a method's payload needs.
Collective method_collective(Method m);

/// All resolved parameters of a spec in canonical text form, in registry order, aliases never
/// written (parse_method(name, resolved_params(spec)) == spec).
ParamList resolved_params(const MethodSpec& spec);

/// The text form of a typed value ("4", "0.01", "true", "auto"): integers in decimal, reals in the
/// shortest form that reads back exactly, booleans as true/false.
std::string value_text(const ParamValue& v);

/// Short human label: the method, its planned parameter (always) and every other parameter that
/// differs from its default, e.g. "powersgd rank=4", "topk density=0.01 encoding=pairs".
std::string describe(const MethodSpec& spec);

/// Field-wise equality of the meaningful parameters.
bool operator==(const MethodSpec& a, const MethodSpec& b);

/// Text forms of the enums (as in the parameter table).
std::string to_string(TopkEncoding e);
std::string to_string(Orthogonalization o);

}  // namespace lgreco::kernels
