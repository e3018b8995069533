#include "planner/methods.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.hpp"

namespace lgreco::planner {
namespace {

enum class Type { kInt, kNumber, kBool, kString };

struct ParamDef {
  std::string name;
  Type type;
  Json fallback;                       // default value (null: no default, qsgd "levels")
  double lo = -1e300, hi = 1e300;      // numeric range (inclusive)
  std::vector<std::string> choices;    // allowed strings
};

const std::map<std::string, std::vector<ParamDef>>& defs() {
  static const std::map<std::string, std::vector<ParamDef>> d = {
      {"none", {}},
      {"fp16", {}},
      {"bf16", {}},
      {"powersgd",
       {{"rank", Type::kInt, 4, 0, 1e9, {}},
        {"power_iterations", Type::kInt, 1, 1, 1e6, {}},
        {"min_compression_rate", Type::kNumber, 2.0, 0, 1e300, {}},
        {"warm_start", Type::kBool, true, 0, 0, {}},
        {"orthogonalization", Type::kString, "auto", 0, 0, {"auto", "gram-schmidt", "qr"}},
        {"seed", Type::kInt, 0, 0, 1.8e19, {}}}},
      {"topk",
       {{"density", Type::kNumber, 0.01, 0, 1, {}},
        {"encoding", Type::kString, "auto", 0, 0, {"auto", "pairs", "bitmap", "delta"}},
        {"selection", Type::kString, "exact", 0, 0, {"exact", "dgc"}},
        {"momentum", Type::kNumber, 0.0, 0, 1, {}},
        {"warmup_steps", Type::kInt, 0, 0, 9.2e18, {}}}},
      {"randomk", {{"density", Type::kNumber, 0.01, 0, 1, {}}}},
      {"qsgd",
       {{"bits", Type::kInt, 4, 2, 32, {}},
        {"levels", Type::kInt, nullptr, 1, 2147483647, {}},
        {"bucket_size", Type::kInt, 512, 1, 2147483647, {}},
        {"norm", Type::kString, "l2", 0, 0, {"l2", "max"}}}},
      {"maxmin",
       {{"bits", Type::kInt, 4, 1, 8, {}},
        {"bucket_size", Type::kInt, 1024, 1, 2147483647, {}},
        {"rounding", Type::kString, "stochastic", 0, 0, {"stochastic", "nearest"}}}},
      {"sign", {{"bucket_size", Type::kInt, 1024, 1, 2147483647, {}}}},
      {"terngrad", {}},
      {"nuqsgd", {{"levels", Type::kInt, 4, 1, 2147483647, {}}, {"bucket_size", Type::kInt, 512, 1, 2147483647, {}}}},
  };
  return d;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
std::int64_t ceil_log2(std::int64_t x) {  // smallest c with 2^c >= x (x >= 1)
  std::int64_t c = 0;
  while ((std::int64_t{1} << c) < x) ++c;
  return c;
}

}  // namespace

const std::vector<std::string>& known_methods() {
  static const std::vector<std::string> names = {"none", "fp16", "bf16", "powersgd", "topk", "randomk",
                                                 "qsgd", "maxmin", "sign", "terngrad", "nuqsgd"};
  return names;
}

MethodSpec normalize_method(const std::string& method, const Json& params, const std::string& where) {
  auto it = defs().find(method);
  if (it == defs().end()) {
    std::string known;
    for (const auto& n : known_methods()) known += (known.empty() ? "" : ", ") + n;
    throw ConfigError(where + ": unknown method '" + method + "' (known: " + known + ")");
  }
  if (!params.is_null() && !params.is_object()) throw ConfigError(where + ".params: expected an object, got " + params.dump());
  MethodSpec out{method, Json::object()};
  const Json given = params.is_null() ? Json::object() : params;
  for (auto p = given.begin(); p != given.end(); ++p) {
    const auto& list = it->second;
    auto d = std::find_if(list.begin(), list.end(), [&](const ParamDef& x) { return x.name == p.key(); });
    if (d == list.end()) {
      std::string known;
      for (const auto& x : list) known += (known.empty() ? "" : ", ") + x.name;
      throw ConfigError(where + ": method '" + method + "' has no parameter '" + p.key() + "' (known: " +
                        (known.empty() ? "none" : known) + ")");
    }
    const Json& v = p.value();
    const auto bad = [&] { return where + ": " + method + " parameter '" + p.key() + "' = " + v.dump(); };
    switch (d->type) {
      case Type::kInt:
        if (!v.is_number_integer() && !(v.is_number_float() && std::floor(v.get<double>()) == v.get<double>())) throw ConfigError(bad() + ": expected an integer");
        break;
      case Type::kNumber:
        if (!v.is_number() || !std::isfinite(v.get<double>())) throw ConfigError(bad() + ": expected a finite number");
        break;
      case Type::kBool:
        if (!v.is_boolean()) throw ConfigError(bad() + ": expected true or false");
        break;
      case Type::kString:
        if (!v.is_string() || std::find(d->choices.begin(), d->choices.end(), v.get<std::string>()) == d->choices.end()) {
          std::string c;
          for (const auto& x : d->choices) c += (c.empty() ? "" : "|") + x;
          throw ConfigError(bad() + ": expected one of " + c);
        }
        break;
    }
    if (d->type == Type::kInt || d->type == Type::kNumber) {
      const double x = v.get<double>();
      if (method == "topk" && p.key() == "momentum" && !(x >= 0 && x < 1)) throw ConfigError(bad() + ": expected a number in [0, 1)");
      if (x < d->lo || x > d->hi) throw ConfigError(bad() + ": out of range [" + Json(d->lo).dump() + ", " + Json(d->hi).dump() + "]");
      if ((method == "topk" || method == "randomk") && p.key() == "density") {
        if (x <= 0) throw ConfigError(bad() + ": density must be in (0, 1]");
      }
    }
    out.params[p.key()] = d->type == Type::kInt ? Json(v.get<std::int64_t>()) : v;
  }
  for (const auto& d : it->second) {
    if (!out.params.contains(d.name) && !d.fallback.is_null()) out.params[d.name] = d.fallback;
  }
  if (method == "qsgd" && given.contains("levels")) {
    const std::int64_t s = out.params["levels"].get<std::int64_t>();
    if (given.contains("bits")) {
      const std::int64_t b = out.params["bits"].get<std::int64_t>();
      if ((std::int64_t{1} << (b - 1)) - 1 != s) {
        throw ConfigError(where + ": qsgd bits=" + std::to_string(b) + " and levels=" + std::to_string(s) + " disagree (levels = 2^(bits-1) - 1)");
      }
    } else {
      out.params.erase("bits");
    }
  }
  return out;
}

MethodSpec parse_method_text(const std::string& text, const std::string& where) {
  const auto colon = text.find(':');
  const std::string name = text.substr(0, colon);
  Json params = Json::object();
  if (colon != std::string::npos) {
    std::string rest = text.substr(colon + 1);
    std::size_t start = 0;
    while (start <= rest.size()) {
      auto comma = rest.find(',', start);
      const std::string kv = rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      const auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) throw ConfigError(where + ": expected key=value in '" + kv + "' of '" + text + "'");
      const std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
      Json v;
      try {
        v = Json::parse(value);
        if (!v.is_primitive() || v.is_null()) v = value;
      } catch (const std::exception&) {
        v = value;
      }
      params[key] = v;
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return normalize_method(name, params, where);
}

std::string method_label(const MethodSpec& spec) {
  const MethodSpec defaults = normalize_method(spec.method, Json::object(), "method");
  std::string out = spec.method;
  for (auto p = spec.params.begin(); p != spec.params.end(); ++p) {
    if (defaults.params.contains(p.key()) && defaults.params[p.key()] == p.value()) continue;
    out += " " + p.key() + "=" + (p.value().is_string() ? p.value().get<std::string>() : p.value().dump());
  }
  // The parameter a family is planned over is always shown, default or not.
  for (const char* key : {"rank", "density", "bits", "levels"}) {
    if (spec.params.contains(key) && defaults.params.contains(key) && defaults.params[key] == spec.params[key] &&
        !(spec.method == "nuqsgd" && std::string(key) == "levels")) {
      out += std::string(" ") + key + "=" + spec.params[key].dump();
    }
  }
  return out;
}

sim::Collective method_collective(const std::string& method) {
  if (method == "topk" || method == "qsgd" || method == "maxmin" || method == "sign" || method == "terngrad" ||
      method == "nuqsgd") {
    return sim::Collective::kAllgather;
  }
  return sim::Collective::kAllreduce;
}

std::int64_t shape_numel(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

bool powersgd_compressible(const std::vector<std::int64_t>& shape, std::int64_t rank, double min_rate) {
  const std::int64_t numel = shape_numel(shape);
  if (shape.empty() || shape[0] <= 0 || numel == 0) return false;
  const std::int64_t n = shape[0], m = numel / n;
  const std::int64_t r = std::min({n, m, rank});
  return static_cast<double>(n + m) * static_cast<double>(r) * min_rate < static_cast<double>(n) * static_cast<double>(m);
}

std::optional<std::array<double, 3>> wire_bytes_split(const MethodSpec& s, const std::vector<std::int64_t>& shape) {
  const std::int64_t N = shape_numel(shape);
  const auto& p = s.params;
  const auto num = [&](const char* k) { return p.at(k).get<double>(); };
  const auto integer = [&](const char* k) { return p.at(k).get<std::int64_t>(); };
  const double dn = static_cast<double>(N);
  if (s.method == "none") return std::array<double, 3>{4 * dn, 0, 0};
  if (s.method == "fp16" || s.method == "bf16") return std::array<double, 3>{2 * dn, 0, 0};
  if (s.method == "powersgd") {
    if (!powersgd_compressible(shape, integer("rank"), num("min_compression_rate"))) return std::array<double, 3>{4 * dn, 0, 0};
    const std::int64_t n = shape[0], m = N / n, r = std::min({n, m, integer("rank")});
    return std::array<double, 3>{4.0 * r * n, 4.0 * r * m, 0};
  }
  const auto k_of = [&](double density) {
    return N == 0 ? std::int64_t{0} : std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(density * dn)));
  };
  if (s.method == "topk") {
    const std::string enc = p.at("encoding").get<std::string>();
    if (enc == "delta") return std::nullopt;
    const std::int64_t k = k_of(num("density"));
    const double pairs = 8.0 * k, bitmap = static_cast<double>(ceil_div(N, 8) + 4 * k);
    const double bytes = enc == "pairs" ? pairs : enc == "bitmap" ? bitmap : std::min(pairs, bitmap);
    return std::array<double, 3>{0, 0, bytes};
  }
  if (s.method == "randomk") return std::array<double, 3>{4.0 * k_of(num("density")), 0, 0};
  if (s.method == "qsgd") {
    const std::int64_t lv = p.contains("levels") ? integer("levels") : (std::int64_t{1} << (integer("bits") - 1)) - 1;
    const std::int64_t bits = ceil_log2(2 * lv + 1);
    return std::array<double, 3>{0, 0, static_cast<double>(ceil_div(N * bits, 8) + 4 * ceil_div(N, integer("bucket_size")))};
  }
  if (s.method == "maxmin") {
    if (N < 16) return std::array<double, 3>{0, 0, 4 * dn};
    return std::array<double, 3>{0, 0, static_cast<double>(ceil_div(integer("bits") * N, 8) + 8 * ceil_div(N, integer("bucket_size")))};
  }
  if (s.method == "sign") return std::array<double, 3>{0, 0, static_cast<double>(ceil_div(N, 8) + 4 * ceil_div(N, integer("bucket_size")))};
  if (s.method == "terngrad") return std::array<double, 3>{0, 0, static_cast<double>(ceil_div(2 * N, 8) + 4)};
  if (s.method == "nuqsgd") {
    const std::int64_t bits = 1 + ceil_log2(integer("levels") + 2);
    return std::array<double, 3>{0, 0, static_cast<double>(ceil_div(N * bits, 8) + 4 * ceil_div(N, integer("bucket_size")))};
  }
  throw ConfigError("wire bytes: unknown method '" + s.method + "'");
}

std::optional<double> wire_bytes(const MethodSpec& spec, const std::vector<std::int64_t>& shape) {
  auto split = wire_bytes_split(spec, shape);
  if (!split) return std::nullopt;
  return (*split)[0] + (*split)[1] + (*split)[2];
}

}  // namespace lgreco::planner
