// The lgreco command-line tool. The only place that catches exceptions: it prints one line,
// "lgreco: error: <what>", and returns 1 (runtime), 2 (usage) or 128 + signal (interrupted:
// 130 for SIGINT, 143 for SIGTERM). Started by an MPI launcher with several ranks, it initialises
// MPI, rank 0 runs the command and the other ranks serve its replays (pipeline/distributed.hpp);
// every rank prints the same error line and exits with the same code.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "core/atomic_file.hpp"
#include "core/build_info.hpp"
#include "core/cancel.hpp"
#include "core/error.hpp"
#include "core/fault_context.hpp"
#include "core/provenance.hpp"
#include "core/text.hpp"
#include "pipeline/comm.hpp"
#include "pipeline/distributed.hpp"
#include "tools/command.hpp"
#include "tools/progress.hpp"
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

std::atomic<int> g_signals{0};

// First SIGINT/SIGTERM: ask the work to stop at its next check (outputs are discarded on the way
// out). A second one: remove the registered temporary files and end now. The handler stays
// installed, so no signal can kill the process before that cleanup.
void on_signal(int sig) {
  // Inside a FaultContext the process may be in a libhdf5 call that never returns (a damaged file
  // can loop its global-heap reader): the first signal ends it at once, as a second one would.
  const bool again = g_signals.fetch_add(1) > 0;
  if (!again && !lgreco::fault_context()) {
    lgreco::request_cancel(sig);
    return;
  }
  lgreco::discard_pending_outputs();
  const char* msg = again                ? "lgreco: error: interrupted again; stopped at once, no output written\n"
                    : sig == SIGTERM     ? "lgreco: error: interrupted by SIGTERM; no output written\n"
                                         : "lgreco: error: interrupted by SIGINT; no output written\n";
  [[maybe_unused]] const ssize_t n = ::write(2, msg, std::strlen(msg));
  ::_exit(128 + sig);
}

// SIGSEGV/SIGBUS/SIGABRT inside a FaultContext (a damaged HDF5 file crashing libhdf5, core/fault_context.hpp):
// one error line naming the file, pending outputs removed, exit 1. Anywhere else the previous
// handler (default: a crash; a sanitizer's report in sanitizer builds) is put back and the fault
// repeats under it.
struct sigaction g_prev_segv {}, g_prev_bus {}, g_prev_abrt {};

void on_fault(int sig) {
  if (const char* what = lgreco::fault_context()) {
    lgreco::discard_pending_outputs();
    const char* parts[] = {"lgreco: error: ", what, ": the HDF5 library crashed reading the file (",
                           sig == SIGBUS ? "SIGBUS" : sig == SIGABRT ? "SIGABRT" : "SIGSEGV",
                           "): it is damaged; nothing was written\n"};
    for (const char* part : parts) {
      [[maybe_unused]] const ssize_t n = ::write(2, part, std::strlen(part));
    }
    ::_exit(1);
  }
  sigaction(sig, sig == SIGBUS ? &g_prev_bus : sig == SIGABRT ? &g_prev_abrt : &g_prev_segv, nullptr);
  if (sig == SIGABRT) ::raise(SIGABRT);  // abort() raised it: run the previous handler now
}

void install_fault_handlers() {
  static char alt_stack[64 * 1024];  // the handler runs even when the fault is a stack overflow
  stack_t ss{};
  ss.ss_sp = alt_stack;
  ss.ss_size = sizeof alt_stack;
  sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_handler = on_fault;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_ONSTACK;
  sigaction(SIGSEGV, &sa, &g_prev_segv);
  sigaction(SIGBUS, &sa, &g_prev_bus);
  sigaction(SIGABRT, &sa, &g_prev_abrt);  // glibc's heap checks abort on a heap libhdf5 corrupted
}

void install_signal_handlers() {
  install_fault_handlers();
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  // Beyond `ulimit -f` a write fails with EFBIG (reported, temporary file removed) instead of the
  // process being killed with a half-written temporary file left behind.
  std::signal(SIGXFSZ, SIG_IGN);
}

// Prints `what` as one error line with one "lgreco: error: " prefix: a message that already
// starts with "lgreco" (a command's usage words, "lgreco export: ...") loses that word, and
// control characters from names read in files are escaped. The line goes out in one write: under
// an MPI launcher every rank prints it, and the launcher interleaves separate writes.
int report(std::string what, int code) {
  for (const char* prefix : {"lgreco: error: ", "lgreco: ", "lgreco "}) {
    if (what.rfind(prefix, 0) == 0) {
      what.erase(0, std::strlen(prefix));
      break;
    }
  }
  const std::string line = "lgreco: error: " + lgreco::printable(what) + "\n";
  std::cout.flush();
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
  return code;
}

int interrupted(const char* how) {
  const int sig = lgreco::cancel_signal() ? lgreco::cancel_signal() : SIGINT;
  return report(std::string("interrupted by ") + (sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "a signal") + how,
                128 + sig);
}

// Standard output is flushed and checked before exit: a full disk or /dev/full is an error, not a
// silently truncated report.
int check_stdout(int code) {
  std::cout.flush();
  const bool cpp_ok = static_cast<bool>(std::cout);
  errno = 0;
  const bool c_ok = std::fflush(stdout) == 0 && !std::ferror(stdout);
  if (cpp_ok && c_ok) return code;
  const int err = errno;
  return report(std::string("cannot write to standard output") + (err ? std::string(" (") + std::strerror(err) + ")" : ""),
                code == 0 ? 1 : code);
}

// The exit code and the one line for a failure.
int report(const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const lgreco::UsageError& e) {
    return report(e.what(), 2);
  } catch (const lgreco::FieldError& e) {
    // A library call's option: shown as the flag that set it (snake_case → --kebab-case).
    std::string flag = "--" + e.field();
    std::replace(flag.begin(), flag.end(), '_', '-');
    return report(flag + " " + e.detail(), 2);
  } catch (const lgreco::OutputExists& e) {
    return report(std::string(e.what()) + "; pass --force to overwrite it", 1);
  } catch (const lgreco::Cancelled&) {
    return interrupted("; no output written");
  } catch (const std::bad_alloc&) {
    return report("out of memory", 1);
  } catch (const std::exception& e) {
    if (lgreco::cancel_requested()) return interrupted("; no output written");
    return report(e.what(), 1);
  } catch (...) {
    return report("unknown failure", 1);
  }
}

void print_usage(std::ostream& out) {
  out << "usage: lgreco [--quiet] <command> [options]   (lgreco <command> --help for details)\n\n"
      << "Trace-driven simulator and planner for layer-wise adaptive gradient compression.\n\ncommands:\n";
  auto cmds = lgreco::cli::registry();
  std::sort(cmds.begin(), cmds.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  for (const auto& c : cmds) {
    out << "  " << c.name << std::string(c.name.size() < 18 ? 18 - c.name.size() : 1, ' ') << c.summary << "\n";
  }
  out << "\n--quiet: no progress lines (on a terminal a line redrawn in place; otherwise a line every 10 s of\n"
         "long work, LGRECO_PROGRESS_INTERVAL=<seconds> to change it).\n"
         "exit codes: 0 done, 1 failed (one 'lgreco: error:' line), 2 usage error, 130/143 interrupted by SIGINT/SIGTERM.\n";
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
    if (!group) return report("unknown command " + lgreco::quote_name(args[0]) + " (see lgreco --help)", 2);
    return 2;
  }

  return best->run(std::vector<std::string>(args.begin() + static_cast<long>(best_words), args.end()));
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // --quiet anywhere silences progress lines (tools/progress.hpp); results and errors still print.
  if (const auto q = std::remove(args.begin(), args.end(), std::string("--quiet")); q != args.end()) {
    args.erase(q, args.end());
    lgreco::cli::set_quiet(true);
  }
  lgreco::set_command_line(std::vector<std::string>(argv, argv + argc));

  // MPI only when a launcher started several ranks: a plain run never touches it.
  std::optional<lgreco::pipeline::MpiSession> mpi;
  int launcher_ranks = 0;
  if (lgreco::cli::started_by_mpi_launcher(&launcher_ranks) && launcher_ranks != 1) {
    if (!lgreco::pipeline::MpiSession::available() && launcher_ranks > 1) {
      return report("started by an MPI launcher with " + std::to_string(launcher_ranks) +
                        " ranks, but this build has no MPI (configure with -DLGRECO_MPI=ON)",
                    2);
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
  install_signal_handlers();

  int code = 0;
  try {
    if (mpi && mpi->world().size() > 1) {
      auto& world = mpi->world();
      lgreco::cli::ranks().size = world.size();
      lgreco::cli::ranks().on_node = world.node_size();
      code = lgreco::pipeline::run_on_ranks(world, [&](const lgreco::pipeline::ReplayEngine& engine) {
        lgreco::cli::ranks().engine = &engine;
        return dispatch(args);
      });
    } else {
      code = dispatch(args);
    }
    if (lgreco::cancel_requested()) code = interrupted("");
  } catch (...) {
    code = report(std::current_exception());
  }
  return check_stdout(code);
}
