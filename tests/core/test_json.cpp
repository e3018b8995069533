#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>

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

namespace {
std::string nested(int depth) { return std::string(static_cast<std::size_t>(depth), '[') + std::string(static_cast<std::size_t>(depth), ']'); }
std::filesystem::path temp_file(const std::string& name, const std::string& content) {
  const auto p = std::filesystem::temp_directory_path() / ("lgreco_test_json_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(p, std::ios::binary) << content;
  return p;
}
}  // namespace

TEST_CASE("nesting is counted on the text, strings and escapes included") {
  CHECK(lgreco::json_nesting_depth("1").first == 0);
  CHECK(lgreco::json_nesting_depth(R"({"a": [1, {"b": []}]})").first == 4);
  // Brackets inside strings, also after an escaped quote, do not count.
  CHECK(lgreco::json_nesting_depth(R"(["[[[", "\"[[[", "\\"])").first == 1);
}

TEST_CASE("JSON nested deeper than the limit is refused before a tree is built") {
  const int limit = lgreco::kMaxJsonDepth;
  CHECK_NOTHROW(lgreco::parse_json_text(nested(limit), "ok.json"));
  CHECK_THROWS_WITH(lgreco::parse_json_text(nested(limit + 1), "deep.json"),
                    Catch::Contains("deep.json") && Catch::Contains("nested deeper than " + std::to_string(limit)));
  // 100,000 levels: far beyond any stack if a tree were built and copied.
  CHECK_THROWS_AS(lgreco::parse_json_text(nested(100000), "deeper.json"), lgreco::ConfigError);
}

TEST_CASE("numbers beyond a double, binary and HDF5 files are named, one line each") {
  CHECK_THROWS_WITH(lgreco::parse_json_text(R"({"a": 1e400})", "n.json"),
                    Catch::Contains("n.json") && Catch::Contains("1e400") && !Catch::Contains("json.exception"));
  const std::string hdf5("\x89HDF\r\n\x1a\n\0\0\0", 11);
  CHECK_THROWS_WITH(lgreco::parse_json_text(hdf5, "t.h5"), Catch::Equals("t.h5 is an HDF5 file, not JSON"));
  std::string user_block(512, ' ');
  CHECK_THROWS_WITH(lgreco::parse_json_text(user_block + hdf5, "u.h5"), Catch::Contains("HDF5 file"));
  CHECK_THROWS_WITH(lgreco::parse_json_text(std::string("{\"a\"\0}", 6), "b.bin"),
                    Catch::Contains("b.bin is a binary file") && Catch::Contains("offset 4"));
  // A parser message quoting a control character stays on one line.
  try {
    lgreco::parse_json_text("{\"a\": \x01}", "c.json");
    FAIL("no error");
  } catch (const lgreco::ConfigError& e) {
    CHECK(std::string(e.what()).find('\x01') == std::string::npos);
    CHECK(std::string(e.what()).find('\n') == std::string::npos);
  }
}

TEST_CASE("integer fields are range-checked for their type, also inside arrays") {
  const Json j = Json::parse(R"({"w": 4294967304, "neg": -1, "big": 18446744073709551615, "ok": 8,
                                  "v": [1, 4294967297], "f": [1, 2.5], "s": 9223372036854775807})");
  JsonObject o(j, "t.json");
  CHECK_THROWS_WITH(o.get<int>("w"), Catch::Contains("t.json.w") && Catch::Contains("4294967304") &&
                                         Catch::Contains("out of range") && Catch::Contains("2147483647"));
  CHECK_THROWS_WITH(o.get<std::uint64_t>("neg"), Catch::Contains("-1") && Catch::Contains("out of range"));
  CHECK_THROWS_WITH(o.get<std::int64_t>("big"), Catch::Contains("18446744073709551615"));
  CHECK(o.get<std::uint64_t>("big") == 18446744073709551615ull);
  CHECK(o.get<std::int64_t>("s") == INT64_MAX);
  CHECK(o.get<int>("ok") == 8);
  CHECK(o.get<std::vector<std::int64_t>>("v") == std::vector<std::int64_t>{1, 4294967297});
  CHECK_THROWS_WITH(o.get<std::vector<int>>("v"), Catch::Contains("element 1") && Catch::Contains("4294967297"));
  CHECK_THROWS_WITH(o.get<std::vector<std::int64_t>>("f"), Catch::Contains("element 1") && Catch::Contains("not an integer"));
}

TEST_CASE("an unknown key with a newline is reported on one line") {
  const Json j = Json::parse(R"({"a\nb": 1})");
  JsonObject o(j, "k.json");
  CHECK_THROWS_WITH(o.finish(), Catch::Contains("'a\\nb'"));
}

TEST_CASE("read_text_file refuses folders, devices and files beyond the limit") {
  CHECK_THROWS_WITH(lgreco::read_text_file("/nonexistent-lgreco/x.json"), Catch::Contains("cannot open"));
  CHECK_THROWS_WITH(lgreco::read_text_file("/tmp"), Catch::Contains("directory"));
  CHECK_THROWS_WITH(lgreco::read_text_file("/dev/zero"), Catch::Contains("/dev/zero") && Catch::Contains("not a regular file"));
  const auto p = temp_file("size.json", std::string(100, ' '));
  CHECK(lgreco::read_text_file(p, 100).size() == 100);
  CHECK_THROWS_WITH(lgreco::read_text_file(p, 99), Catch::Contains("larger than"));
  std::filesystem::remove(p);
}
