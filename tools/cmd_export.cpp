// `lgreco export`: a schedule in the form another system consumes (torch-hook, cgx, csv).
#include <iostream>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/provenance.hpp"
#include "planner/export.hpp"
#include "tools/args.hpp"
#include "tools/command.hpp"

namespace lgreco::cli {
namespace {

using namespace lgreco::planner;

int run_export(const std::vector<std::string>& args) {
  std::string path, to, out;
  bool force = false;
  ArgParser p("lgreco export",
              "Export a schedule. torch-hook: the normalised schedule the Python ScheduleHook reads; cgx: per-layer bits for\n"
              "torch_cgx register_layer(bucket, layer, numel, bits, bucket_size) (only maxmin and none); csv: one row per\n"
              "(phase, parameter). Writes to stdout unless -o is given.");
  p.positional("SCHEDULE", &path, "schedule JSON")
      .option("--to", &to, "torch-hook|cgx|csv", "target format", true)
      .option("--output", &out, "FILE", "output file", false, "-o")
      .flag("--force", &force, "overwrite an existing output file");
  if (!p.parse(args)) return 0;
  if (to != "torch-hook" && to != "cgx" && to != "csv") throw UsageError("--to '" + to + "': expected torch-hook, cgx or csv");
  const Overwrite policy = force ? Overwrite::kAllow : Overwrite::kRefuse;
  refuse_output_over_inputs(out, {path});
  if (!out.empty()) check_writable_destination(out, policy);
  const Schedule s = read_schedule(path);
  if (const auto issues = check_schedule(s); !issues.empty()) {
    throw InputError(path + ": invalid schedule: " + issues[0] + " (see lgreco schedule validate)");
  }
  std::string text;
  if (to == "torch-hook") text = export_torch_hook(s).dump(2) + "\n";
  else if (to == "cgx") text = export_cgx(s, provenance_json({path})).dump(2) + "\n";
  else text = export_csv(s);
  if (out.empty()) std::cout << text;
  else write_file_atomic(out, text, policy);
  return 0;
}

LGRECO_COMMAND("export", "export a schedule for torch-hook, CGX or as CSV", run_export);

}  // namespace
}  // namespace lgreco::cli
