#include "planner/plan_json.hpp"

#include <cmath>

#include "core/error.hpp"
#include "core/text.hpp"
#include "core/units.hpp"
#include "kernels/method_json.hpp"

namespace lgreco::planner {
namespace {

Json nullable(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

const char* budget_kind_name(Budget::Kind k) {
  switch (k) {
    case Budget::Kind::kAlpha: return "alpha";
    case Budget::Kind::kError: return "error";
    case Budget::Kind::kBytes: return "bytes";
    case Budget::Kind::kTime: return "time";
  }
  return "?";
}

Budget::Kind budget_kind(const std::string& name, const std::string& where) {
  if (name == "alpha") return Budget::Kind::kAlpha;
  if (name == "error") return Budget::Kind::kError;
  if (name == "bytes") return Budget::Kind::kBytes;
  if (name == "time") return Budget::Kind::kTime;
  throw ConfigError(where + ": " + quote_name(name) + "; expected alpha, error, bytes or time");
}

int positive_int(JsonObject& o, const std::string& key, int fallback) {
  const auto v = o.get_optional<std::int64_t>(key);
  if (!v) return fallback;
  if (*v < 1 || *v > 1'000'000'000) throw ConfigError(o.child(key) + ": " + std::to_string(*v) + "; expected an integer in [1, 1e9]");
  return static_cast<int>(*v);
}

std::optional<double> non_negative(JsonObject& o, const std::string& key) {
  const auto v = o.get_optional<double>(key);
  if (v && !(*v >= 0 && std::isfinite(*v))) throw ConfigError(o.child(key) + ": " + Json(*v).dump() + "; expected a finite number >= 0");
  return v;
}

void read_network(const Json& j, const std::string& where, NetworkSpec* out) {
  NetworkSpec n;
  if (!j.is_null()) {
    JsonObject o(j, where);
    const std::string model = o.get<std::string>("model");
    if (model == "ring") {
      n.kind = NetworkSpec::Kind::kRing;
      const double gbps = o.get<double>("bandwidth_Gbps");
      if (!(gbps > 0 && std::isfinite(gbps))) throw ConfigError(o.child("bandwidth_Gbps") + ": " + Json(gbps).dump() + "; expected a number > 0");
      n.bandwidth_Bps = units::gbps_to_Bps(gbps);
      const double us = o.get_or<double>("latency_us", units::s_to_us(n.latency_s));
      if (!(us >= 0 && std::isfinite(us))) throw ConfigError(o.child("latency_us") + ": " + Json(us).dump() + "; expected a number >= 0");
      n.latency_s = units::us_to_s(us);
    } else if (model == "nccl") {
      n.kind = NetworkSpec::Kind::kTopology;
      // A name or file, or the resolved description `lgreco plan --topology` records (its "name").
      const Json& t = o.require("topology");
      const Json* name = t.is_string() ? &t : (t.is_object() && t.contains("name") && t["name"].is_string()) ? &t["name"] : nullptr;
      if (!name) throw ConfigError(o.child("topology") + ": " + t.dump() + "; expected a topology name or file (a string)");
      if (t.is_object() && t.contains("network_fit") && !t["network_fit"].is_null()) {
        throw ConfigError(o.child("topology") + ".network_fit: " + t["network_fit"].dump() +
                          "; a calibrated network is not part of plan options (plan with `lgreco plan --network-fit`)");
      }
      n.topology = name->get<std::string>();
      if (t.is_object() && t.contains("nccl_env") && !t["nccl_env"].is_null()) {
        const std::string where_env = o.child("topology") + ".nccl_env";
        if (!t["nccl_env"].is_string()) throw ConfigError(where_env + ": " + t["nccl_env"].dump() + "; expected NCCL variables as a string or null");
        n.nccl_env = net::parse_nccl_env(t["nccl_env"].get<std::string>(), where_env);
      }
    } else {
      throw ConfigError(o.child("model") + ": " + quote_name(model) + "; expected ring or nccl");
    }
    o.finish();
  }
  if (out) *out = n;
}

}  // namespace

Json ring_network_json(double bandwidth_Bps, double latency_s) {
  return Json{{"model", "ring"}, {"bandwidth_Gbps", units::Bps_to_gbps(bandwidth_Bps)}, {"latency_us", units::s_to_us(latency_s)}};
}

PlanOptions plan_options_from_json(const Json& options, const std::string& origin, NetworkSpec* network) {
  PlanOptions p;
  JsonObject o(options, origin);
  if (const auto e = o.get_optional<std::string>("engine")) {
    try {
      p.engine = parse_engine(*e);
    } catch (const ConfigError& err) {
      throw ConfigError(o.child("engine") + ": " + err.what());
    }
  }
  if (const Json* b = o.find("budget"); b && !b->is_null()) {
    JsonObject bo(*b, o.child("budget"));
    p.budget.kind = budget_kind(bo.get<std::string>("kind"), bo.child("kind"));
    p.budget.value = bo.get<double>("value");
    if (const std::string why = budget_value_problem(p.budget); !why.empty()) {
      throw ConfigError(bo.child("value") + ": " + Json(p.budget.value).dump() + "; " + why);
    }
    bo.finish();
  }
  p.include_re = o.get_optional<std::string>("include");
  p.exclude_re = o.get_optional<std::string>("exclude");
  if (const auto rule = o.get_optional<std::string>("excluded_layers_stay_at"); rule && *rule != "default") {
    throw ConfigError(o.child("excluded_layers_stay_at") + ": '" + *rule + "'; excluded layers stay at their default (the only rule)");
  }
  if (const Json* pins = o.find("pins"); pins && !pins->is_null()) {
    if (!pins->is_object()) throw ConfigError(o.child("pins") + ": expected an object {parameter name: {\"method\", \"params\"}}");
    for (const auto& [name, m] : pins->items()) p.pins.emplace_back(name, kernels::method_from_json(m, o.child("pins") + "." + name));
  }
  p.min_compression_rate = o.get_optional<double>("min_compression_rate");
  if (p.min_compression_rate && !(*p.min_compression_rate > 0 && std::isfinite(*p.min_compression_rate))) {
    throw ConfigError(o.child("min_compression_rate") + ": " + Json(*p.min_compression_rate).dump() + "; expected a number > 0");
  }
  p.max_layer_error = non_negative(o, "max_layer_error");
  p.reference.buckets = positive_int(o, "reference_buckets", p.reference.buckets);
  p.time.grid = positive_int(o, "time_grid", p.time.grid);
  p.front.max_front = static_cast<std::size_t>(positive_int(o, "max_front", static_cast<int>(p.front.max_front)));
  if (const auto eps = non_negative(o, "epsilon")) p.front.epsilon = *eps;
  if (const auto fwd = non_negative(o, "forward_time_s")) p.forward_s = *fwd;
  NetworkSpec net;
  if (const Json* n = o.find("network")) read_network(*n, o.child("network"), &net);
  if (net.kind == NetworkSpec::Kind::kRing) p.bandwidth_Bps = net.bandwidth_Bps;
  if (network) *network = net;
  // `lgreco plan` records how kernel time entered its predictions: the memory-traffic estimate (the
  // default with a topology) or none; a profile is a file the CLI reads (`--kernel-profile`).
  if (const Json* k = o.find("kernel_time"); k && !k->is_null()) {
    const std::string src = k->is_object() && k->contains("source") && (*k)["source"].is_string() ? (*k)["source"].get<std::string>() : "";
    if (src == "none") {
      net.kernel_time_estimate = false;
    } else if (src != "memory-traffic estimate") {
      throw ConfigError(o.child("kernel_time") + ": " + k->dump() +
                        "; expected {\"source\": \"memory-traffic estimate\"} or {\"source\": \"none\"} (a profile is "
                        "`lgreco plan --kernel-profile`)");
    }
    if (network) *network = net;
  }
  // "compute" records the compute model a plan used; readers that predict step times recompute it
  // from the tables by pipeline/predict.hpp's rule (the native module reads its recorded_scale).
  o.allow({"warmup_steps", "kernel_time", "compute"});
  o.finish();
  return p;
}

Json plan_options_to_json(const PlanOptions& o, const Json& network_json) {
  Json pins = Json::object();
  for (const auto& [n, m] : o.pins) pins[n] = kernels::method_to_json(m);
  return Json{{"engine", engine_name(o.engine)},
              {"budget", {{"kind", budget_kind_name(o.budget.kind)}, {"value", o.budget.value}}},
              {"include", o.include_re ? Json(*o.include_re) : Json(nullptr)},
              {"exclude", o.exclude_re ? Json(*o.exclude_re) : Json(nullptr)},
              {"excluded_layers_stay_at", "default"},
              {"pins", pins},
              {"min_compression_rate", nullable(o.min_compression_rate)},
              {"max_layer_error", nullable(o.max_layer_error)},
              {"reference_buckets", o.reference.buckets},
              {"time_grid", o.time.grid},
              {"max_front", o.front.max_front},
              {"epsilon", o.front.epsilon},
              {"forward_time_s", o.forward_s},
              {"network", network_json}};
}

Json window_plan_to_json(const Window& w, const WindowPlan& p) {
  if (p.chosen.size() != w.layers.size()) {
    throw Error("plan of window [" + std::to_string(w.start_step) + ", " + std::to_string(w.end_step) + "): " +
                std::to_string(p.chosen.size()) + " settings for " + std::to_string(w.layers.size()) + " layers");
  }
  Json layers = Json::array();
  for (std::size_t i = 0; i < w.layers.size(); ++i) {
    const Candidate& c = p.chosen[i];
    Json lj = kernels::method_to_json(c.spec);
    lj["name"] = w.layers[i].name;
    lj["role"] = role_name(p.role[i]);
    lj["choice"] = p.choice[i];
    lj["error"] = c.error;
    lj["bytes"] = c.bytes;
    layers.push_back(std::move(lj));
  }
  return Json{{"start_step", w.start_step},
              {"end_step", w.end_step},
              {"status", status_name(p.status)},
              {"layers", std::move(layers)},
              {"total_error", p.total_error},
              {"total_bytes", p.total_bytes},
              {"uniform_error", p.uniform_error},
              {"uniform_bytes", p.uniform_bytes},
              {"uncompressed_bytes", p.uncompressed_bytes},
              {"error_budget", nullable(p.error_budget)},
              {"bytes_budget", nullable(p.bytes_budget)},
              {"gap_bound", p.gap_bound >= 0 ? Json(p.gap_bound) : Json(nullptr)},
              {"detail", p.detail},
              {"warnings", p.warnings},
              {"step_time_s", nullable(p.step_s)},
              {"uniform_step_time_s", nullable(p.uniform_step_s)},
              {"uncompressed_step_time_s", nullable(p.uncompressed_step_s)}};
}

}  // namespace lgreco::planner
