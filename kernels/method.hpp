#pragma once
/// Compression methods and their typed parameters (standard library only).
///
/// A method is written {"method": "<name>", "params": {...}}. Every parameter has a default; an
/// unknown parameter, a malformed value or a value out of range is a ConfigError naming the method,
/// the parameter, the value and what was expected. Parameter values arrive as strings (JSON numbers,
/// booleans and strings all have an obvious text form; kernels/method_json.hpp converts JSON).
///
/// | method   | params (defaults)                                                                 |
/// |----------|-----------------------------------------------------------------------------------|
/// | none     | –                                                                                 |
/// | fp16     | –                                                                                 |
/// | bf16     | –                                                                                 |
/// | powersgd | rank (4, ≥ 0), power_iterations (1, 1..16), min_compression_rate (2, > 0),        |
/// |          | warm_start (true), orthogonalization ("auto" | "gram-schmidt" | "qr"), seed (0)     |
/// | topk     | density (0.01, (0, 1]), encoding ("auto" | "pairs" | "bitmap" | "delta"),         |
/// |          | selection ("exact" | "dgc"), momentum (0, [0, 1)), warmup_steps (0, ≥ 0)          |
/// | randomk  | density (0.01, (0, 1]), scaled (false: values sent as they are; true: × N/k)       |
/// | qsgd     | bits (4, 2..16) or levels (s, 1..32767; bits b ⇔ s = 2^(b−1) − 1; not both),        |
/// |          | bucket_size (512, ≥ 1), norm ("l2" | "max"), encoding ("fixed" | "elias")          |
/// | maxmin   | bits (4, 1..8), bucket_size (1024, ≥ 1), rounding ("stochastic" | "nearest")       |
/// | sign     | bucket_size (1024, ≥ 1)                                                           |
/// | terngrad | –                                                                                 |
/// | nuqsgd   | levels (4, 1..30), bucket_size (512, ≥ 1)                                         |
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lgreco::kernels {

/// The compression methods (see the table above).
enum class Method { kNone, kFp16, kBf16, kPowerSgd, kTopK, kRandomK, kQsgd, kMaxMin, kSign, kTernGrad, kNuqsgd };

/// The collective a method's payload needs.
enum class Collective { kAllreduce, kAllgather };

/// PowerSGD orthogonalisation of P (and of the warm-start Q).
enum class Orthogonalization { kAuto, kGramSchmidt, kQr };

/// Top-k index encodings; kAuto = cheaper of pairs and bitmap (ties → pairs).
enum class TopkEncoding { kAuto, kPairs, kBitmap, kDelta };

/// Top-k selection: exact radix select, or DGC's sampled threshold.
enum class TopkSelection { kExact, kDgc };

/// QSGD norm: L2 of the bucket (QSGD) or max |v| of the bucket (QSGDinf).
enum class QsgdNorm { kL2, kMax };

/// QSGD wire size: fixed-width codes, or the measured Elias-gamma length of the codes.
enum class QsgdEncoding { kFixed, kElias };

/// Rounding to a quantisation level.
enum class Rounding { kStochastic, kNearest };

/// PowerSGD parameters (PyTorch hook semantics).
struct PowerSgdParams {
  int rank = 4;                          ///< target rank r (0 allowed: send nothing)
  int power_iterations = 1;              ///< subspace iterations per step
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

/// QSGD parameters; `levels` is s (bits b ⇔ s = 2^(b−1) − 1).
struct QsgdParams {
  int levels = 7;                           ///< s ≥ 1
  int bucket_size = 512;                    ///< elements per norm
  QsgdNorm norm = QsgdNorm::kL2;            ///< bucket scale
  QsgdEncoding encoding = QsgdEncoding::kFixed;  ///< wire size accounting
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

/// Parses a method name and its parameters; throws ConfigError (unknown method or parameter,
/// duplicate key, malformed or out-of-range value, qsgd with both bits and levels).
MethodSpec parse_method(std::string_view name, const ParamList& params = {});

/// The canonical name ("powersgd", "topk", ...).
std::string method_name(Method m);

/// Parses a method name alone; throws ConfigError listing the known names.
Method method_from_name(std::string_view name);

/// All resolved parameters of a spec in canonical text form (parse_method(name, params(spec)) == spec).
/// Qsgd is written with "levels" (never "bits").
ParamList resolved_params(const MethodSpec& spec);

/// Short human label, e.g. "powersgd(rank=4)", "topk(density=0.01)", "maxmin(bits=4)".
std::string describe(const MethodSpec& spec);

/// Field-wise equality of the meaningful parameters.
bool operator==(const MethodSpec& a, const MethodSpec& b);

/// Text forms of the enums (as in the parameter table).
std::string to_string(Collective c);
std::string to_string(TopkEncoding e);
std::string to_string(Orthogonalization o);

}  // namespace lgreco::kernels
