// The lgreco command-line tool. The only place that catches exceptions: it prints
// "lgreco: error: <what>" and returns 1 (runtime) or 2 (usage). Started by an MPI launcher with
// several ranks, it initialises MPI, rank 0 runs the command and the other ranks serve its replays
// (pipeline/distributed.hpp); every rank prints the same error line and exits with the same code.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "core/build_info.hpp"
#include "core/cancel.hpp"
#include "core/error.hpp"
#include "core/provenance.hpp"
#include "pipeline/comm.hpp"
#include "pipeline/distributed.hpp"
#include "tools/command.hpp"
#include "tools/ranks.hpp"

namespace lgreco::cli {

std::vector<Command>& registry() {
  static std::vector<Command> commands;
  return commands;
}

Registrar::Registrar(std::string name, std::string summary, std::function<int(const std::vector<std::string>&)> run) {
  registry().push_back({std::move(name), std::move(summary), std::move(run)});
}

}  // namespace lgreco::cli

namespace {

void on_sigint(int) {
  // First Ctrl-C: ask the work to stop cleanly; a second one kills the process at once.
  lgreco::request_cancel();
  std::signal(SIGINT, SIG_DFL);
}

void print_usage(std::ostream& out) {
  out << "usage: lgreco <command> [options]   (lgreco <command> --help for details)\n\n"
      << "Trace-driven simulator and planner for layer-wise adaptive gradient compression.\n\ncommands:\n";
  auto cmds = lgreco::cli::registry();
  std::sort(cmds.begin(), cmds.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  for (const auto& c : cmds) {
    out << "  " << c.name << std::string(c.name.size() < 18 ? 18 - c.name.size() : 1, ' ') << c.summary << "\n";
  }
}

// Finds and runs the command named by `args` (usage errors are returned, failures thrown).
int dispatch(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    print_usage(args.empty() ? std::cerr : std::cout);
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--list-commands") {  // machine-readable, one command name per line (tests, completion)
    for (const auto& c : lgreco::cli::registry()) std::cout << c.name << "\n";
    return 0;
  }
  if (args[0] == "--version" || args[0] == "version") {
    std::cout << "lgreco " << lgreco::build_info::version() << " (" << lgreco::build_info::git_sha() << ", "
              << lgreco::build_info::build_type() << ", cuda " << (lgreco::build_info::cuda() ? "on" : "off") << ", mpi "
              << (lgreco::pipeline::MpiSession::available() ? "on" : "off") << ")\n";
    return 0;
  }

  // Longest registered name that prefixes the arguments ("trace synth" wins over "trace").
  const lgreco::cli::Command* best = nullptr;
  std::size_t best_words = 0;
  for (const auto& c : lgreco::cli::registry()) {
    std::vector<std::string> words;
    std::size_t start = 0;
    while (start <= c.name.size()) {
      auto sp = c.name.find(' ', start);
      words.push_back(c.name.substr(start, sp == std::string::npos ? std::string::npos : sp - start));
      if (sp == std::string::npos) break;
      start = sp + 1;
    }
    if (words.size() <= args.size() && std::equal(words.begin(), words.end(), args.begin()) && words.size() > best_words) {
      best = &c;
      best_words = words.size();
    }
  }
  if (!best) {
    // A group word alone ("lgreco trace") lists its subcommands.
    bool group = false;
    for (const auto& c : lgreco::cli::registry()) {
      if (c.name.rfind(args[0] + " ", 0) == 0) {
        if (!group) std::cerr << "usage: lgreco " << args[0] << " <subcommand>\n\nsubcommands:\n";
        group = true;
        std::cerr << "  " << c.name << "  " << c.summary << "\n";
      }
    }
    if (!group) std::cerr << "lgreco: error: unknown command '" << args[0] << "' (see lgreco --help)\n";
    return 2;
  }
  return best->run(std::vector<std::string>(args.begin() + static_cast<long>(best_words), args.end()));
}

// Prints a failure as one line and returns the exit code. The line goes out in one write: under an
// MPI launcher every rank prints it, and the launcher interleaves separate writes.
int report(const std::exception_ptr& failure) {
  std::string line;
  int code = 1;
  try {
    std::rethrow_exception(failure);
  } catch (const lgreco::UsageError& e) {
    line = std::string("lgreco: error: ") + e.what();
    code = 2;
  } catch (const lgreco::FieldError& e) {
    // A library call's option: shown as the flag that set it (snake_case → --kebab-case).
    std::string flag = "--" + e.field();
    std::replace(flag.begin(), flag.end(), '_', '-');
    line = "lgreco: error: " + flag + " " + e.detail();
    code = 2;
  } catch (const lgreco::OutputExists& e) {
    line = std::string("lgreco: error: ") + e.what() + "; pass --force to overwrite it";
  } catch (const lgreco::Cancelled&) {
    line = "lgreco: interrupted; no output written";
    code = 130;
  } catch (const std::exception& e) {
    line = std::string("lgreco: error: ") + e.what();
  }
  line += "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  lgreco::set_command_line(std::vector<std::string>(argv, argv + argc));

  // MPI only when a launcher started several ranks: a plain run never touches it.
  std::optional<lgreco::pipeline::MpiSession> mpi;
  int launcher_ranks = 0;
  if (lgreco::cli::started_by_mpi_launcher(&launcher_ranks) && launcher_ranks != 1) {
    if (!lgreco::pipeline::MpiSession::available() && launcher_ranks > 1) {
      std::cerr << "lgreco: error: started by an MPI launcher with " << launcher_ranks
                << " ranks, but this build has no MPI (configure with -DLGRECO_MPI=ON)\n";
      return 2;
    }
    if (lgreco::pipeline::MpiSession::available()) {
      try {
        mpi.emplace();
      } catch (...) {
        return report(std::current_exception());
      }
    }
  }
  // After MPI_Init, so that these handlers are the ones in force.
  std::signal(SIGINT, on_sigint);
  std::signal(SIGTERM, on_sigint);

  try {
    if (mpi && mpi->world().size() > 1) {
      auto& world = mpi->world();
      lgreco::cli::ranks().size = world.size();
      lgreco::cli::ranks().on_node = world.node_size();
      return lgreco::pipeline::run_on_ranks(world, [&](const lgreco::pipeline::ReplayEngine& engine) {
        lgreco::cli::ranks().engine = &engine;
        return dispatch(args);
      });
    }
    return dispatch(args);
  } catch (...) {
    return report(std::current_exception());
  }
}
