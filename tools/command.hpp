#pragma once
/// Subcommand registry of the `lgreco` binary. Each cmd_<name>.cpp registers its subcommands with
/// LGRECO_COMMAND; main.cpp dispatches on the longest matching name ("trace synth" before "trace").
#include <functional>
#include <string>
#include <vector>

namespace lgreco::cli {

/// A subcommand: its words ("trace synth"), a one-line summary and its entry point, which gets the
/// arguments after the subcommand's words and returns the process exit code.
struct Command {
  std::string name;
  std::string summary;
  std::function<int(const std::vector<std::string>&)> run;
};

/// All registered commands, sorted by name.
std::vector<Command>& registry();

/// Registers a command at static-initialisation time.
struct Registrar {
  Registrar(std::string name, std::string summary, std::function<int(const std::vector<std::string>&)> run);
};

}  // namespace lgreco::cli

#define LGRECO_CLI_CONCAT2(a, b) a##b
#define LGRECO_CLI_CONCAT(a, b) LGRECO_CLI_CONCAT2(a, b)
/// LGRECO_COMMAND("trace synth", "write a synthetic trace", run_trace_synth);  (__COUNTER__: unique also when a
/// unity build puts several cmd_*.cpp into one translation unit)
#define LGRECO_COMMAND(name, summary, fn) \
  static ::lgreco::cli::Registrar LGRECO_CLI_CONCAT(lgreco_cmd_, __COUNTER__)(name, summary, fn)
