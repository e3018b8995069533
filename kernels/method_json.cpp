#include "kernels/method_json.hpp"

#include <cmath>
#include <sstream>

#include "core/error.hpp"
#include "core/text.hpp"
#include "core/json_util.hpp"

namespace lgreco::kernels {
namespace {

// The text form parse_method expects, from a JSON scalar.
std::string scalar_text(const nlohmann::json& v, const std::string& where) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return v.dump();
  if (v.is_number_float()) {
    std::ostringstream os;
    os.imbue(std::locale::classic());
    os.precision(17);
    os << v.get<double>();
    return os.str();
  }
  throw ConfigError(where + ": invalid value " + v.dump() + " (expected a number, boolean or string)");
}

// A resolved parameter as typed JSON: booleans, integers and reals become JSON numbers/booleans.
nlohmann::json typed(const std::string& text) {
  if (text == "true") return true;
  if (text == "false") return false;
  std::istringstream is(text);
  is.imbue(std::locale::classic());
  long long i = 0;
  if ((is >> i) && is.eof()) return i;
  std::istringstream ds(text);
  ds.imbue(std::locale::classic());
  double d = 0;
  if ((ds >> d) && ds.eof()) return d;
  return text;
}

}  // namespace

MethodSpec method_from_json(const nlohmann::json& j, const std::string& where) {
  JsonObject o(j, where);
  const auto name = o.get<std::string>("method");
  const MethodInfo* info = find_method(name);
  ParamList params;
  if (const nlohmann::json* p = o.find("params")) {
    if (!p->is_object()) throw ConfigError(where + ".params: expected an object, got " + p->dump());
    for (auto it = p->begin(); it != p->end(); ++it) {
      // JSON values carry their type: a number for int and real parameters, a boolean for bool,
      // a string for a choice (the text forms of the CLI are parsed by parse_method).
      const ParamInfo* pi = info ? find_param(*info, it.key()) : nullptr;
      const nlohmann::json& v = it.value();
      if (pi) {
        const bool ok = pi->type == ParamType::kBool     ? v.is_boolean()
                        : pi->type == ParamType::kChoice ? v.is_string()
                                                         : v.is_number();
        if (!ok) {
          const char* want = pi->type == ParamType::kBool ? "true or false" : pi->type == ParamType::kChoice ? "a string" : "a number";
          throw ConfigError(where + ": method '" + printable(name) + "': parameter '" + printable(it.key()) + "' = " + v.dump() + ": expected " + want);
        }
      }
      params.emplace_back(it.key(), scalar_text(v, where + ".params." + it.key()));
    }
  }
  o.finish();
  try {
    return parse_method(name, params);
  } catch (const ConfigError& e) {
    throw ConfigError(where + ": " + e.what());
  }
}

nlohmann::json method_to_json(const MethodSpec& spec) {
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [k, v] : resolved_params(spec)) params[k] = typed(v);
  return {{"method", method_name(spec.method)}, {"params", params}};
}

nlohmann::json registry_to_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const MethodInfo& m : methods()) {
    MethodSpec defaults;
    defaults.method = m.method;
    nlohmann::json params = nlohmann::json::array();
    for (const ParamInfo& p : m.params) {
      nlohmann::json j = {{"name", p.name}, {"meaning", p.meaning}};
      switch (p.type) {
        case ParamType::kInt:
          j["type"] = "int";
          j["min"] = p.int_min;
          j["max"] = p.int_max;
          break;
        case ParamType::kReal:
          j["type"] = "real";
          j["min"] = p.real_min;
          j["max"] = p.real_max;
          j["min_open"] = p.min_open;
          j["max_open"] = p.max_open;
          break;
        case ParamType::kBool: j["type"] = "bool"; break;
        case ParamType::kChoice:
          j["type"] = "choice";
          j["choices"] = std::vector<std::string>(p.choices.begin(), p.choices.end());
          break;
      }
      if (p.get) j["default"] = typed(value_text(p.get(defaults)));
      if (p.alias_for) {
        // The alias's meaning as data: every alias value and the target value it stands for.
        const ParamInfo* target = find_param(m, p.alias_for);
        nlohmann::json values = nlohmann::json::object();
        for (std::int64_t v = p.int_min; v <= p.int_max; ++v) {
          const MethodSpec s = parse_method(m.name, {{p.name, std::to_string(v)}});
          values[std::to_string(v)] = typed(value_text(target->get(s)));
        }
        j["alias_for"] = p.alias_for;
        j["alias_values"] = values;
      }
      params.push_back(j);
    }
    out.push_back({{"name", m.name}, {"collective", to_string(m.collective)}, {"summary", m.summary},
                   {"wire_formula", m.wire_formula}, {"planned_param", m.planned_param}, {"params", params}});
  }
  return {{"schema_version", 1}, {"kind", "lgreco-methods"}, {"methods", out}};
}

nlohmann::json wire_plan_to_json(const WirePlan& plan, Method method) {
  const WireSize& w = plan.size;
  nlohmann::json j = {{"bytes", w.bytes},
                      {"collective", to_string(w.collective)},
                      {"rounds", {w.allreduce_round_bytes[0], w.allreduce_round_bytes[1]}},
                      {"allgather_bytes", w.allgather_bytes}};
  if (method == Method::kTopK || method == Method::kRandomK) j["k"] = plan.k;
  if (method == Method::kTopK) j["encoding"] = to_string(plan.encoding);
  if (method == Method::kPowerSgd)
    j["view"] = {{"n", plan.view.n}, {"m", plan.view.m}, {"rank", plan.view.r_eff}, {"compressed", plan.view.compressed}};
  if (plan.code_bits > 0) j["code_bits"] = plan.code_bits;
  if (plan.raw) j["raw"] = true;
  return j;
}

nlohmann::json wire_stage_to_json(const WireStage& stage, Method method) {
  return {{"from_step", stage.from_step},
          {"to_step", stage.to_step ? nlohmann::json(*stage.to_step) : nlohmann::json(nullptr)},
          {"plan", wire_plan_to_json(stage.plan, method)}};
}

DeviceProfile profile_from_json(const nlohmann::json& j, const std::string& where) {
  JsonObject o(j, where);
  const auto version = o.get<int>("schema_version");
  if (version != 1) throw ConfigError(where + ".schema_version: " + std::to_string(version) + " unsupported (expected 1)");
  if (o.get<std::string>("kind") != "lgreco-device-profile")
    throw ConfigError(where + ".kind: expected \"lgreco-device-profile\"");
  DeviceProfile p;
  p.device = o.get<std::string>("device");
  p.estimate = o.get<bool>("estimate");
  p.peak_bandwidth_Bps = o.get<double>("peak_bandwidth_GBps") * 1e9;
  o.allow({"description", "derivation", "provenance"});
  const nlohmann::json& methods = o.require("methods");
  if (!methods.is_object()) throw ConfigError(where + ".methods: expected an object");
  for (auto it = methods.begin(); it != methods.end(); ++it) {
    const std::string w = where + ".methods." + it.key();
    if (!find_method(it.key())) {  // must be a known method
      try {
        method_from_name(it.key());
      } catch (const ConfigError& e) {
        throw ConfigError(w + ": " + e.what());
      }
    }
    JsonObject m(it.value(), w);
    MethodCost c;
    const auto field = [&](const char* key, bool zero_ok) {
      const double v = m.get<double>(key);
      if (!std::isfinite(v) || v < 0 || (!zero_ok && v == 0))
        throw ConfigError(w + "." + key + ": " + nlohmann::json(v).dump() + "; expected a number " + (zero_ok ? ">= 0" : "> 0"));
      return v;
    };
    c.overhead_s = field("overhead_us", true) * 1e-6;
    c.bytes_per_element = field("bytes_per_element", false);
    c.effective_bandwidth_Bps = field("effective_bandwidth_GBps", false) * 1e9;
    const double stated = m.get<double>("throughput_GBps") * 1e9;
    m.allow({"formula", "notes"});
    m.finish();
    if (std::fabs(stated - c.throughput_Bps()) > 0.01 * c.throughput_Bps())
      throw ConfigError(w + ".throughput_GBps: " + std::to_string(stated / 1e9) + " disagrees with 4·bandwidth/bytes = " +
                        std::to_string(c.throughput_Bps() / 1e9));
    p.methods[it.key()] = c;
  }
  o.finish();
  return p;
}

DeviceProfile load_profile(const std::string& path) { return profile_from_json(read_json_file(path), path); }

}  // namespace lgreco::kernels
