// Plan options as JSON (the form schedules record as "config", read back for online planning) and
// a window's plan as a document.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/error.hpp"
#include "kernels/method_json.hpp"
#include "planner/plan_json.hpp"
#include "sample_tables.hpp"

using namespace lgreco::planner;
using lgreco::ConfigError;
using lgreco::Json;
using lgreco::planner::testing::sample_tables;

TEST_CASE("empty plan options are lgreco plan's defaults", "[plan_json]") {
  NetworkSpec net;
  const PlanOptions o = plan_options_from_json(Json::object(), "opts", &net);
  const PlanOptions d;
  CHECK(o.engine == d.engine);
  CHECK(o.budget.kind == Budget::Kind::kAlpha);
  CHECK(o.budget.value == 1.0);
  CHECK(o.reference.buckets == d.reference.buckets);
  CHECK(o.time.grid == d.time.grid);
  CHECK(o.front.max_front == d.front.max_front);
  CHECK(!o.include_re);
  CHECK(net.kind == NetworkSpec::Kind::kNone);
}

TEST_CASE("plan options round-trip through their JSON form", "[plan_json]") {
  PlanOptions o;
  o.engine = Engine::kDual;
  o.budget = {Budget::Kind::kTime, 0.002};
  o.include_re = "fc";
  o.exclude_re = "bias$";
  o.pins.emplace_back("fc1.weight", lgreco::kernels::parse_method("powersgd", {{"rank", "3"}}));
  o.min_compression_rate = 1.5;
  o.max_layer_error = 7.25;
  o.reference.buckets = 123;
  o.time.grid = 45;
  o.front.max_front = 678;
  o.front.epsilon = 0.01;
  o.forward_s = 0.125;
  o.bandwidth_Bps = 1.25e9;
  const Json j = plan_options_to_json(o, ring_network_json(1.25e9, 7e-6));
  NetworkSpec net;
  const PlanOptions back = plan_options_from_json(j, "opts", &net);
  CHECK(plan_options_to_json(back, ring_network_json(net.bandwidth_Bps, net.latency_s)) == j);
  CHECK(net.kind == NetworkSpec::Kind::kRing);
  CHECK(net.bandwidth_Bps == Approx(1.25e9));
  CHECK(net.latency_s == Approx(7e-6));
  REQUIRE(back.bandwidth_Bps);
  CHECK(*back.bandwidth_Bps == Approx(1.25e9));
  REQUIRE(back.pins.size() == 1);
  CHECK(back.pins[0].second == o.pins[0].second);
}

TEST_CASE("plan options: unknown keys and bad values name the field", "[plan_json]") {
  auto message = [](const Json& j) {
    try {
      plan_options_from_json(j, "opts");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(message(Json{{"engin", "exact"}}), Catch::Contains("unknown key 'engin'"));
  CHECK_THAT(message(Json{{"engine", "greedy"}}), Catch::Contains("opts.engine") && Catch::Contains("greedy"));
  CHECK_THAT(message(Json{{"budget", {{"kind", "gamma"}, {"value", 1}}}}), Catch::Contains("opts.budget.kind"));
  CHECK_THAT(message(Json{{"budget", {{"kind", "alpha"}, {"value", -1}}}}), Catch::Contains("opts.budget.value"));
  CHECK_THAT(message(Json{{"budget", {{"kind", "alpha"}, {"value", 0}}}}), Catch::Contains("opts.budget.value") && Catch::Contains("> 0"));
  CHECK_THAT(message(Json{{"budget", {{"kind", "alpha"}, {"value", 2e6}}}}), Catch::Contains("opts.budget.value") && Catch::Contains("1e+06"));
  CHECK(message(Json{{"budget", {{"kind", "error"}, {"value", 0}}}}) == "no error");
  CHECK_THAT(message(Json{{"reference_buckets", 0}}), Catch::Contains("opts.reference_buckets"));
  CHECK_THAT(message(Json{{"network", {{"model", "mesh"}}}}), Catch::Contains("opts.network.model"));
  CHECK_THAT(message(Json{{"network", {{"model", "nccl"}, {"topology", 3}}}}), Catch::Contains("opts.network.topology"));
  CHECK_THAT(message(Json{{"excluded_layers_stay_at", "none"}}), Catch::Contains("excluded_layers_stay_at"));
  CHECK_THAT(message(Json{{"network", {{"model", "nccl"}, {"topology", {{"name", "x"}, {"network_fit", "fit.json"}}}}}}),
             Catch::Contains("network_fit"));
  // The topology description `lgreco plan --topology` records is read by its name.
  NetworkSpec net;
  plan_options_from_json(Json{{"network", {{"model", "nccl"}, {"topology", {{"name", "4x8xA100-1x25G"}, {"nodes", 4}}}}}}, "opts", &net);
  CHECK(net.kind == NetworkSpec::Kind::kTopology);
  CHECK(net.topology == "4x8xA100-1x25G");
  CHECK_FALSE(net.nccl_env.restricted());
  // ... with the job's NCCL restrictions it records (plan --nccl-env), which the in-job replanner honours.
  plan_options_from_json(Json{{"network", {{"model", "nccl"}, {"topology", {{"name", "2x8xH100-8x400G"}, {"nccl_env", "NCCL_ALGO=Ring"}}}}}},
                         "opts", &net);
  CHECK(net.nccl_env.text == "NCCL_ALGO=Ring");
  CHECK_FALSE(net.nccl_env.allows(lgreco::Collective::kAllreduce, lgreco::net::Algorithm::kTree, lgreco::net::Protocol::kSimple, 1e6));
  CHECK_THAT(message(Json{{"network", {{"model", "nccl"}, {"topology", {{"name", "x"}, {"nccl_env", "NCCL_ALGO=rign"}}}}}}),
             Catch::Contains("opts.network.topology.nccl_env") && Catch::Contains("rign"));
  CHECK_THAT(message(Json{{"network", {{"model", "nccl"}, {"topology", {{"name", "x"}, {"nccl_env", 7}}}}}}),
             Catch::Contains("opts.network.topology.nccl_env"));
}

TEST_CASE("one budget rule: alpha in (0, 1e6], other budgets >= 0, byte and time budgets with the dual engine only", "[plan_json]") {
  using K = Budget::Kind;
  CHECK(budget_problem({K::kAlpha, 1}, Engine::kReference).empty());
  CHECK(budget_problem({K::kAlpha, kMaxAlpha}, Engine::kExact).empty());
  CHECK_THAT(budget_problem({K::kAlpha, 0}, Engine::kReference), Catch::Contains("alpha 0") && Catch::Contains("> 0"));
  CHECK_THAT(budget_problem({K::kAlpha, 2 * kMaxAlpha}, Engine::kTime), Catch::Contains("at most 1e+06"));
  CHECK_THAT(budget_problem({K::kAlpha, std::nan("")}, Engine::kReference), Catch::Contains("alpha"));
  CHECK(budget_problem({K::kError, 0}, Engine::kReference).empty());
  CHECK_THAT(budget_problem({K::kError, -1}, Engine::kReference), Catch::Contains("error budget -1"));
  CHECK_THAT(budget_problem({K::kError, HUGE_VAL}, Engine::kReference), Catch::Contains("finite"));
  CHECK(budget_problem({K::kBytes, 0}, Engine::kDual).empty());
  CHECK_THAT(budget_problem({K::kBytes, 1024}, Engine::kReference), Catch::Contains("needs the dual engine"));
  CHECK_THAT(budget_problem({K::kTime, 1e-3}, Engine::kExact), Catch::Contains("needs the dual engine"));
  CHECK_THAT(budget_problem({K::kAlpha, 1}, Engine::kDual), Catch::Contains("dual engine needs a byte or time budget"));
  CHECK_THAT(budget_problem({K::kTime, -1}, Engine::kDual), Catch::Contains("time budget -1"));
}

TEST_CASE("a window's plan document lists every layer's chosen candidate and the totals", "[plan_json]") {
  const Tables t = sample_tables();
  PlanOptions o;
  o.engine = Engine::kExact;
  const WindowPlan p = plan_window(t.windows[0], o, nullptr);
  const Json j = window_plan_to_json(t.windows[0], p);
  REQUIRE(j["layers"].size() == t.windows[0].layers.size());
  double bytes = 0, error = 0;
  for (std::size_t i = 0; i < p.chosen.size(); ++i) {
    const Json& l = j["layers"][i];
    CHECK(l["name"] == t.windows[0].layers[i].name);
    CHECK(l["choice"] == p.choice[i]);
    CHECK(lgreco::kernels::method_from_json(Json{{"method", l["method"]}, {"params", l["params"]}}) == p.chosen[i].spec);
    bytes += l["bytes"].get<double>();
    error += l["error"].get<double>();
  }
  CHECK(j["total_bytes"].get<double>() == bytes);
  CHECK(j["total_error"].get<double>() == Approx(error));
  CHECK(j["status"] == status_name(p.status));
  CHECK(j["start_step"] == 100);
  CHECK(j["step_time_s"].is_null());
}
