// `lgreco tables info|convert`: describe candidate tables (JSON or HDF5) and convert between the
// two forms (docs/tables-format.md).
#include <cstdio>
#include <iostream>
#include <map>
#include <set>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "kernels/method_json.hpp"
#include "planner/tables.hpp"
#include "tools/args.hpp"
#include "tools/command.hpp"

namespace lgreco::cli {
namespace {

using namespace lgreco::planner;

// Either form; the JSON form is read through core's bounded reader (no devices, size limit, depth
// limit) rather than an unbounded stream.
Tables read_input_tables(const std::string& path) {
  if (is_hdf5_file(path)) return read_tables_h5(path);
  return tables_from_text(read_text_file(path), path);
}

int run_tables_info(const std::vector<std::string>& args) {
  std::string path;
  Format fmt;
  ArgParser p("lgreco tables info",
              "Describe candidate tables (JSON or HDF5, read and checked completely): form, model, windows, layers,\n"
              "candidates and the methods they use. Exit 1 when the file is not valid tables.");
  p.positional("TABLES", &path, "tables file").format(&fmt);
  if (!p.parse(args)) return 0;
  const Tables t = read_input_tables(path);
  const std::string form = is_hdf5_file(path) ? "hdf5" : "json";
  std::size_t candidates = 0;
  std::map<std::string, std::size_t> per_method;
  std::set<std::string> settings;
  for (const Window& w : t.windows)
    for (const LayerTable& l : w.layers)
      for (const Candidate& c : l.candidates) {
        ++candidates;
        ++per_method[kernels::method_name(c.spec.method)];
        settings.insert(kernels::method_to_json(c.spec).dump());
      }
  const std::size_t layers = t.windows.front().layers.size();
  if (fmt == Format::kJson) {
    Json windows = Json::array();
    for (const Window& w : t.windows) windows.push_back({{"start_step", w.start_step}, {"end_step", w.end_step}});
    std::cout << Json{{"schema_version", 1}, {"kind", "lgreco-tables-info"}, {"file", path}, {"form", form},
                      {"model", t.model}, {"world_size", t.world_size}, {"error_mode", t.error_mode},
                      {"acc_steps", t.acc_steps}, {"layers", layers}, {"candidates", candidates},
                      {"settings", settings.size()}, {"candidates_per_method", per_method}, {"windows", windows}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::cout << path << ": " << form << " tables, model " << t.model << ", world size " << t.world_size << ", error mode "
            << t.error_mode << " (acc " << t.acc_steps << ")\n"
            << t.windows.size() << " windows, steps [" << t.windows.front().start_step << ", " << t.windows.back().end_step
            << "); " << layers << " layers; " << candidates << " candidates, " << settings.size() << " distinct settings\n";
  for (const auto& [m, n] : per_method) std::cout << "  " << m << ": " << n << " candidates\n";
  return 0;
}

int run_convert(const std::vector<std::string>& args) {
  std::string in, out;
  bool force = false;
  ArgParser p("lgreco tables convert",
              "Convert candidate tables between JSON and HDF5: the output's form follows its name (.h5 / .hdf5: HDF5,\n"
              "anything else: JSON). The input is read and checked completely first; the output is written to a\n"
              "temporary file and renamed.");
  p.positional("TABLES", &in, "input tables (JSON or HDF5)")
      .option("--output", &out, "FILE", "output file: .h5 / .hdf5 for HDF5, otherwise JSON", true, "-o")
      .flag("--force", &force, "overwrite an existing output file");
  if (!p.parse(args)) return 0;
  const Overwrite policy = force ? Overwrite::kAllow : Overwrite::kRefuse;
  refuse_output_over_inputs(out, {in});
  check_writable_destination(out, policy);
  const Tables t = read_input_tables(in);
  PendingTables pending(t, out, policy);
  pending.commit();
  std::cout << "wrote " << out << " (" << (wants_hdf5(out) ? "hdf5" : "json") << ", " << t.windows.size() << " windows)\n";
  return 0;
}

LGRECO_COMMAND("tables info", "describe candidate tables (JSON or HDF5)", run_tables_info);
LGRECO_COMMAND("tables convert", "convert candidate tables between JSON and HDF5", run_convert);

}  // namespace
}  // namespace lgreco::cli
