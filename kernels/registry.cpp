// The method registry: the one table of methods and parameters (kernels/method.hpp), and the
// parsing and printing that read it. Defaults are the member initialisers of the parameter
// structs: each parameter's `get` of a default-constructed spec.
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <locale>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/text.hpp"
#include "kernels/method.hpp"

namespace lgreco::kernels {
namespace {

constexpr std::int64_t kMaxBucket = std::int64_t{1} << 30;
constexpr std::int64_t kI64Max = std::numeric_limits<std::int64_t>::max();

// ---- typed access helpers -------------------------------------------------------------------
std::int64_t as_int(const ParamValue& v) { return std::get<std::int64_t>(v); }
double as_real(const ParamValue& v) { return std::get<double>(v); }
bool as_bool(const ParamValue& v) { return std::get<bool>(v); }
const std::string& as_text(const ParamValue& v) { return std::get<std::string>(v); }

// Choice tables: names in the order of the enum.
constexpr std::array<const char*, 3> kOrthNames{"auto", "gram-schmidt", "qr"};
constexpr std::array<const char*, 4> kEncNames{"auto", "pairs", "bitmap", "delta"};
constexpr std::array<const char*, 2> kSelNames{"exact", "dgc"};
constexpr std::array<const char*, 2> kNormNames{"l2", "max"};
constexpr std::array<const char*, 2> kQEncNames{"fixed", "elias"};
constexpr std::array<const char*, 2> kRoundNames{"stochastic", "nearest"};

template <typename E>
E enum_of(std::span<const char* const> names, const ParamValue& v) {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (as_text(v) == names[i]) return static_cast<E>(i);
  return static_cast<E>(0);  // unreachable: values are validated against the choices first
}
template <typename E>
ParamValue name_of(std::span<const char* const> names, E e) {
  return std::string(names[static_cast<std::size_t>(e)]);
}

constexpr ParamInfo int_param(const char* name, const char* meaning, std::int64_t lo, std::int64_t hi,
                    void (*set)(MethodSpec&, const ParamValue&), ParamValue (*get)(const MethodSpec&)) {
  ParamInfo p{};
  p.name = name;
  p.type = ParamType::kInt;
  p.meaning = meaning;
  p.int_min = lo;
  p.int_max = hi;
  p.set = set;
  p.get = get;
  return p;
}
constexpr ParamInfo real_param(const char* name, const char* meaning, double lo, bool lo_open, double hi, bool hi_open,
                     void (*set)(MethodSpec&, const ParamValue&), ParamValue (*get)(const MethodSpec&)) {
  ParamInfo p{};
  p.name = name;
  p.type = ParamType::kReal;
  p.meaning = meaning;
  p.real_min = lo;
  p.real_max = hi;
  p.min_open = lo_open;
  p.max_open = hi_open;
  p.set = set;
  p.get = get;
  return p;
}
constexpr ParamInfo bool_param(const char* name, const char* meaning, void (*set)(MethodSpec&, const ParamValue&),
                     ParamValue (*get)(const MethodSpec&)) {
  ParamInfo p{};
  p.name = name;
  p.type = ParamType::kBool;
  p.meaning = meaning;
  p.set = set;
  p.get = get;
  return p;
}
constexpr ParamInfo choice_param(const char* name, const char* meaning, std::span<const char* const> choices,
                       void (*set)(MethodSpec&, const ParamValue&), ParamValue (*get)(const MethodSpec&)) {
  ParamInfo p{};
  p.name = name;
  p.type = ParamType::kChoice;
  p.meaning = meaning;
  p.choices = choices;
  p.set = set;
  p.get = get;
  return p;
}

// ---- the parameter tables ---------------------------------------------------------------------
#define LGRECO_SET(expr) [](MethodSpec& s, const ParamValue& v) { expr; }
#define LGRECO_GET(expr) [](const MethodSpec& s) -> ParamValue { return expr; }

constexpr std::array<ParamInfo, 6> kPowerSgdParams{
    int_param("rank", "target rank r of P (n×r) and Q (m×r); 0 sends nothing", 0, 1 << 16,
              LGRECO_SET(s.powersgd.rank = static_cast<int>(as_int(v))), LGRECO_GET(std::int64_t{s.powersgd.rank})),
    int_param("power_iterations", "subspace iterations per step; each allreduces P and Q once", 1, 16,
              LGRECO_SET(s.powersgd.power_iterations = static_cast<int>(as_int(v))),
              LGRECO_GET(std::int64_t{s.powersgd.power_iterations})),
    real_param("min_compression_rate", "compress a tensor iff (n+m)·r_eff·rate < n·m", 0.0, true, 1e12, false,
               LGRECO_SET(s.powersgd.min_compression_rate = as_real(v)), LGRECO_GET(s.powersgd.min_compression_rate)),
    bool_param("warm_start", "keep Q from the previous step", LGRECO_SET(s.powersgd.warm_start = as_bool(v)),
               LGRECO_GET(s.powersgd.warm_start)),
    choice_param("orthogonalization", "orthogonalisation of P: auto = Gram-Schmidt for r_eff <= 2, else QR", kOrthNames,
                 LGRECO_SET(s.powersgd.orthogonalization = enum_of<Orthogonalization>(kOrthNames, v)),
                 LGRECO_GET(name_of(kOrthNames, s.powersgd.orthogonalization))),
    int_param("seed", "seed of the first Q", 0, kI64Max, LGRECO_SET(s.powersgd.seed = static_cast<std::uint64_t>(as_int(v))),
              LGRECO_GET(static_cast<std::int64_t>(s.powersgd.seed))),
};

constexpr std::array<ParamInfo, 5> kTopkParams{
    real_param("density", "fraction of entries sent: k = max(1, ceil(density·N))", 0.0, true, 1.0, false,
               LGRECO_SET(s.topk.density = as_real(v)), LGRECO_GET(s.topk.density)),
    choice_param("encoding", "index encoding: pairs, bitmap, delta (Elias-gamma gaps) or auto (cheaper of pairs and bitmap)",
                 kEncNames, LGRECO_SET(s.topk.encoding = enum_of<TopkEncoding>(kEncNames, v)),
                 LGRECO_GET(name_of(kEncNames, s.topk.encoding))),
    choice_param("selection", "exact radix select, or DGC's sampled threshold (at most k entries)", kSelNames,
                 LGRECO_SET(s.topk.selection = enum_of<TopkSelection>(kSelNames, v)),
                 LGRECO_GET(name_of(kSelNames, s.topk.selection))),
    real_param("momentum", "DGC momentum correction m (0 = plain error feedback; DGC uses 0.9)", 0.0, false, 1.0, true,
               LGRECO_SET(s.topk.momentum = as_real(v)), LGRECO_GET(s.topk.momentum)),
    int_param("warmup_steps", "DGC warm-up: steps per density stage (25 %, 6.25 %, ...); 0 = none", 0, kI64Max,
              LGRECO_SET(s.topk.warmup_steps = as_int(v)), LGRECO_GET(s.topk.warmup_steps)),
};

constexpr std::array<ParamInfo, 2> kRandomkParams{
    real_param("density", "fraction of entries sent (indices from the shared seed)", 0.0, true, 1.0, false,
               LGRECO_SET(s.randomk.density = as_real(v)), LGRECO_GET(s.randomk.density)),
    bool_param("scaled", "scale the kept values by N/k (unbiased)", LGRECO_SET(s.randomk.scaled = as_bool(v)),
               LGRECO_GET(s.randomk.scaled)),
};

constexpr ParamInfo qsgd_bits_alias() {
  ParamInfo p = int_param("bits", "code width b, the same as levels = 2^(b-1) - 1", 2, 16,
                          LGRECO_SET(s.qsgd.levels = static_cast<int>((std::int64_t{1} << (as_int(v) - 1)) - 1)), nullptr);
  p.alias_for = "levels";
  return p;
}

constexpr std::array<ParamInfo, 5> kQsgdParams{
    int_param("levels", "quantisation levels s per sign", 1, 32767, LGRECO_SET(s.qsgd.levels = static_cast<int>(as_int(v))),
              LGRECO_GET(std::int64_t{s.qsgd.levels})),
    int_param("bucket_size", "elements per norm", 1, kMaxBucket, LGRECO_SET(s.qsgd.bucket_size = static_cast<int>(as_int(v))),
              LGRECO_GET(std::int64_t{s.qsgd.bucket_size})),
    choice_param("norm", "bucket scale: l2 (QSGD) or max (QSGDinf)", kNormNames,
                 LGRECO_SET(s.qsgd.norm = enum_of<QsgdNorm>(kNormNames, v)), LGRECO_GET(name_of(kNormNames, s.qsgd.norm))),
    choice_param("encoding", "codes: fixed width, or Elias-gamma (packed into its worst-case length on the wire)", kQEncNames,
                 LGRECO_SET(s.qsgd.encoding = enum_of<QsgdEncoding>(kQEncNames, v)),
                 LGRECO_GET(name_of(kQEncNames, s.qsgd.encoding))),
    qsgd_bits_alias(),
};

constexpr std::array<ParamInfo, 3> kMaxMinParams{
    int_param("bits", "code width b (2^b levels between min and max)", 1, 8,
              LGRECO_SET(s.maxmin.bits = static_cast<int>(as_int(v))), LGRECO_GET(std::int64_t{s.maxmin.bits})),
    int_param("bucket_size", "elements per (unit, min) pair", 1, kMaxBucket,
              LGRECO_SET(s.maxmin.bucket_size = static_cast<int>(as_int(v))), LGRECO_GET(std::int64_t{s.maxmin.bucket_size})),
    choice_param("rounding", "stochastic (unbiased) or nearest", kRoundNames,
                 LGRECO_SET(s.maxmin.rounding = enum_of<Rounding>(kRoundNames, v)),
                 LGRECO_GET(name_of(kRoundNames, s.maxmin.rounding))),
};

constexpr std::array<ParamInfo, 1> kSignParams{
    int_param("bucket_size", "elements per scale (mean |x|)", 1, kMaxBucket,
              LGRECO_SET(s.sign.bucket_size = static_cast<int>(as_int(v))), LGRECO_GET(std::int64_t{s.sign.bucket_size})),
};

constexpr std::array<ParamInfo, 2> kNuqsgdParams{
    int_param("levels", "s: magnitude levels {0, 2^-s, ..., 1/2, 1}", 1, 30,
              LGRECO_SET(s.nuqsgd.levels = static_cast<int>(as_int(v))), LGRECO_GET(std::int64_t{s.nuqsgd.levels})),
    int_param("bucket_size", "elements per L2 norm", 1, kMaxBucket,
              LGRECO_SET(s.nuqsgd.bucket_size = static_cast<int>(as_int(v))), LGRECO_GET(std::int64_t{s.nuqsgd.bucket_size})),
};

#undef LGRECO_SET
#undef LGRECO_GET

constexpr std::array<MethodInfo, 11> kMethods{{
    {Method::kNone, "none", Collective::kAllreduce, "no compression (fp32 allreduce)", "4N", {}, ""},
    {Method::kFp16, "fp16", Collective::kAllreduce, "cast to float16", "2N", {}, ""},
    {Method::kBf16, "bf16", Collective::kAllreduce, "cast to bfloat16", "2N", {}, ""},
    {Method::kPowerSgd, "powersgd", Collective::kAllreduce, "PowerSGD low-rank P·Q^T (Vogels et al. 2019)",
     "compressed: q·4·r_eff·n (P, round 0) + q·4·r_eff·m (Q, round 1); else 4N", kPowerSgdParams, "rank"},
    {Method::kTopK, "topk", Collective::kAllgather, "top-k magnitudes with error feedback (DGC options)",
     "pairs 8k; bitmap ceil(N/8)+4k; delta 4k + ceil(G(N,k)/8), G the worst-case Elias-gamma length of k gaps",
     kTopkParams, "density"},
    {Method::kRandomK, "randomk", Collective::kAllreduce, "k random entries from a shared seed", "4k", kRandomkParams,
     "density"},
    {Method::kQsgd, "qsgd", Collective::kAllgather, "QSGD stochastic quantisation (Alistarh et al. 2017)",
     "ceil(N·w/8) + 4·ceil(N/bucket); w = ceil(log2(2s+1)) fixed, 2·floor(log2(s+1))+2 elias (worst case)", kQsgdParams,
     "levels"},
    {Method::kMaxMin, "maxmin", Collective::kAllgather, "max-min bucket quantisation (CGX)",
     "N < 16: 4N raw; else ceil(bits·N/8) + 8·ceil(N/bucket)", kMaxMinParams, "bits"},
    {Method::kSign, "sign", Collective::kAllgather, "EF-SignSGD with per-bucket scales", "ceil(N/8) + 4·ceil(N/bucket)",
     kSignParams, ""},
    {Method::kTernGrad, "terngrad", Collective::kAllgather, "TernGrad ternary levels", "ceil(2N/8) + 4", {}, ""},
    {Method::kNuqsgd, "nuqsgd", Collective::kAllgather, "NUQSGD exponential levels",
     "ceil(N·(1+ceil(log2(s+2)))/8) + 4·ceil(N/bucket)", kNuqsgdParams, "levels"},
}};

constexpr bool registry_in_enum_order() {
  for (std::size_t i = 0; i < kMethods.size(); ++i)
    if (static_cast<std::size_t>(kMethods[i].method) != i) return false;
  return true;
}
static_assert(registry_in_enum_order(), "kMethods must list the methods in the order of the Method enum");

std::string known_methods() {
  std::string s;
  for (const auto& m : kMethods) s += (s.empty() ? "" : ", ") + std::string(m.name);
  return s;
}

// The shortest text that reads back as exactly `d` ("0.1", "2", "1e+12").
std::string real_text(double d) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, d);
  return std::string(buf, r.ptr);
}

// Parses one value of a parameter; every error names the method, the key and the value.
class ValueReader {
 public:
  ValueReader(const MethodInfo& m, const ParamInfo& p, const std::string& text) : m_(m), p_(p), text_(text) {}

  ParamValue read() const {
    switch (p_.type) {
      case ParamType::kInt: return integer();
      case ParamType::kReal: return real();
      case ParamType::kBool: return boolean();
      case ParamType::kChoice: return choice();
    }
    fail("a value");
  }

 private:
  [[noreturn]] void fail(const std::string& expected) const {
    throw ConfigError("method '" + std::string(m_.name) + "': parameter '" + p_.name + "' = '" + printable(text_) + "': expected " + expected);
  }
  std::string int_range() const {
    return "an integer in [" + std::to_string(p_.int_min) + ", " + std::to_string(p_.int_max) + "]";
  }
  double number() const {
    std::istringstream is(text_);
    is.imbue(std::locale::classic());
    double d = 0;
    is >> d;
    if (!is || !is.eof() || text_.empty()) fail(p_.type == ParamType::kInt ? int_range() : "a number");
    return d;
  }
  ParamValue integer() const {
    std::int64_t v = 0;
    const char* b = text_.data();
    const char* e = b + text_.size();
    auto [ptr, ec] = std::from_chars(b, e, v);
    if (ec != std::errc() || ptr != e) {
      // JSON-style integral reals such as "4.0" (and 4e0) are integers too.
      // The bounds as doubles round to the nearest representable value: int_max = 2^63 - 1 becomes
      // 2^63, which is outside int64, so the upper test is exclusive of 2^63 itself (converting
      // 2^63 to int64 would be undefined); inside, the exact integer check below decides.
      const double d = number();
      if (!(std::floor(d) == d) || d < static_cast<double>(p_.int_min) || d > static_cast<double>(p_.int_max) ||
          d >= 9223372036854775808.0)
        fail(int_range());
      v = static_cast<std::int64_t>(d);
    }
    if (v < p_.int_min || v > p_.int_max) fail(int_range());
    return v;
  }
  ParamValue real() const {
    const double d = number();
    const bool below = p_.min_open ? d <= p_.real_min : d < p_.real_min;
    const bool above = p_.max_open ? d >= p_.real_max : d > p_.real_max;
    if (!std::isfinite(d) || below || above)
      fail(std::string("a number in ") + (p_.min_open ? "(" : "[") + real_text(p_.real_min) + ", " + real_text(p_.real_max) +
           (p_.max_open ? ")" : "]"));
    return d;
  }
  ParamValue boolean() const {
    if (text_ == "true" || text_ == "1") return true;
    if (text_ == "false" || text_ == "0") return false;
    fail("true or false");
  }
  ParamValue choice() const {
    std::string list;
    for (const char* c : p_.choices) {
      if (text_ == c) return text_;
      list += (list.empty() ? "'" : ", '") + std::string(c) + "'";
    }
    fail("one of " + list);
  }

  const MethodInfo& m_;
  const ParamInfo& p_;
  const std::string& text_;
};

}  // namespace

std::span<const MethodInfo> methods() { return kMethods; }

const MethodInfo& method_info(Method m) { return kMethods[static_cast<std::size_t>(m)]; }

const MethodInfo* find_method(std::string_view name) {
  for (const auto& m : kMethods)
    if (name == m.name) return &m;
  return nullptr;
}

const ParamInfo* find_param(const MethodInfo& m, std::string_view name) {
  for (const auto& p : m.params)
    if (name == p.name) return &p;
  return nullptr;
}

Method method_from_name(std::string_view name) {
  if (const MethodInfo* m = find_method(name)) return m->method;
  throw ConfigError("unknown compression method '" + printable(name) + "'; known: " + known_methods());
}

std::string method_name(Method m) { return method_info(m).name; }

Collective method_collective(Method m) { return method_info(m).collective; }

MethodSpec parse_method(std::string_view name, const ParamList& params) {
  MethodSpec s;
  s.method = method_from_name(name);
  const MethodInfo& info = method_info(s.method);
  std::set<std::string> seen;
  for (const auto& [key, value] : params) {
    if (!seen.insert(key).second) throw ConfigError("method '" + std::string(info.name) + "': parameter '" + printable(key) + "' given twice");
    const ParamInfo* p = find_param(info, key);
    if (!p) {
      std::string known;
      for (const auto& q : info.params) known += (known.empty() ? "" : ", ") + std::string(q.name);
      throw ConfigError("method '" + std::string(info.name) + "': unknown parameter '" + printable(key) + "'" +
                        (known.empty() ? " (this method has no parameters)" : "; known: " + known));
    }
    p->set(s, ValueReader(info, *p, value).read());
  }
  for (const auto& p : info.params) {
    if (p.alias_for && seen.count(p.name) && seen.count(p.alias_for))
      throw ConfigError("method '" + std::string(info.name) + "': give either '" + p.name + "' or '" + p.alias_for + "', not both");
  }
  return s;
}

MethodSpec parse_method_text(std::string_view text) {
  const auto colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  ParamList params;
  if (colon != std::string_view::npos) {
    const std::string_view rest = text.substr(colon + 1);
    std::size_t start = 0;
    while (true) {
      const auto comma = rest.find(',', start);
      const std::string_view kv = rest.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
      const auto eq = kv.find('=');
      if (eq == std::string_view::npos || eq == 0)
        throw ConfigError("method '" + printable(text) + "': expected key=value, got '" + printable(kv) + "'");
      params.emplace_back(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
  }
  return parse_method(name, params);
}

std::string value_text(const ParamValue& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return real_text(*d);
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  return std::get<std::string>(v);
}

ParamList resolved_params(const MethodSpec& s) {
  ParamList out;
  for (const auto& p : method_info(s.method).params) {
    if (p.get) out.emplace_back(p.name, value_text(p.get(s)));
  }
  return out;
}

std::string describe(const MethodSpec& s) {
  const MethodInfo& info = method_info(s.method);
  MethodSpec defaults;
  defaults.method = s.method;
  std::string out = info.name;
  for (const auto& p : info.params) {
    if (!p.get) continue;
    const ParamValue v = p.get(s);
    if (std::string_view(p.name) != info.planned_param && v == p.get(defaults)) continue;
    out += ' ';
    out += p.name;
    out += '=';
    out += value_text(v);
  }
  return out;
}

bool operator==(const MethodSpec& a, const MethodSpec& b) {
  if (a.method != b.method) return false;
  for (const auto& p : method_info(a.method).params) {
    if (p.get && p.get(a) != p.get(b)) return false;
  }
  return true;
}

std::string to_string(TopkEncoding e) { return kEncNames[static_cast<std::size_t>(e)]; }
std::string to_string(Orthogonalization o) { return kOrthNames[static_cast<std::size_t>(o)]; }

}  // namespace lgreco::kernels
