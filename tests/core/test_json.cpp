#include <catch2/catch.hpp>

#include "core/json_util.hpp"

using lgreco::Json;
using lgreco::JsonObject;

TEST_CASE("strict object reading names missing, mistyped and unknown keys") {
  const Json j = Json::parse(R"({"a": 1, "b": "x", "c": 2.5, "extra": true})");
  {
    JsonObject o(j, "cfg.json");
    CHECK(o.get<int>("a") == 1);
    CHECK(o.get<std::string>("b") == "x");
    CHECK(o.get<double>("c") == 2.5);
    CHECK_THROWS_WITH(o.finish(), Catch::Contains("cfg.json") && Catch::Contains("'extra'"));
  }
  {
    JsonObject o(j, "cfg.json");
    CHECK_THROWS_WITH(o.get<int>("b"), Catch::Contains("cfg.json.b") && Catch::Contains("\"x\""));
    CHECK_THROWS_WITH(o.get<int>("missing"), Catch::Contains("missing"));
    CHECK(o.get_or<int>("absent", 7) == 7);
    o.allow({"a", "c", "extra"});
    CHECK_NOTHROW(o.finish());
  }
  CHECK_THROWS_AS(JsonObject(Json::array(), "x"), lgreco::ConfigError);
}

TEST_CASE("malformed JSON text is a ConfigError naming its origin") {
  CHECK_THROWS_WITH(lgreco::parse_json_text("{\"a\": ", "plan.json"), Catch::Contains("plan.json") && Catch::Contains("malformed"));
}
