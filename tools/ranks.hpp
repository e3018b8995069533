#pragma once
// The MPI ranks of this run, as main (tools/main.cpp) set them up: when an MPI launcher started
// several ranks, rank 0 runs the command with a replay engine that spreads replays over every rank
// (pipeline/distributed.hpp) and the others serve it. Commands that replay traces pass engine() to
// the library; nothing else in a command changes.
#include <string>

#include "core/json_util.hpp"
#include "pipeline/window_replay.hpp"

namespace lgreco::cli {

/// The run's ranks (one rank, no engine, when not under MPI).
struct Ranks {
  const pipeline::ReplayEngine* engine = nullptr;  ///< null: replay in this process
  int size = 1;                                    ///< ranks in the run
  int on_node = 1;                                 ///< ranks on this machine (they share its cores)
};

/// This process's ranks (main sets them before running a command).
Ranks& ranks();

/// Whether an MPI launcher (mpirun, srun --mpi=...) started this process, from the variables the
/// launchers set; `size` gets the launcher's rank count when it says (else 0).
bool started_by_mpi_launcher(int* size);

/// "replayed on N MPI ranks × T threads; ..." from a replay layout (pipeline::WindowReplayer::layout),
/// or "" for one process.
std::string layout_note(const Json& layout);

/// Prints "lgreco: note: <layout_note>" on stderr in one write (launchers interleave separate
/// writes of different ranks); nothing for one process.
void print_layout_note(const Json& layout);

}  // namespace lgreco::cli
