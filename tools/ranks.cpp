#include "tools/ranks.hpp"

#include <cstdio>
#include <cstdlib>

namespace lgreco::cli {

Ranks& ranks() {
  static Ranks r;
  return r;
}

bool started_by_mpi_launcher(int* size) {
  // Open MPI's mpirun, PMIx (srun --mpi=pmix, prterun) and PMI-2 (srun --mpi=pmi2, MPICH's launchers).
  const char* vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"};
  bool started = false;
  for (const char* v : vars) started = started || std::getenv(v) != nullptr;
  if (size) {
    *size = 0;
    for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
      if (const char* s = std::getenv(v)) *size = std::atoi(s);
    }
  }
  return started;
}

std::string layout_note(const Json& layout) {
  if (!layout.is_object()) return "";
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "replayed on %d MPI ranks x %u thread(s); layers split by estimated cost, max/mean %.3f; measured replay "
                "time max/mean %.3f",
                layout.value("ranks", 0), layout.value("threads_per_rank", 0u), layout.value("estimated_cost_max_over_mean", 0.0),
                layout.value("busy_max_over_mean", 0.0));
  return buf;
}

void print_layout_note(const Json& layout) {
  const std::string note = layout_note(layout);
  if (note.empty()) return;
  const std::string line = "lgreco: note: " + note + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace lgreco::cli
