// `lgreco methods`: the method registry (kernels/method.hpp): every method, its collective, wire
// formula and parameters with type, default, range and meaning.
#include <iostream>

#include "core/json_util.hpp"
#include "kernels/method_json.hpp"
#include "tools/args.hpp"
#include "tools/command.hpp"

namespace lgreco::cli {
namespace {

std::string range_text(const Json& p) {
  const std::string type = p["type"].get<std::string>();
  if (type == "int") return "[" + p["min"].dump() + ", " + p["max"].dump() + "]";
  if (type == "real")
    return std::string(p["min_open"].get<bool>() ? "(" : "[") + p["min"].dump() + ", " + p["max"].dump() +
           (p["max_open"].get<bool>() ? ")" : "]");
  if (type == "choice") {
    std::string s;
    for (const auto& c : p["choices"]) s += (s.empty() ? "" : "|") + c.get<std::string>();
    return s;
  }
  return "true|false";
}

int run_methods(const std::vector<std::string>& args) {
  Format fmt = Format::kTable;
  ArgParser p("lgreco methods",
              "The compression methods lgreco knows (the one registry the planner, the simulator, the CLI and the Python\n"
              "package read): collective, bytes per worker per step, and every parameter with its type, default and range.");
  p.format(&fmt);
  if (!p.parse(args)) return 0;
  const Json doc = kernels::registry_to_json();
  if (fmt == Format::kJson) {
    std::cout << doc.dump(2) << "\n";
    return 0;
  }
  for (const auto& m : doc["methods"]) {
    std::cout << m["name"].get<std::string>() << " (" << m["collective"].get<std::string>() << "): " << m["summary"].get<std::string>()
              << "\n  bytes: " << m["wire_formula"].get<std::string>() << "\n";
    for (const auto& prm : m["params"]) {
      std::cout << "  " << prm["name"].get<std::string>() << " " << prm["type"].get<std::string>() << " " << range_text(prm);
      if (prm.contains("default")) std::cout << " default " << prm["default"].dump();
      if (prm.contains("alias_for")) std::cout << " (input alias of " << prm["alias_for"].get<std::string>() << ")";
      std::cout << ": " << prm["meaning"].get<std::string>() << "\n";
    }
  }
  return 0;
}

LGRECO_COMMAND("methods", "the compression methods, their parameters, ranges and wire sizes", run_methods);

}  // namespace
}  // namespace lgreco::cli
