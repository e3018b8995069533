// Method specs: defaults of the shared table, parsing, errors, JSON round trip.
#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "kernels/method.hpp"
#include "kernels/method_json.hpp"

#include <algorithm>
#include <climits>
#include <set>

using namespace lgreco;
using namespace lgreco::kernels;

TEST_CASE("method defaults follow the shared parameter table", "[method]") {
  const MethodSpec p = parse_method("powersgd");
  CHECK(p.method == Method::kPowerSgd);
  CHECK(p.powersgd.rank == 4);
  CHECK(p.powersgd.power_iterations == 1);
  CHECK(p.powersgd.min_compression_rate == 2.0);
  CHECK(p.powersgd.warm_start);
  CHECK(p.powersgd.orthogonalization == Orthogonalization::kAuto);
  CHECK(p.powersgd.seed == 0);
  const MethodSpec t = parse_method("topk");
  CHECK(t.topk.density == 0.01);
  CHECK(t.topk.encoding == TopkEncoding::kAuto);
  CHECK(t.topk.selection == TopkSelection::kExact);
  CHECK(parse_method("randomk").randomk.density == 0.01);
  CHECK_FALSE(parse_method("randomk").randomk.scaled);
  const MethodSpec q = parse_method("qsgd");
  CHECK(q.qsgd.levels == 7);  // bits 4 ⇔ s = 2^3 − 1
  CHECK(q.qsgd.bucket_size == 512);
  CHECK(q.qsgd.norm == QsgdNorm::kL2);
  const MethodSpec m = parse_method("maxmin");
  CHECK(m.maxmin.bits == 4);
  CHECK(m.maxmin.bucket_size == 1024);
  CHECK(m.maxmin.rounding == Rounding::kStochastic);
  CHECK(parse_method("sign").sign.bucket_size == 1024);
  CHECK(parse_method("nuqsgd").nuqsgd.levels == 4);
  CHECK(parse_method("nuqsgd").nuqsgd.bucket_size == 512);
  for (const char* name : {"none", "fp16", "bf16", "terngrad"}) CHECK(resolved_params(parse_method(name)).empty());
}

TEST_CASE("method parameters are parsed and validated", "[method]") {
  CHECK(parse_method("qsgd", {{"bits", "8"}}).qsgd.levels == 127);
  CHECK(parse_method("qsgd", {{"bits", "2"}}).qsgd.levels == 1);
  CHECK(parse_method("qsgd", {{"levels", "3"}}).qsgd.levels == 3);
  CHECK(parse_method("powersgd", {{"rank", "2.0"}}).powersgd.rank == 2);
  CHECK(parse_method("powersgd", {{"orthogonalization", "qr"}}).powersgd.orthogonalization == Orthogonalization::kQr);
  CHECK(parse_method("maxmin", {{"rounding", "nearest"}, {"bits", "8"}}).maxmin.bits == 8);

  auto message_of = [](auto&& fn) {
    try {
      fn();
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string unknown = message_of([] { parse_method("topk", {{"densty", "0.1"}}); });
  CHECK_THAT(unknown, Catch::Contains("densty") && Catch::Contains("topk") && Catch::Contains("density"));
  CHECK_THAT(message_of([] { parse_method("maxmin", {{"bits", "9"}}); }), Catch::Contains("'9'") && Catch::Contains("[1, 8]"));
  CHECK_THAT(message_of([] { parse_method("topk", {{"density", "0"}}); }), Catch::Contains("density"));
  CHECK_THAT(message_of([] { parse_method("topk", {{"density", "1.5"}}); }), Catch::Contains("1.5"));
  CHECK_THAT(message_of([] { parse_method("qsgd", {{"bits", "4"}, {"levels", "7"}}); }), Catch::Contains("not both"));
  CHECK_THAT(message_of([] { parse_method("powersgd", {{"rank", "x"}}); }), Catch::Contains("rank"));
  CHECK_THAT(message_of([] { parse_method("powersgd", {{"rank", "1"}, {"rank", "2"}}); }), Catch::Contains("twice"));
  CHECK_THAT(message_of([] { parse_method("fp16", {{"bits", "8"}}); }), Catch::Contains("no parameters"));
  CHECK_THAT(message_of([] { parse_method("topq"); }), Catch::Contains("topq") && Catch::Contains("powersgd"));
  CHECK_THAT(message_of([] { parse_method("sign", {{"bucket_size", "0"}}); }), Catch::Contains("bucket_size"));
}

TEST_CASE("resolved parameters round-trip through parse and JSON", "[method]") {
  const std::vector<MethodSpec> specs = {
      parse_method("none"),
      parse_method("powersgd", {{"rank", "7"}, {"warm_start", "false"}, {"min_compression_rate", "1.5"}}),
      parse_method("topk", {{"density", "0.125"}, {"encoding", "delta"}, {"selection", "dgc"}}),
      parse_method("randomk", {{"scaled", "true"}}),
      parse_method("qsgd", {{"bits", "3"}, {"norm", "max"}, {"encoding", "elias"}}),
      parse_method("maxmin", {{"bits", "2"}, {"bucket_size", "64"}}),
      parse_method("nuqsgd", {{"levels", "6"}})};
  for (const MethodSpec& s : specs) {
    INFO(describe(s));
    CHECK(parse_method(method_name(s.method), resolved_params(s)) == s);
    const nlohmann::json j = method_to_json(s);
    CHECK(method_from_json(j) == s);
  }
  const nlohmann::json j = method_to_json(specs[1]);
  CHECK(j["params"]["rank"].is_number_integer());
  CHECK(j["params"]["warm_start"].is_boolean());
  CHECK(j["params"]["orthogonalization"] == "auto");
  CHECK_THROWS_AS(method_from_json(nlohmann::json{{"method", "topk"}, {"parms", nlohmann::json::object()}}), ConfigError);
  CHECK_THROWS_WITH(method_from_json(nlohmann::json{{"method", "topk"}, {"params", {{"density", nlohmann::json::array()}}}}, "sched.json: layers.fc"),
                    Catch::Contains("sched.json: layers.fc"));
}

TEST_CASE("registry: every parameter's default, range ends and choices parse as the table says", "[method][registry]") {
  std::set<std::string> names;
  for (const MethodInfo& m : methods()) {
    CAPTURE(m.name);
    CHECK(names.insert(m.name).second);
    CHECK(method_from_name(m.name) == m.method);
    CHECK(&method_info(m.method) == &m);
    MethodSpec defaults;
    defaults.method = m.method;
    CHECK(parse_method(m.name) == defaults);
    if (std::string(m.planned_param).size()) CHECK(find_param(m, m.planned_param) != nullptr);
    for (const ParamInfo& p : m.params) {
      CAPTURE(p.name);
      auto parses = [&](const std::string& v) {
        try {
          parse_method(m.name, {{p.name, v}});
          return true;
        } catch (const ConfigError&) {
          return false;
        }
      };
      if (p.get) CHECK(parse_method(m.name, {{p.name, value_text(p.get(defaults))}}) == defaults);
      switch (p.type) {
        case ParamType::kInt:
          CHECK(parses(std::to_string(p.int_min)));
          CHECK(parses(std::to_string(p.int_max)));
          if (p.int_min > INT64_MIN) CHECK_FALSE(parses(std::to_string(p.int_min - 1)));
          if (p.int_max < INT64_MAX) CHECK_FALSE(parses(std::to_string(p.int_max + 1)));
          // Past int64 as an integer and as a real (2^63 as a double is not an int64: refused
          // before any conversion); a JSON integer 2^63 arrives as the text below.
          CHECK_FALSE(parses("9223372036854775808"));
          CHECK_FALSE(parses("9.223372036854775807e18"));
          CHECK_FALSE(parses("1e300"));
          CHECK_FALSE(parses("-1e300"));
          CHECK_FALSE(parses("1.5"));
          break;
        case ParamType::kReal: {
          CHECK(parses(value_text(p.real_min)) == !p.min_open);
          CHECK(parses(value_text(p.real_max)) == !p.max_open);
          CHECK_FALSE(parses(value_text(p.real_max * 2 + 1)));
          CHECK_FALSE(parses("nan"));
          CHECK_FALSE(parses("inf"));
          break;
        }
        case ParamType::kBool:
          CHECK(parses("true"));
          CHECK(parses("false"));
          CHECK_FALSE(parses("yes"));
          break;
        case ParamType::kChoice:
          for (const char* c : p.choices) {
            const MethodSpec s = parse_method(m.name, {{p.name, c}});
            CHECK(value_text(p.get(s)) == c);
          }
          CHECK_FALSE(parses("no-such-choice"));
          break;
      }
      if (p.alias_for) {
        CHECK(p.get == nullptr);
        REQUIRE(find_param(m, p.alias_for) != nullptr);
        CHECK_FALSE([&] {
          try {
            parse_method(m.name, {{p.name, std::to_string(p.int_min)}, {p.alias_for, "1"}});
            return true;
          } catch (const ConfigError&) {
            return false;
          }
        }());
        // Resolved parameters never carry the alias.
        for (const auto& [k, v] : resolved_params(defaults)) CHECK(k != p.name);
      }
    }
  }
  CHECK(methods().size() == 11);
}

TEST_CASE("registry document: every method and parameter, alias values from the parser", "[method][registry]") {
  const nlohmann::json doc = registry_to_json();
  REQUIRE(doc["methods"].size() == methods().size());
  for (std::size_t i = 0; i < methods().size(); ++i) {
    const MethodInfo& m = methods()[i];
    const nlohmann::json& j = doc["methods"][i];
    CHECK(j["name"] == m.name);
    CHECK(j["collective"] == to_string(m.collective));
    CHECK(j["params"].size() == m.params.size());
  }
  const auto& qsgd = doc["methods"][static_cast<int>(Method::kQsgd)];
  const auto bits = std::find_if(qsgd["params"].begin(), qsgd["params"].end(), [](const auto& p) { return p["name"] == "bits"; });
  REQUIRE(bits != qsgd["params"].end());
  CHECK((*bits)["alias_for"] == "levels");
  CHECK((*bits)["alias_values"]["4"] == 7);
  CHECK((*bits)["alias_values"]["16"] == 32767);
}

TEST_CASE("describe shows the planned parameter and every non-default one", "[method]") {
  CHECK(describe(parse_method("powersgd")) == "powersgd rank=4");
  CHECK(describe(parse_method("powersgd", {{"rank", "2"}, {"power_iterations", "2"}})) == "powersgd rank=2 power_iterations=2");
  CHECK(describe(parse_method("qsgd", {{"bits", "8"}})) == "qsgd levels=127");
  CHECK(describe(parse_method("none")) == "none");
  CHECK(describe(parse_method_text("topk:density=0.1,encoding=pairs")) == "topk density=0.1 encoding=pairs");
}
