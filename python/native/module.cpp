// lgreco._native: the registry, wire plans, candidate sets, candidate measurement and planner of
// lgreco for Python, as JSON text across the boundary (json.loads/json.dumps on the Python side;
// python/lgreco/native.py wraps it). Everything here calls the libraries `lgreco` runs: the
// planning functions are the ones `lgreco plan --tables` calls, on tables held in memory.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/int_math.hpp"
#include "core/json_util.hpp"
#include "core/provenance.hpp"
#include "kernels/method_json.hpp"
#include "kernels/wire.hpp"
#include "network_models/cost.hpp"
#include "pipeline/predict.hpp"
#include "pipeline/cluster.hpp"
#include "planner/plan.hpp"
#include "planner/plan_json.hpp"
#include "planner/schedule.hpp"
#include "planner/tables.hpp"
#include "sim/replay_candidates.hpp"
#include "sim/replay_measure.hpp"
#include "traces/reader.hpp"

namespace py = pybind11;
using lgreco::ConfigError;
using lgreco::Json;
using lgreco::JsonObject;
namespace planner = lgreco::planner;
namespace sim = lgreco::sim;
namespace kernels = lgreco::kernels;
namespace traces = lgreco::traces;

namespace {

kernels::MethodSpec spec_of(const std::string& method_json) {
  return kernels::method_from_json(lgreco::parse_json_text(method_json, "method"), "method");
}

// {"rank": 4, "min_compression_rate": 2} → the "key=value" pairs `--default` takes.
std::vector<std::pair<std::string, std::string>> default_pairs(const Json& j, const std::string& where) {
  if (!j.is_object()) throw ConfigError(where + ": expected an object {parameter: value}, got " + j.dump());
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [k, v] : j.items()) {
    if (v.is_string()) out.emplace_back(k, v.get<std::string>());
    else if (v.is_boolean() || v.is_number()) out.emplace_back(k, v.dump());
    else throw ConfigError(where + "." + k + ": " + v.dump() + "; expected a number, a boolean or a string");
  }
  return out;
}

sim::CandidateRanges ranges_of(const Json& j, const std::string& where) {
  sim::CandidateRanges r;
  if (j.is_null()) return r;
  JsonObject o(j, where);
  r.rank_low = o.get_or<double>("rank_low", r.rank_low);
  r.rank_high = o.get_or<double>("rank_high", r.rank_high);
  if (const auto n = o.get_optional<std::int64_t>("min_numel")) {
    if (*n < 0) throw ConfigError(o.child("min_numel") + ": " + std::to_string(*n) + "; expected >= 0");
    r.min_numel = static_cast<std::uint64_t>(*n);
  }
  o.finish();
  if (!(r.rank_low >= 0 && r.rank_low <= 1 && r.rank_high >= 1 && std::isfinite(r.rank_high))) {
    throw ConfigError(where + ": rank_low " + Json(r.rank_low).dump() + ", rank_high " + Json(r.rank_high).dump() +
                      "; expected 0 <= rank_low <= 1 <= rank_high");
  }
  return r;
}

// The collective-cost model the options name (what `lgreco plan --bandwidth|--topology` builds).
struct CostModel {
  std::unique_ptr<lgreco::net::RingCost> ring;
  std::optional<lgreco::pipeline::Cluster> cluster;
  const lgreco::net::CollectiveCost* get() const { return cluster ? cluster->cost.get() : ring.get(); }
};

CostModel make_cost(const planner::NetworkSpec& n, int world_size) {
  CostModel c;
  if (n.kind == planner::NetworkSpec::Kind::kRing) c.ring = std::make_unique<lgreco::net::RingCost>(n.latency_s, n.bandwidth_Bps, world_size);
  if (n.kind == planner::NetworkSpec::Kind::kTopology) {
    c.cluster = lgreco::pipeline::make_cluster(n.topology, std::nullopt, std::nullopt, std::nullopt, nullptr, "", n.nccl_env);
  }
  return c;
}

// The kernel-time charge `lgreco plan --topology` applies (pipeline::kernel_time_fn), by the same choice.
void apply_kernel_time(const planner::NetworkSpec& n, const CostModel& c, planner::PlanOptions& p) {
  if (!c.cluster) return;
  lgreco::pipeline::KernelTime k;
  if (!n.kernel_time_estimate) k.source = lgreco::pipeline::KernelTime::Source::kNone;
  p.kernel_time = lgreco::pipeline::kernel_time_fn(k, *c.cluster);
}

struct Options {
  Json doc;
  planner::PlanOptions plan;
  planner::NetworkSpec network;
};

Options options_of(const std::string& text, const std::string& origin) {
  Options o;
  o.doc = text.empty() ? Json::object() : lgreco::parse_json_text(text, origin);
  o.plan = planner::plan_options_from_json(o.doc, origin, &o.network);
  return o;
}

// The compute options a recorded plan config carries back (forward time, compute scale).
lgreco::pipeline::ComputeOptions compute_options_of(const Options& o) {
  lgreco::pipeline::ComputeOptions co;
  if (o.doc.contains("forward_time_s")) co.forward_s = o.plan.forward_s;
  if (const auto c = o.doc.find("compute"); c != o.doc.end() && c->is_object() && c->contains("recorded_scale")) {
    const Json& v = (*c)["recorded_scale"];
    if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
      throw ConfigError("plan options.compute.recorded_scale: " + v.dump() + "; expected a number > 0");
    co.recorded_scale = v.get<double>();
  }
  return co;
}

Json config_of(const Options& o, std::optional<std::int64_t> warmup) {
  Json config = planner::plan_options_to_json(o.plan, o.doc.value("network", Json(nullptr)));
  config["warmup_steps"] = warmup ? Json(*warmup) : Json(nullptr);
  return config;
}

planner::WindowPlan plan_one(const planner::Tables& t, std::size_t w, const Options& o, const CostModel& cost, const std::string& origin) {
  try {
    return planner::plan_window(t.windows.at(w), o.plan, cost.get());
  } catch (const ConfigError& e) {
    throw ConfigError(origin + ": window " + std::to_string(w) + ": " + e.what());
  }
}

Json provenance(const char* what) {
  Json p = lgreco::provenance_json({});
  p["producer"] = what;
  return p;
}

// Candidate tables growing one window at a time, with the plan of every window: an online job's
// re-plans, each exactly what `lgreco plan --tables` computes for that window.
class OnlinePlanner {
 public:
  OnlinePlanner(const std::string& header, const std::string& options) : options_(options_of(options, "online plan options")) {
    const Json h = lgreco::parse_json_text(header, "online tables header");
    JsonObject o(h, "online tables header");
    tables_.model = o.get<std::string>("model");
    tables_.world_size = o.get<int>("world_size");
    tables_.error_mode = o.get<std::string>("error_mode");
    tables_.acc_steps = o.get<int>("acc_steps");
    if (const Json* p = o.find("provenance")) tables_.provenance = *p;
    o.allow({"schema_version", "kind", "windows"});
    o.finish();
    header_ = h;
    header_["schema_version"] = 1;
    header_["kind"] = "lgreco-tables";
    cost_ = make_cost(options_.network, tables_.world_size);
    apply_kernel_time(options_.network, cost_, options_.plan);
    if (options_.plan.engine == planner::Engine::kTime && !cost_.get()) {
      throw ConfigError("online plan options.engine: 'time' needs a network (options.network: ring or nccl)");
    }
  }

  std::string add_window(const std::string& window) {
    const std::string origin = "online window " + std::to_string(tables_.windows.size());
    Json doc = header_;
    doc["windows"] = Json::array({lgreco::parse_json_text(window, origin)});
    planner::Tables one = planner::tables_from_json(doc, origin);
    tables_.windows.push_back(std::move(one.windows.at(0)));
    try {
      planner::validate_tables(tables_, "online tables");
      plans_.push_back(plan_one(tables_, tables_.windows.size() - 1, options_, cost_, "online tables"));
    } catch (...) {
      tables_.windows.pop_back();
      throw;
    }
    return planner::window_plan_to_json(tables_.windows.back(), plans_.back()).dump();
  }

  std::string schedule_json(std::optional<std::int64_t> warmup, std::uint64_t seed, const std::string& extra_config) const {
    if (plans_.empty()) throw ConfigError("online planner: no window planned yet (a schedule needs at least one)");
    Json config = config_of(options_, warmup);
    if (!extra_config.empty()) {
      const Json extra = lgreco::parse_json_text(extra_config, "extra config");
      if (!extra.is_object()) throw ConfigError("extra config: expected an object");
      for (const auto& [k, v] : extra.items()) config[k] = v;
    }
    const auto s = planner::build_schedule(tables_, plans_, planner::engine_name(options_.plan.engine), warmup, seed, config,
                                           provenance("lgreco._native.OnlinePlanner"));
    return planner::schedule_to_json(s).dump();
  }

  std::string tables_json() const { return planner::tables_to_json(tables_).dump(); }
  std::size_t windows() const { return tables_.windows.size(); }
  std::string options_json() const { return config_of(options_, std::nullopt).dump(); }

 private:
  Options options_;
  Json header_;
  planner::Tables tables_;
  std::vector<planner::WindowPlan> plans_;
  CostModel cost_;
};

}  // namespace

PYBIND11_MODULE(_native, m) {
  m.doc() = "lgreco's C++ registry, wire plans, candidate sets and measurement, and planner (the code the lgreco CLI runs)";
  py::register_exception<lgreco::Error>(m, "LgrecoError", PyExc_ValueError);

  m.def("registry_json", [] { return kernels::registry_to_json().dump(); },
        "The method registry document (what `lgreco methods --format json` prints).");
  m.def("method_json", [](const std::string& method) { return kernels::method_to_json(spec_of(method)).dump(); },
        "Validates {\"method\", \"params\"} (JSON text) and returns it with every parameter resolved.");
  m.def("describe", [](const std::string& method) { return kernels::describe(spec_of(method)); },
        "The short label of a method, e.g. 'powersgd rank=4'.");
  m.def(
      "wire_plan",
      [](const std::string& method, const std::vector<std::int64_t>& shape, std::optional<std::uint64_t> step) {
        const auto spec = spec_of(method);
        return kernels::wire_plan_to_json(kernels::wire_plan(spec, shape, step), spec.method).dump();
      },
      py::arg("method"), py::arg("shape"), py::arg("step") = py::none(),
      "The wire plan (JSON text) of a method on a tensor of `shape` at training step `step` (None: the steady state).");
  m.def(
      "wire_stages",
      [](const std::string& method, const std::vector<std::int64_t>& shape, std::uint64_t from_step,
         std::optional<std::uint64_t> to_step) {
        const auto spec = spec_of(method);
        Json out = Json::array();
        for (const auto& st : kernels::wire_stages(spec, shape, from_step, to_step)) out.push_back(kernels::wire_stage_to_json(st, spec.method));
        return out.dump();
      },
      py::arg("method"), py::arg("shape"), py::arg("from_step"), py::arg("to_step") = py::none(),
      "The stages of the wire plan over steps [from_step, to_step) (JSON text).");

  m.def("family_names", [] { return sim::family_names(); }, "Every method family `lgreco plan --family` takes.");
  m.def(
      "family_candidates",
      [](const std::string& family, const std::string& defaults, const std::vector<std::int64_t>& shape, const std::string& ranges) {
        const sim::Family f = sim::family_from_name(family);
        const Json d = defaults.empty() ? Json::object() : lgreco::parse_json_text(defaults, "family defaults");
        const auto fd = sim::parse_family_defaults(f, default_pairs(d, "family defaults"));
        const Json r = ranges.empty() ? Json(nullptr) : lgreco::parse_json_text(ranges, "candidate ranges");
        const auto set = sim::make_candidates(f, fd, shape, ranges_of(r, "candidate ranges"));
        Json cands = Json::array();
        for (const auto& c : set.candidates) cands.push_back(kernels::method_to_json(c));
        return Json{{"candidates", cands}, {"default_index", set.default_index}, {"planned", set.planned}}.dump();
      },
      py::arg("family"), py::arg("defaults"), py::arg("shape"), py::arg("ranges") = "",
      "The candidate set of a tensor (sim::make_candidates, what `lgreco plan --trace --family` measures): "
      "{\"candidates\": [{\"method\", \"params\"}], \"default_index\", \"planned\"} (JSON text). `defaults` is "
      "{parameter: value} as `--default` takes them; `ranges` {\"rank_low\", \"rank_high\", \"min_numel\"}.");
  m.def(
      "measure_candidates",
      [](py::array_t<float, py::array::c_style | py::array::forcecast> a, const std::vector<std::int64_t>& shape,
         const std::string& candidates, const std::string& error_mode, std::uint64_t seed, int iterations,
         std::uint64_t layer_index, std::uint64_t step, const std::string& name) {
        const std::string where = "layer '" + name + "'";
        const auto numel_opt = lgreco::shape_numel(shape);
        if (!numel_opt) throw ConfigError(where + ": shape " + Json(shape).dump() + " has a negative dimension or too many elements");
        const std::int64_t numel = *numel_opt;
        if (a.ndim() != 1 || a.shape(0) != numel) {
          throw ConfigError(where + ": matrix of " + std::to_string(a.size()) + " elements (" + std::to_string(a.ndim()) +
                            "-D), expected 1-D with the shape's " + std::to_string(numel));
        }
        const sim::ErrorMode mode = sim::error_mode_from_name(error_mode);
        if (mode == sim::ErrorMode::kTrajectory) throw ConfigError(where + ": error mode 'trajectory' needs a trace; expected power or exact");
        if (iterations < 1) throw ConfigError(where + ": measure iterations " + std::to_string(iterations) + "; expected >= 1");
        const Json cj = lgreco::parse_json_text(candidates, where + " candidates");
        if (!cj.is_array() || cj.empty()) throw ConfigError(where + ": candidates must be a non-empty array");
        std::vector<kernels::MethodSpec> specs;
        for (std::size_t i = 0; i < cj.size(); ++i) specs.push_back(kernels::method_from_json(cj[i], where + " candidates[" + std::to_string(i) + "]"));
        const float* data = a.data();
        Json out = Json::array();
        {
          py::gil_scoped_release release;
          sim::ReplayOptions opt;
          opt.mode = mode;
          opt.measure_iterations = iterations;
          opt.seed = seed;
          kernels::LayerContext ctx;
          ctx.name = name;
          ctx.index = layer_index;
          ctx.step = step;
          ctx.seed = seed;
          ctx.shape = shape;
          std::vector<float> scratch(static_cast<std::size_t>(numel));
          const auto measured = sim::measure_on_matrix(std::span<const float>(data, static_cast<std::size_t>(numel)), shape, specs, mode,
                                                       opt, ctx, scratch);
          for (const auto& c : measured) out.push_back(planner::candidate_to_json(planner::make_candidate(c.spec, shape, c.error)));
        }
        return out.dump();
      },
      py::arg("a"), py::arg("shape"), py::arg("candidates"), py::arg("error_mode"), py::arg("seed"), py::arg("iterations"),
      py::arg("layer_index"), py::arg("step"), py::arg("name"),
      "Every candidate measured on the matrix A (fp32, flattened in C order) as replay measures it "
      "(sim::measure_on_matrix; power or exact mode, seeded by (seed, step, layer_index)): the candidates in the "
      "tables' JSON form, {\"method\", \"params\", \"error\", \"bytes\", \"collective\"} (JSON text). Releases the GIL.");

  m.def(
      "check_trace", [](const std::string& path) { return traces::TraceReader(path).layers().size(); }, py::arg("path"),
      py::call_guard<py::gil_scoped_release>(),
      "Opens a trace with the C++ reader, which checks its structure (attributes, layer table, dataset shapes and "
      "types; what `lgreco trace info` checks); returns the number of layers, or raises LgrecoError naming the "
      "file and the dataset.");
  m.def(
      "check_tables", [](const std::string& path) { return planner::read_tables(path).windows.size(); }, py::arg("path"),
      py::call_guard<py::gil_scoped_release>(),
      "Reads a tables file (JSON or HDF5) with the C++ reader `lgreco plan --tables` uses, which checks all of it; "
      "returns the number of windows, or raises LgrecoError naming the file and the member.");
  m.def(
      "plan_options", [](const std::string& options) { return config_of(options_of(options, "plan options"), std::nullopt).dump(); },
      py::arg("options"), "Plan options (planner/plan_json.hpp) validated and resolved (JSON text).");
  m.def(
      "plan_window",
      [](const std::string& tables, std::size_t window, const std::string& options) {
        Options o = options_of(options, "plan options");
        planner::Tables t = planner::tables_from_text(tables, "tables");
        if (window >= t.windows.size()) {
          throw ConfigError("tables: window " + std::to_string(window) + " requested, the tables have " + std::to_string(t.windows.size()));
        }
        const CostModel cost = make_cost(o.network, t.world_size);
        apply_kernel_time(o.network, cost, o.plan);
        lgreco::pipeline::apply_compute_rule(t, o.plan, cost.get(), cost.cluster ? &cost.cluster->gpu : nullptr, compute_options_of(o), "tables");
        return planner::window_plan_to_json(t.windows[window], plan_one(t, window, o, cost, "tables")).dump();
      },
      py::arg("tables"), py::arg("window"), py::arg("options") = "", py::call_guard<py::gil_scoped_release>(),
      "The plan of one window of candidate tables (JSON text) under the plan options (planner::plan_window).");
  m.def(
      "plan_tables",
      [](const std::string& tables, const std::string& options, std::optional<std::int64_t> warmup, std::uint64_t seed) {
        Options o = options_of(options, "plan options");
        planner::Tables t = planner::tables_from_text(tables, "tables");
        const CostModel cost = make_cost(o.network, t.world_size);
        // The compute rule and the per-window plans of `lgreco plan --tables` (one function); a
        // recorded forward time and compute scale are read back from the options.
        apply_kernel_time(o.network, cost, o.plan);
        const lgreco::pipeline::ComputeOptions co = compute_options_of(o);
        const auto tp = lgreco::pipeline::plan_all_windows(t, o.plan, cost.get(), cost.cluster ? &cost.cluster->gpu : nullptr, co, "tables");
        Json config = config_of(o, warmup);
        if (tp.compute) {
          config["compute"] = lgreco::pipeline::compute_json(*tp.compute, co.recorded_scale);
          config["forward_time_s"] = o.plan.forward_s;
        }
        const auto s = planner::build_schedule(t, tp.plans, planner::engine_name(o.plan.engine), warmup, seed, config,
                                               provenance("lgreco._native.plan_tables"));
        return planner::schedule_to_json(s).dump();
      },
      py::arg("tables"), py::arg("options") = "", py::arg("warmup_steps") = py::none(), py::arg("seed") = 0,
      py::call_guard<py::gil_scoped_release>(),
      "The phased schedule of candidate tables (JSON text): every window planned and the schedule built as "
      "`lgreco plan --tables` does (plans may be infeasible: their status says so).");

  py::class_<OnlinePlanner>(m, "OnlinePlanner",
                            "Candidate tables growing one window at a time, each window planned when added (an online job).")
      .def(py::init<const std::string&, const std::string&>(), py::arg("header"), py::arg("options") = "",
           "`header`: the tables document without windows (model, world_size, error_mode, acc_steps); `options`: plan options.")
      .def("add_window", &OnlinePlanner::add_window, py::arg("window"), py::call_guard<py::gil_scoped_release>(),
           "Validates one window (tables JSON form) against the earlier ones, plans it; returns the plan (JSON text).")
      .def("schedule_json", &OnlinePlanner::schedule_json, py::arg("warmup_steps"), py::arg("seed") = 0, py::arg("extra_config") = "",
           py::call_guard<py::gil_scoped_release>(), "The phased schedule of every window so far (JSON text).")
      .def("tables_json", &OnlinePlanner::tables_json, "Every window so far as a tables document (JSON text).")
      .def("options_json", &OnlinePlanner::options_json, "The resolved plan options (JSON text).")
      .def_property_readonly("windows", &OnlinePlanner::windows, "Windows added so far.");
}
