// Method specs: defaults of the shared table, parsing, errors, JSON round trip.
#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "kernels/method.hpp"
#include "kernels/method_json.hpp"

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
