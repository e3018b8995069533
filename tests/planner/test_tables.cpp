// Candidate tables: strict reading, round trip, NaN/Inf naming; planning constraints and
// degenerate inputs through plan_window.
#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "planner/plan.hpp"
#include "planner/tables.hpp"
#include "sample_tables.hpp"

using namespace lgreco::planner;
using lgreco::Json;
using lgreco::planner::testing::sample_tables;


TEST_CASE("tables round-trip through JSON and reject unknown keys", "[tables]") {
  const Tables t = sample_tables();
  const Json j = tables_to_json(t);
  const Tables back = tables_from_json(j, "t.json");
  REQUIRE(tables_to_json(back) == j);
  Json bad = j;
  bad["windows"][0]["layers"][0]["candidates"][0]["colour"] = "red";
  REQUIRE_THROWS_WITH(tables_from_json(bad, "t.json"), Catch::Contains("unknown key 'colour'"));
  bad = j;
  bad["extra"] = 1;
  REQUIRE_THROWS_WITH(tables_from_json(bad, "t.json"), Catch::Contains("unknown key 'extra'"));
  bad = j;
  bad["windows"][0]["layers"][0]["candidates"][0]["params"]["rnak"] = 2;
  REQUIRE_THROWS_WITH(tables_from_json(bad, "t.json"), Catch::Contains("unknown parameter 'rnak'"));
  bad = j;
  bad["windows"][1]["start_step"] = 120;
  REQUIRE_THROWS_WITH(tables_from_json(bad, "t.json"), Catch::Contains("overlap"));
}

TEST_CASE("NaN and Infinity errors are rejected naming window, layer and candidate", "[tables]") {
  std::string text = tables_to_json(sample_tables()).dump();
  // Python's json module writes bare NaN / Infinity; put one into window 1, fc1.weight, candidate 2.
  Json j = tables_to_json(sample_tables());
  j["windows"][1]["layers"][1]["candidates"][2]["error"] = "@@";
  text = j.dump();
  for (const std::string tok : {"NaN", "Infinity", "-Infinity"}) {
    std::string t = text;
    t.replace(t.find("\"@@\""), 4, tok);
    CAPTURE(tok);
    try {
      tables_from_text(t, "t.json");
      FAIL("accepted " + tok);
    } catch (const lgreco::InputError& e) {
      const std::string what = e.what();
      CHECK_THAT(what, Catch::Contains("window 1") && Catch::Contains("fc1.weight") && Catch::Contains("candidate 2") &&
                           Catch::Contains(tok));
    }
  }
  // Tokens inside strings (also after an escaped quote) are text, not numbers: a model named
  // 'NaN "Infinity" -Infinity' reads back unchanged.
  {
    Tables named = sample_tables();
    named.model = "NaN \"Infinity\" -Infinity \\";
    const Tables back = tables_from_text(tables_to_json(named).dump(), "t.json");
    CHECK(back.model == named.model);
    CHECK(back.windows.size() == named.windows.size());
  }
  // The same through the in-memory path.
  Tables t = sample_tables();
  t.windows[0].layers[0].candidates[3].error = std::numeric_limits<double>::infinity();
  REQUIRE_THROWS_WITH(validate_tables(t, "mem"), Catch::Contains("fc2.weight") && Catch::Contains("candidate 3"));
}

TEST_CASE("all-zero error table gives the uniform plan with a warning", "[plan]") {
  Tables t = sample_tables();
  for (auto& l : t.windows[0].layers) {
    for (auto& c : l.candidates) c.error = 0;
  }
  const WindowPlan p = plan_window(t.windows[0], PlanOptions{}, nullptr);
  CHECK(p.status == PlanStatus::kUniform);
  REQUIRE(p.warnings.size() == 1);
  CHECK_THAT(p.warnings[0], Catch::Contains("T = 0"));
  CHECK(p.choice == std::vector<int>{1, 1, 0});
}

TEST_CASE("infeasible budget gives status infeasible and the least-error plan", "[plan]") {
  const Tables t = sample_tables();
  for (Engine e : {Engine::kReference, Engine::kExact}) {
    PlanOptions o;
    o.engine = e;
    o.budget = {Budget::Kind::kError, 0.5};  // least possible error is 1 + 2 = 3
    const WindowPlan p = plan_window(t.windows[0], o, nullptr);
    CAPTURE(engine_name(e));
    CHECK(p.status == PlanStatus::kInfeasible);
    CHECK(p.choice == std::vector<int>{3, 3, 0});
    CHECK(!p.warnings.empty());
  }
}

TEST_CASE("alpha budget, pins, include/exclude and the PowerSGD rate rule", "[plan]") {
  const Tables t = sample_tables();
  const Window& w = t.windows[0];
  PlanOptions o;
  o.engine = Engine::kExact;
  // α = 1: T = Σ e(rank 2) = 3 + 6 = 9; all plans with Σ e ≤ 9 compared by bytes.
  WindowPlan p = plan_window(w, o, nullptr);
  CHECK(p.status == PlanStatus::kOptimal);
  CHECK(*p.error_budget == 9.0);
  CHECK(p.total_error <= 9.0);
  CHECK(p.total_bytes <= p.uniform_bytes);
  CHECK(p.uncompressed_bytes == 4.0 * (64 * 256 + 256 * 128 + 256));
  // Exclude fc1: it stays at its default (rank 2); fc2 gets T − e(fc1 default) = 9 − 6 = 3 → rank 2.
  o.exclude_re = "fc1";
  p = plan_window(w, o, nullptr);
  CHECK(p.role[1] == Role::kExcluded);
  CHECK(p.choice[1] == 1);
  CHECK(p.choice[0] == 1);
  o.exclude_re.reset();
  o.include_re = "^fc2";
  p = plan_window(w, o, nullptr);
  CHECK(p.role[1] == Role::kExcluded);
  o.include_re.reset();
  // Pin fc2 to rank 4 (error 1): fc1 may use up to 8 → rank 1 (error 8).
  o.pins = {{"fc2.weight", lgreco::kernels::parse_method_text("powersgd:rank=4")}};
  p = plan_window(w, o, nullptr);
  CHECK(p.role[0] == Role::kPinned);
  CHECK(p.choice == std::vector<int>{3, 0, 0});
  o.pins = {{"fc2.weight", lgreco::kernels::parse_method_text("none")}};
  p = plan_window(w, o, nullptr);
  CHECK(p.chosen[0].spec.method == lgreco::kernels::Method::kNone);
  CHECK(p.chosen[0].bytes == 4.0 * 64 * 256);
  o.pins = {{"fc2.weight", lgreco::kernels::parse_method_text("powersgd:rank=7")}};
  CHECK_THROWS_WITH(plan_window(w, o, nullptr), Catch::Contains("not among the layer's candidates"));
  o.pins = {{"nope", lgreco::kernels::parse_method_text("none")}};
  CHECK_THROWS_WITH(plan_window(w, o, nullptr), Catch::Contains("no such parameter"));
  o.pins.clear();
  // Rate 40: fc2 (64×256) compresses iff 320·r·40 < 16384 → r ≤ 1; ranks 3, 4 dropped (2 is the
  // default and stays).
  o.min_compression_rate = 40;
  o.budget = {Budget::Kind::kError, 100};
  p = plan_window(w, o, nullptr);
  CHECK(p.choice[0] == 0);
  o.min_compression_rate.reset();
  // Per-layer cap 2.5: fc2 may use ranks 3, 4 (errors 2, 1), fc1 only rank 4 (error 2).
  o.max_layer_error = 2.5;
  p = plan_window(w, o, nullptr);
  CHECK(p.choice[1] == 3);
  CHECK(p.role[1] == Role::kFixed);
  CHECK(p.choice[0] == 2);
}

TEST_CASE("candidate bytes and collectives are the registry's; files may omit them, never contradict them", "[tables]") {
  Tables t = sample_tables();
  Json doc = tables_to_json(t);
  // Omitted: filled from kernels/wire.hpp.
  for (auto& w : doc["windows"])
    for (auto& l : w["layers"])
      for (auto& c : l["candidates"]) {
        c.erase("bytes");
        c.erase("collective");
      }
  const Tables back = tables_from_json(doc, "omitted.json");
  CHECK(back.windows[1].layers[0].candidates[2].bytes == 4.0 * 3 * (64 + 256));
  CHECK(back.windows[1].layers[2].candidates[0].bytes == 4.0 * 256);
  // Given and wrong: refused, naming the file, window, layer, candidate and both figures.
  Json bad = tables_to_json(t);
  bad["windows"][1]["layers"][0]["candidates"][2]["bytes"] = 1234;
  REQUIRE_THROWS_WITH(tables_from_json(bad, "bad.json"), Catch::Contains("bad.json") && Catch::Contains("window 1") &&
                                                              Catch::Contains("fc2.weight") && Catch::Contains("candidate 2") &&
                                                              Catch::Contains("1234") && Catch::Contains("3840"));
  Json coll = tables_to_json(t);
  coll["windows"][0]["layers"][0]["candidates"][0]["collective"] = "allgather";
  REQUIRE_THROWS_WITH(tables_from_json(coll, "coll.json"), Catch::Contains("collective allgather") && Catch::Contains("allreduce"));
  // Every window lists the same shapes.
  Json shape = tables_to_json(t);
  shape["windows"][1]["layers"][0]["shape"] = {256, 64};
  REQUIRE_THROWS_WITH(tables_from_json(shape, "shape.json"), Catch::Contains("fc2.weight") && Catch::Contains("differs from window 0"));
}
