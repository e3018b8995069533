#include "kernels/method.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <set>
#include <sstream>

#include "core/error.hpp"

namespace lgreco::kernels {
namespace {

struct NamedMethod {
  const char* name;
  Method method;
};
constexpr std::array<NamedMethod, 11> kMethods{{{"none", Method::kNone},
                                                 {"fp16", Method::kFp16},
                                                 {"bf16", Method::kBf16},
                                                 {"powersgd", Method::kPowerSgd},
                                                 {"topk", Method::kTopK},
                                                 {"randomk", Method::kRandomK},
                                                 {"qsgd", Method::kQsgd},
                                                 {"maxmin", Method::kMaxMin},
                                                 {"sign", Method::kSign},
                                                 {"terngrad", Method::kTernGrad},
                                                 {"nuqsgd", Method::kNuqsgd}}};

std::string known_methods() {
  std::string s;
  for (const auto& m : kMethods) s += (s.empty() ? "" : ", ") + std::string(m.name);
  return s;
}

// Parses one parameter; every error names the method, the key and the value.
class ParamReader {
 public:
  ParamReader(std::string method, const std::string& key, const std::string& value)
      : method_(std::move(method)), key_(key), value_(value) {}

  [[noreturn]] void fail(const std::string& expected) const {
    throw ConfigError("method '" + method_ + "': parameter '" + key_ + "' = '" + value_ + "': expected " + expected);
  }

  std::int64_t integer(std::int64_t lo, std::int64_t hi) const {
    std::int64_t v = 0;
    const char* b = value_.data();
    const char* e = b + value_.size();
    auto [ptr, ec] = std::from_chars(b, e, v);
    if (ec != std::errc() || ptr != e) {
      // Accept JSON-style integral doubles such as "4.0".
      const double d = real_raw();
      if (!(std::floor(d) == d) || d < static_cast<double>(lo) || d > static_cast<double>(hi))
        fail("an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
      v = static_cast<std::int64_t>(d);
    }
    if (v < lo || v > hi) fail("an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return v;
  }

  double real_raw() const {
    std::istringstream is(value_);
    is.imbue(std::locale::classic());
    double d = 0;
    is >> d;
    if (!is || !is.eof() || value_.empty()) fail("a number");
    return d;
  }

  // lo_open: lo excluded.
  double real(double lo, double hi, bool lo_open) const {
    const double d = real_raw();
    if (!std::isfinite(d) || d > hi || (lo_open ? d <= lo : d < lo))
      fail(std::string("a number in ") + (lo_open ? "(" : "[") + to_text(lo) + ", " + to_text(hi) + "]");
    return d;
  }

  bool boolean() const {
    if (value_ == "true" || value_ == "1") return true;
    if (value_ == "false" || value_ == "0") return false;
    fail("true or false");
  }

  template <typename E, std::size_t K>
  E choice(const std::array<std::pair<const char*, E>, K>& options) const {
    std::string list;
    for (const auto& [name, e] : options) {
      if (value_ == name) return e;
      list += (list.empty() ? "" : ", ") + std::string("'") + name + "'";
    }
    fail("one of " + list);
  }

 private:
  static std::string to_text(double d) {
    std::ostringstream os;
    os.imbue(std::locale::classic());
    os << d;
    return os.str();
  }
  std::string method_, key_, value_;
};

constexpr std::array<std::pair<const char*, Orthogonalization>, 3> kOrth{
    {{"auto", Orthogonalization::kAuto}, {"gram-schmidt", Orthogonalization::kGramSchmidt}, {"qr", Orthogonalization::kQr}}};
constexpr std::array<std::pair<const char*, TopkEncoding>, 4> kEnc{{{"auto", TopkEncoding::kAuto},
                                                                    {"pairs", TopkEncoding::kPairs},
                                                                    {"bitmap", TopkEncoding::kBitmap},
                                                                    {"delta", TopkEncoding::kDelta}}};
constexpr std::array<std::pair<const char*, TopkSelection>, 2> kSel{
    {{"exact", TopkSelection::kExact}, {"dgc", TopkSelection::kDgc}}};
constexpr std::array<std::pair<const char*, QsgdNorm>, 2> kNorm{{{"l2", QsgdNorm::kL2}, {"max", QsgdNorm::kMax}}};
constexpr std::array<std::pair<const char*, QsgdEncoding>, 2> kQEnc{
    {{"fixed", QsgdEncoding::kFixed}, {"elias", QsgdEncoding::kElias}}};
constexpr std::array<std::pair<const char*, Rounding>, 2> kRound{
    {{"stochastic", Rounding::kStochastic}, {"nearest", Rounding::kNearest}}};

template <typename E, std::size_t K>
std::string name_of(const std::array<std::pair<const char*, E>, K>& options, E e) {
  for (const auto& [name, v] : options)
    if (v == e) return name;
  return "?";
}

constexpr std::int64_t kMaxBucket = std::int64_t{1} << 30;

std::string num(double d) {
  std::ostringstream os;
  os.imbue(std::locale::classic());
  os.precision(17);
  os << d;
  return os.str();
}

}  // namespace

Method method_from_name(std::string_view name) {
  for (const auto& m : kMethods)
    if (name == m.name) return m.method;
  throw ConfigError("unknown compression method '" + std::string(name) + "'; known: " + known_methods());
}

std::string method_name(Method m) {
  for (const auto& e : kMethods)
    if (e.method == m) return e.name;
  return "?";
}

MethodSpec parse_method(std::string_view name, const ParamList& params) {
  MethodSpec s;
  s.method = method_from_name(name);
  const std::string mname(name);
  std::set<std::string> seen;
  bool have_bits = false, have_levels = false;
  for (const auto& [key, value] : params) {
    if (!seen.insert(key).second) throw ConfigError("method '" + mname + "': parameter '" + key + "' given twice");
    const ParamReader r(mname, key, value);
    bool ok = true;
    switch (s.method) {
      case Method::kNone:
      case Method::kFp16:
      case Method::kBf16:
      case Method::kTernGrad:
        ok = false;
        break;
      case Method::kPowerSgd:
        if (key == "rank") s.powersgd.rank = static_cast<int>(r.integer(0, 1 << 20));
        else if (key == "power_iterations") s.powersgd.power_iterations = static_cast<int>(r.integer(1, 16));
        else if (key == "min_compression_rate") s.powersgd.min_compression_rate = r.real(0.0, 1e12, true);
        else if (key == "warm_start") s.powersgd.warm_start = r.boolean();
        else if (key == "orthogonalization") s.powersgd.orthogonalization = r.choice(kOrth);
        else if (key == "seed") s.powersgd.seed = static_cast<std::uint64_t>(r.integer(0, INT64_MAX));
        else ok = false;
        break;
      case Method::kTopK:
        if (key == "density") s.topk.density = r.real(0.0, 1.0, true);
        else if (key == "encoding") s.topk.encoding = r.choice(kEnc);
        else if (key == "selection") s.topk.selection = r.choice(kSel);
        else if (key == "momentum") {
          s.topk.momentum = r.real_raw();
          if (!(s.topk.momentum >= 0.0 && s.topk.momentum < 1.0))
            r.fail("a number in [0, 1) (0 = no momentum correction; DGC uses 0.9)");
        } else if (key == "warmup_steps") s.topk.warmup_steps = r.integer(0, INT64_MAX);
        else ok = false;
        break;
      case Method::kRandomK:
        if (key == "density") s.randomk.density = r.real(0.0, 1.0, true);
        else if (key == "scaled") s.randomk.scaled = r.boolean();
        else ok = false;
        break;
      case Method::kQsgd:
        if (key == "bits") {
          have_bits = true;
          s.qsgd.levels = static_cast<int>((std::int64_t{1} << (r.integer(2, 16) - 1)) - 1);
        } else if (key == "levels") {
          have_levels = true;
          s.qsgd.levels = static_cast<int>(r.integer(1, 32767));
        } else if (key == "bucket_size") s.qsgd.bucket_size = static_cast<int>(r.integer(1, kMaxBucket));
        else if (key == "norm") s.qsgd.norm = r.choice(kNorm);
        else if (key == "encoding") s.qsgd.encoding = r.choice(kQEnc);
        else ok = false;
        break;
      case Method::kMaxMin:
        if (key == "bits") s.maxmin.bits = static_cast<int>(r.integer(1, 8));
        else if (key == "bucket_size") s.maxmin.bucket_size = static_cast<int>(r.integer(1, kMaxBucket));
        else if (key == "rounding") s.maxmin.rounding = r.choice(kRound);
        else ok = false;
        break;
      case Method::kSign:
        if (key == "bucket_size") s.sign.bucket_size = static_cast<int>(r.integer(1, kMaxBucket));
        else ok = false;
        break;
      case Method::kNuqsgd:
        if (key == "levels") s.nuqsgd.levels = static_cast<int>(r.integer(1, 30));
        else if (key == "bucket_size") s.nuqsgd.bucket_size = static_cast<int>(r.integer(1, kMaxBucket));
        else ok = false;
        break;
    }
    if (!ok) {
      std::string known;
      MethodSpec defaults;
      defaults.method = s.method;
      for (const auto& [k, v] : resolved_params(defaults))
        known += (known.empty() ? "" : ", ") + k;
      if (s.method == Method::kQsgd) known += ", bits";
      throw ConfigError("method '" + mname + "': unknown parameter '" + key + "'" +
                        (known.empty() ? " (this method has no parameters)" : "; known: " + known));
    }
  }
  if (have_bits && have_levels)
    throw ConfigError("method 'qsgd': give either 'bits' or 'levels', not both");
  return s;
}

ParamList resolved_params(const MethodSpec& s) {
  switch (s.method) {
    case Method::kPowerSgd:
      return {{"rank", std::to_string(s.powersgd.rank)},
              {"power_iterations", std::to_string(s.powersgd.power_iterations)},
              {"min_compression_rate", num(s.powersgd.min_compression_rate)},
              {"warm_start", s.powersgd.warm_start ? "true" : "false"},
              {"orthogonalization", name_of(kOrth, s.powersgd.orthogonalization)},
              {"seed", std::to_string(s.powersgd.seed)}};
    case Method::kTopK:
      return {{"density", num(s.topk.density)},
              {"encoding", name_of(kEnc, s.topk.encoding)},
              {"selection", name_of(kSel, s.topk.selection)},
              {"momentum", num(s.topk.momentum)},
              {"warmup_steps", std::to_string(s.topk.warmup_steps)}};
    case Method::kRandomK:
      return {{"density", num(s.randomk.density)}, {"scaled", s.randomk.scaled ? "true" : "false"}};
    case Method::kQsgd:
      return {{"levels", std::to_string(s.qsgd.levels)},
              {"bucket_size", std::to_string(s.qsgd.bucket_size)},
              {"norm", name_of(kNorm, s.qsgd.norm)},
              {"encoding", name_of(kQEnc, s.qsgd.encoding)}};
    case Method::kMaxMin:
      return {{"bits", std::to_string(s.maxmin.bits)},
              {"bucket_size", std::to_string(s.maxmin.bucket_size)},
              {"rounding", name_of(kRound, s.maxmin.rounding)}};
    case Method::kSign:
      return {{"bucket_size", std::to_string(s.sign.bucket_size)}};
    case Method::kNuqsgd:
      return {{"levels", std::to_string(s.nuqsgd.levels)}, {"bucket_size", std::to_string(s.nuqsgd.bucket_size)}};
    default:
      return {};
  }
}

std::string describe(const MethodSpec& s) {
  std::string out = method_name(s.method);
  switch (s.method) {
    case Method::kPowerSgd: return out + "(rank=" + std::to_string(s.powersgd.rank) + ")";
    case Method::kTopK:
      return out + "(density=" + num(s.topk.density) + (s.topk.momentum > 0 ? ",momentum=" + num(s.topk.momentum) : "") +
             (s.topk.warmup_steps > 0 ? ",warmup_steps=" + std::to_string(s.topk.warmup_steps) : "") + ")";
    case Method::kRandomK: return out + "(density=" + num(s.randomk.density) + ")";
    case Method::kQsgd: return out + "(levels=" + std::to_string(s.qsgd.levels) + ")";
    case Method::kMaxMin: return out + "(bits=" + std::to_string(s.maxmin.bits) + ")";
    case Method::kSign: return out + "(bucket_size=" + std::to_string(s.sign.bucket_size) + ")";
    case Method::kNuqsgd: return out + "(levels=" + std::to_string(s.nuqsgd.levels) + ")";
    default: return out;
  }
}

bool operator==(const MethodSpec& a, const MethodSpec& b) {
  return a.method == b.method && resolved_params(a) == resolved_params(b);
}

std::string to_string(Collective c) { return c == Collective::kAllreduce ? "allreduce" : "allgather"; }
std::string to_string(TopkEncoding e) { return name_of(kEnc, e); }
std::string to_string(Orthogonalization o) { return name_of(kOrth, o); }

}  // namespace lgreco::kernels
