#include "planner/schedule.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/error.hpp"
#include "core/text.hpp"
#include "core/int_math.hpp"
#include "kernels/method_json.hpp"
#include "kernels/wire.hpp"

namespace lgreco::planner {
namespace {

// Byte counts are whole numbers for every fixed-size method; write them as JSON integers then, so
// a reader sees 77528 rather than 77528.0. Data-dependent sizes (averages over steps) stay fractional.
Json bytes_json(double bytes) {
  if (bytes >= 0 && bytes < 9007199254740992.0 && bytes == std::floor(bytes)) return static_cast<std::int64_t>(bytes);
  return bytes;
}

Json nullable(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }
Json ratio(double num, double den) { return den > 0 ? Json(num / den) : Json(nullptr); }

// The registry's wire bytes of a setting on a layer (steady state).
double phase_bytes(const LayerTable& l, const kernels::MethodSpec& spec) {
  return static_cast<double>(kernels::wire_size(spec, l.shape).bytes);
}

std::string family_of(const Tables& t) {
  std::set<std::string> methods;
  for (const auto& l : t.windows[0].layers) {
    for (const auto& c : l.candidates) {
      if (c.spec.method != kernels::Method::kNone) methods.insert(kernels::method_name(c.spec.method));
    }
  }
  if (methods.empty()) return "none";
  return methods.size() == 1 ? *methods.begin() : "mixed";
}

}  // namespace

std::string params_text(const kernels::MethodSpec& m) {
  std::string out;
  for (const auto& [k, v] : kernels::resolved_params(m)) out += (out.empty() ? "" : ";") + k + "=" + v;
  return out;
}

Schedule build_schedule(const Tables& t, const std::vector<WindowPlan>& plans, const std::string& engine,
                        std::optional<std::int64_t> warmup_steps, std::uint64_t seed, Json config, Json provenance) {
  if (plans.size() != t.windows.size()) throw ConfigError("schedule: one plan per window expected");
  const auto& W = t.windows;
  const std::int64_t warm = warmup_steps.value_or(W[0].start_step);
  if (warm < 0 || warm >= W[0].end_step) {
    throw FieldError("warmup_steps", std::to_string(warm) + ": must be in [0, " + std::to_string(W[0].end_step) +
                     ") (the first window, measured at the uniform setting, ends at step " + std::to_string(W[0].end_step) + ")");
  }
  Schedule s;
  s.model = t.model;
  s.world_size = t.world_size;
  s.family = family_of(t);
  s.engine = engine;
  s.seed = seed;
  s.config = std::move(config);
  s.provenance = std::move(provenance);
  const auto& layers0 = W[0].layers;
  for (const auto& l : layers0) s.parameters.emplace_back(l.name, l.shape);
  double raw_bytes = 0;
  for (const auto& l : layers0) raw_bytes += 4.0 * static_cast<double>(l.numel);
  auto make_phase = [&](std::int64_t start, std::optional<std::int64_t> end, const std::string& label, const Window& w,
                        auto&& pick) {
    Phase p;
    p.start_step = start;
    p.end_step = end;
    p.label = label;
    double bytes = 0;
    for (std::size_t i = 0; i < w.layers.size(); ++i) {
      const Candidate c = pick(i);
      p.layers.emplace_back(w.layers[i].name, c.spec);
      bytes += phase_bytes(w.layers[i], c.spec);
    }
    p.predicted["bytes_per_step"] = bytes_json(bytes);
    p.predicted["compression_ratio"] = ratio(raw_bytes, bytes);
    return p;
  };
  if (warm > 0) {
    Phase p = make_phase(0, warm, "warmup", W[0], [&](std::size_t i) {
      return make_candidate(kernels::MethodSpec{}, layers0[i].shape, 0.0);
    });
    p.predicted["total_error"] = 0.0;
    p.predicted["status"] = "uniform";
    s.phases.push_back(std::move(p));
  }
  const WindowPlan& first = plans[0];
  {
    Phase p = make_phase(warm, W[0].end_step, "uniform", W[0],
                         [&](std::size_t i) { return layers0[i].candidates[layers0[i].default_index]; });
    p.predicted["total_error"] = first.uniform_error;
    p.predicted["step_time_s"] = nullable(first.uniform_step_s);
    p.predicted["status"] = "uniform";
    p.predicted["source_window"] = 0;
    s.phases.push_back(std::move(p));
  }
  for (std::size_t k = 0; k < W.size(); ++k) {
    const std::optional<std::int64_t> end = k + 1 < W.size() ? std::optional(W[k + 1].end_step) : std::nullopt;
    Phase p = make_phase(W[k].end_step, end, "plan-" + std::to_string(k), W[k], [&](std::size_t i) { return plans[k].chosen[i]; });
    p.predicted["total_error"] = plans[k].total_error;
    p.predicted["step_time_s"] = nullable(plans[k].step_s);
    p.predicted["status"] = status_name(plans[k].status);
    p.predicted["source_window"] = static_cast<int>(k);
    p.predicted["optimality_gap_bound"] = plans[k].gap_bound >= 0 ? Json(plans[k].gap_bound) : Json(nullptr);
    s.phases.push_back(std::move(p));
  }
  // Buckets in ascending index, parameters in backward order within each.
  std::map<int, std::vector<std::size_t>> by_bucket;
  for (std::size_t i = 0; i < layers0.size(); ++i) by_bucket[layers0[i].bucket].push_back(i);
  for (auto& [idx, members] : by_bucket) {
    std::stable_sort(members.begin(), members.end(), [&](std::size_t a, std::size_t b) { return layers0[a].backward_order < layers0[b].backward_order; });
    BucketInfo b;
    b.index = idx;
    for (std::size_t i : members) {
      b.params.push_back(layers0[i].name);
      b.numel.push_back(layers0[i].numel);
      b.size_bytes += 4 * layers0[i].numel;
    }
    s.buckets.push_back(std::move(b));
  }
  const WindowPlan& last = plans.back();
  const double bytes = s.phases.back().predicted["bytes_per_step"].get<double>();
  double uniform_bytes = 0;
  for (const auto& l : W.back().layers) uniform_bytes += phase_bytes(l, l.candidates[l.default_index].spec);
  s.predicted = {{"bytes_per_step", bytes_json(bytes)},
                 {"uniform_bytes_per_step", bytes_json(uniform_bytes)},
                 {"uncompressed_bytes_per_step", bytes_json(raw_bytes)},
                 {"compression_ratio", ratio(raw_bytes, bytes)},
                 {"uniform_compression_ratio", ratio(raw_bytes, uniform_bytes)},
                 {"compression_ratio_vs_uniform", ratio(uniform_bytes, bytes)},
                 {"total_error", last.total_error},
                 {"uniform_total_error", last.uniform_error},
                 {"error_budget", nullable(last.error_budget)},
                 {"step_time_s", nullable(last.step_s)},
                 {"uniform_step_time_s", nullable(last.uniform_step_s)},
                 {"uncompressed_step_time_s", nullable(last.uncompressed_step_s)},
                 {"status", status_name(last.status)},
                 {"optimality_gap_bound", last.gap_bound >= 0 ? Json(last.gap_bound) : Json(nullptr)},
                 {"engine_note", last.detail},
                 {"warnings", Json::array()}};
  for (std::size_t k = 0; k < plans.size(); ++k) {
    for (const auto& w : plans[k].warnings) s.predicted["warnings"].push_back("window " + std::to_string(k) + ": " + w);
  }
  return s;
}

Json wire_json(const Schedule& s, const Phase& p) {
  std::map<std::string, const std::vector<std::int64_t>*> shape_of;
  for (const auto& [name, shape] : s.parameters) shape_of[name] = &shape;
  Json out = Json::object();
  for (const auto& [name, m] : p.layers) {
    auto it = shape_of.find(name);
    if (it == shape_of.end()) throw ConfigError("schedule: phase '" + printable(p.label) + "' names parameter '" + printable(name) + "', which has no shape");
    const auto& shape = *it->second;
    Json w = kernels::wire_plan_to_json(kernels::wire_plan(m, shape), m.method);
    const auto to = p.end_step ? std::optional<std::uint64_t>(static_cast<std::uint64_t>(*p.end_step)) : std::nullopt;
    const auto stages = kernels::wire_stages(m, shape, static_cast<std::uint64_t>(p.start_step), to);
    const auto& method = m.method;  // a lambda may not capture the binding m before Clang 16
    const bool varies = std::any_of(stages.begin(), stages.end(), [&](const kernels::WireStage& st) {
      return kernels::wire_plan_to_json(st.plan, method) != w;
    });
    if (varies) {
      w["stages"] = Json::array();
      for (const auto& st : stages) w["stages"].push_back(kernels::wire_stage_to_json(st, m.method));
    }
    out[name] = std::move(w);
  }
  return out;
}

Json schedule_to_json(const Schedule& s) {
  const bool v2 = !s.parameters.empty();
  Json phases = Json::array();
  for (const Phase& p : s.phases) {
    Json layers = Json::object();
    for (const auto& [name, m] : p.layers) layers[name] = kernels::method_to_json(m);
    Json pj = {{"start_step", p.start_step}, {"end_step", p.end_step ? Json(*p.end_step) : Json(nullptr)},
               {"label", p.label}, {"layers", layers}, {"predicted", p.predicted}};
    if (v2) pj["wire"] = wire_json(s, p);
    phases.push_back(std::move(pj));
  }
  Json buckets = Json::array();
  for (const BucketInfo& b : s.buckets) {
    Json bj = {{"index", b.index}, {"params", b.params}, {"size_bytes", b.size_bytes}};
    if (!b.numel.empty()) bj["numel"] = b.numel;
    buckets.push_back(bj);
  }
  Json doc = {{"schema_version", v2 ? 2 : 1}, {"kind", "lgreco-schedule"}, {"model", s.model}, {"world_size", s.world_size},
              {"family", s.family}, {"engine", s.engine}, {"seed", s.seed}, {"phases", phases}, {"buckets", buckets},
              {"predicted", s.predicted}, {"config", s.config}, {"provenance", s.provenance}};
  if (v2) {
    Json params = Json::array();
    for (const auto& [name, shape] : s.parameters) params.push_back({{"name", name}, {"shape", shape}});
    doc["parameters"] = std::move(params);
  }
  return doc;
}

Schedule schedule_from_json(const Json& doc, const std::string& origin) {
  JsonObject o(doc, origin);
  const int version = o.get<int>("schema_version");
  if (version != 1 && version != 2) throw ConfigError(origin + ": schema_version " + std::to_string(version) + " is not supported (1 or 2)");
  if (o.get<std::string>("kind") != "lgreco-schedule") throw ConfigError(origin + ": kind must be 'lgreco-schedule'");
  Schedule s;
  s.model = o.get<std::string>("model");
  s.world_size = o.get<int>("world_size");
  s.family = o.get<std::string>("family");
  s.engine = o.get<std::string>("engine");
  s.seed = o.get<std::uint64_t>("seed");
  if (version == 2) {
    const Json& params = o.require("parameters");
    if (!params.is_array() || params.empty()) throw ConfigError(origin + ".parameters: expected a non-empty array");
    for (std::size_t i = 0; i < params.size(); ++i) {
      JsonObject po(params[i], origin + ": parameters[" + std::to_string(i) + "]");
      auto name = po.get<std::string>("name");
      auto shape = po.get<std::vector<std::int64_t>>("shape");
      if (!shape_numel(shape)) throw ConfigError(po.where() + ".shape: " + Json(shape).dump() + " is not a valid tensor shape");
      po.finish();
      s.parameters.emplace_back(std::move(name), std::move(shape));
    }
  }
  std::vector<const Json*> wires;
  const Json& phases = o.require("phases");
  if (!phases.is_array()) throw ConfigError(origin + ".phases: expected an array");
  for (std::size_t i = 0; i < phases.size(); ++i) {
    const std::string where = origin + ": phases[" + std::to_string(i) + "]";
    JsonObject po(phases[i], where);
    Phase p;
    p.start_step = po.get<std::int64_t>("start_step");
    p.end_step = po.get_optional<std::int64_t>("end_step");
    p.label = po.get<std::string>("label");
    const Json& layers = po.require("layers");
    if (!layers.is_object()) throw ConfigError(where + ".layers: expected an object");
    for (auto it = layers.begin(); it != layers.end(); ++it) {
      const std::string lw = where + ".layers['" + it.key() + "']";
      JsonObject lo(it.value(), lw);
      lo.allow({"method", "params"});
      lo.finish();
      p.layers.emplace_back(it.key(), kernels::method_from_json(it.value(), lw));
    }
    wires.push_back(version == 2 ? po.find("wire") : nullptr);
    p.predicted = po.require("predicted");
    if (!p.predicted.is_object() || !p.predicted.contains("bytes_per_step") || !p.predicted["bytes_per_step"].is_number()) {
      throw ConfigError(where + ".predicted: expected an object with a number bytes_per_step");
    }
    po.finish();
    s.phases.push_back(std::move(p));
  }
  const Json& buckets = o.require("buckets");
  if (!buckets.is_array()) throw ConfigError(origin + ".buckets: expected an array");
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    JsonObject bo(buckets[i], origin + ": buckets[" + std::to_string(i) + "]");
    BucketInfo b;
    b.index = bo.get<int>("index");
    b.params = bo.get<std::vector<std::string>>("params");
    b.size_bytes = bo.get<std::int64_t>("size_bytes");
    b.numel = bo.get_or<std::vector<std::int64_t>>("numel", {});
    if (!b.numel.empty() && b.numel.size() != b.params.size()) throw ConfigError(bo.where() + ": numel and params differ in length");
    bo.finish();
    s.buckets.push_back(std::move(b));
  }
  s.predicted = o.require("predicted");
  s.config = o.require("config");
  s.provenance = o.require("provenance");
  o.finish();
  // Model order everywhere (JSON objects are unordered; format 2 lists the parameters in order).
  if (!s.parameters.empty()) {
    std::map<std::string, std::size_t> pos;
    for (std::size_t i = 0; i < s.parameters.size(); ++i) pos.emplace(s.parameters[i].first, i);
    for (auto& ph : s.phases) {
      std::stable_sort(ph.layers.begin(), ph.layers.end(), [&](const auto& a, const auto& b) {
        const auto pa = pos.find(a.first), pb = pos.find(b.first);
        return (pa == pos.end() ? pos.size() : pa->second) < (pb == pos.end() ? pos.size() : pb->second);
      });
    }
  }
  // A format-2 document's wire plans are what the hook will execute: they must be the registry's.
  // (A phase without wire plans, e.g. edited by hand, gets them from the registry when written.)
  std::set<std::string> known;
  for (const auto& [name, shape] : s.parameters) known.insert(name);
  for (std::size_t i = 0; i < s.phases.size() && version == 2; ++i) {
    if (!wires[i]) continue;
    Phase checked = s.phases[i];
    std::erase_if(checked.layers, [&](const auto& l) { return !known.count(l.first); });  // check_schedule reports them
    const Json expect = wire_json(s, checked);
    const Json& given = *wires[i];
    if (!given.is_object()) throw ConfigError(origin + ": phases[" + std::to_string(i) + "].wire: expected an object");
    for (auto it = expect.begin(); it != expect.end(); ++it) {
      if (given.contains(it.key()) && given[it.key()] != it.value())
        throw InputError(origin + ": phases[" + std::to_string(i) + "].wire['" + it.key() + "'] = " + given[it.key()].dump() +
                         " disagrees with the registry's " + it.value().dump() + " for its method (a setting edited by hand? "
                         "remove the phase's \"wire\" to take the registry's)");
    }
  }
  return s;
}

Schedule read_schedule(const std::string& path) { return schedule_from_json(read_json_file(path), path); }

}  // namespace lgreco::planner
