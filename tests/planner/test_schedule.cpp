// Schedules: phases from windows, bytes per phase from the wire-byte formulas, round trip, semantic
// checks, diffs and exporters.
#include <catch2/catch.hpp>

#include <set>

#include "core/error.hpp"
#include "planner/export.hpp"
#include "planner/schedule.hpp"
#include "sample_tables.hpp"

using namespace lgreco::planner;
using lgreco::Json;
using lgreco::planner::testing::sample_tables;

namespace {

Schedule make_schedule(const Tables& t, std::optional<std::int64_t> warmup = std::nullopt) {
  PlanOptions o;
  o.engine = Engine::kExact;
  std::vector<WindowPlan> plans;
  for (const auto& w : t.windows) plans.push_back(plan_window(w, o, nullptr));
  return build_schedule(t, plans, "exact", warmup, 7, Json{{"engine", "exact"}}, Json::object());
}

}  // namespace

TEST_CASE("phases follow the windows: warm-up, uniform window, one plan per window", "[schedule]") {
  const Tables t = sample_tables();  // windows [100,150) and [150,200)
  const Schedule s = make_schedule(t);
  REQUIRE(s.phases.size() == 4);
  CHECK(s.phases[0].label == "warmup");
  CHECK(s.phases[0].start_step == 0);
  CHECK(*s.phases[0].end_step == 100);
  CHECK(s.phases[1].label == "uniform");
  CHECK(*s.phases[1].end_step == 150);
  CHECK(s.phases[2].label == "plan-0");
  CHECK(s.phases[2].start_step == 150);
  CHECK(*s.phases[2].end_step == 200);
  CHECK(s.phases[3].label == "plan-1");
  CHECK(!s.phases[3].end_step);
  CHECK(s.family == "powersgd");
  CHECK(check_schedule(s).empty());
  // Every parameter in every phase; bytes per phase from the contract's formulas.
  for (const Phase& p : s.phases) {
    REQUIRE(p.layers.size() == 3);
    double bytes = 0;
    for (const auto& [name, m] : p.layers) {
      const auto& l = *std::find_if(t.windows[0].layers.begin(), t.windows[0].layers.end(), [&](const LayerTable& x) { return x.name == name; });
      if (m.method == lgreco::kernels::Method::kNone) {
        bytes += 4.0 * l.numel;
      } else {
        const std::int64_t r = m.powersgd.rank, n = l.shape[0], mm = l.numel / n;
        bytes += (n + mm) * r * 2 < n * mm ? 4.0 * r * (n + mm) : 4.0 * l.numel;
      }
    }
    CAPTURE(p.label);
    CHECK(p.predicted["bytes_per_step"].get<double>() == bytes);
  }
  CHECK(s.predicted["uncompressed_bytes_per_step"].get<double>() == 4.0 * (64 * 256 + 256 * 128 + 256));
  // Warm-up override and its range.
  CHECK(make_schedule(t, 0).phases.front().label == "uniform");
  CHECK_THROWS_WITH(make_schedule(t, 150), Catch::Contains("warmup_steps 150"));
  CHECK_THROWS_AS(make_schedule(t, 150), lgreco::FieldError);
}

TEST_CASE("schedules round-trip and bad ones are caught", "[schedule]") {
  const Schedule s = make_schedule(sample_tables());
  const Json j = schedule_to_json(s);
  REQUIRE(schedule_to_json(schedule_from_json(j, "s.json")) == j);
  Json bad = j;
  bad["phases"][2]["layers"]["fc1.weight"]["params"]["rnak"] = 1;
  CHECK_THROWS_WITH(schedule_from_json(bad, "s.json"), Catch::Contains("rnak"));
  bad = j;
  bad["phases"][1]["colour"] = 1;
  CHECK_THROWS_WITH(schedule_from_json(bad, "s.json"), Catch::Contains("unknown key 'colour'"));
  Schedule t = s;
  t.phases[2].start_step = 120;  // overlaps the uniform phase [100, 150)
  auto issues = check_schedule(t);
  REQUIRE(!issues.empty());
  CHECK_THAT(issues[0], Catch::Contains("before the previous phase ends"));
  t = s;
  t.phases[1].layers.pop_back();
  issues = check_schedule(t);
  REQUIRE(issues.size() == 1);
  CHECK_THAT(issues[0], Catch::Contains("missing"));
  t = s;
  t.phases[1].end_step.reset();
  CHECK(!check_schedule(t).empty());
}

TEST_CASE("diff lists exactly the parameters whose setting changed", "[schedule]") {
  const Schedule s = make_schedule(sample_tables());
  const auto d = diff_phases(s.phases[0], s.phases[1]);  // warm-up (none) vs uniform (rank 2)
  std::set<std::string> names;
  for (const auto& c : d) names.insert(c.param);
  CHECK(names == std::set<std::string>{"fc1.weight", "fc2.weight"});
  CHECK(diff_phases(s.phases[2], s.phases[2]).empty());
}

TEST_CASE("exporters: csv rows, cgx refuses what CGX cannot run, maxmin bits", "[export]") {
  Schedule s = make_schedule(sample_tables());
  const std::string csv = export_csv(s);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 1 + 4 * 3);
  CHECK_THROWS_WITH(export_cgx(s, Json::object()), Catch::Contains("'fc2.weight'") && Catch::Contains("powersgd"));
  for (auto& p : s.phases) {
    for (auto& [name, m] : p.layers) {
      if (m.method != lgreco::kernels::Method::kNone) m = lgreco::kernels::parse_method_text("maxmin:bits=3,bucket_size=512");
    }
  }
  const Json cgx = export_cgx(s, Json::object());
  const Json& layer = cgx["phases"][2]["layers"];
  bool seen = false;
  for (const auto& l : layer) {
    if (l["name"] == "fc1.weight") {
      seen = true;
      CHECK(l["bits"] == 3);
      CHECK(l["bucket_size"] == 512);
      CHECK(l["numel"] == 256 * 128);
      CHECK(l["bucket"] == 0);
      CHECK(l["layer"] == 1);  // second in bucket 0 by backward order
    }
    if (l["name"] == "fc1.bias") CHECK(l["bits"] == 32);
  }
  CHECK(seen);
  CHECK(export_torch_hook(s)["kind"] == "lgreco-schedule");
}
