// `lgreco models`: the built-in model presets with their parameter counts.
#include <fmt/format.h>

#include <iostream>

#include "core/json_util.hpp"
#include "core/provenance.hpp"
#include "core/units.hpp"
#include "tools/args.hpp"
#include "tools/command.hpp"
#include "traces/presets.hpp"

namespace lgreco::cli {
namespace {

int run_models(const std::vector<std::string>& args) {
  Format fmt = Format::kTable;
  ArgParser p("lgreco models",
              "List the built-in model presets (real PyTorch parameter names and shapes, in model.parameters() order)\n"
              "with their parameter counts. `lgreco trace synth --model NAME` writes a synthetic trace of one.");
  p.format(&fmt);
  if (!p.parse(args)) return 0;
  const auto& presets = traces::model_presets();
  if (fmt == Format::kJson) {
    Json models = Json::array();
    for (const auto& m : presets) {
      models.push_back({{"name", m.name},
                        {"parameters", m.parameters()},
                        {"tensors", m.tensors.size()},
                        {"bytes_fp32", 4 * m.parameters()},
                        {"batch_per_gpu", m.batch_per_gpu},
                        {"description", m.description}});
    }
    const Json doc = {{"schema_version", 1}, {"kind", "lgreco-models"}, {"models", models}, {"provenance", provenance_json()}};
    std::cout << doc.dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format("{:<21}{:>15}{:>9}{:>13}  {}\n", "model", "parameters", "tensors", "fp32 size", "description");
  for (const auto& m : presets) {
    std::cout << fmt::format("{:<21}{:>15}{:>9}{:>13}  {}\n", m.name, m.parameters(), m.tensors.size(),
                             units::format_bytes(4.0 * static_cast<double>(m.parameters())), m.description);
  }
  return 0;
}

LGRECO_COMMAND("models", "list the built-in model presets and their parameter counts", run_models);

}  // namespace
}  // namespace lgreco::cli
