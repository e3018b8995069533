// The MPI backend of pipeline/comm.hpp: the only file of the project that includes <mpi.h>.
// MPI errors keep MPI's default handler (MPI_ERRORS_ARE_FATAL): a broken communicator ends the job
// through the launcher, which stops every rank.
// The C API only: without these, Open MPI's and MPICH's mpi.h pull in the deprecated C++ bindings,
// which need their own library.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <thread>

#include "core/error.hpp"
#include "pipeline/comm.hpp"

namespace lgreco::pipeline {
namespace {

// Waits for a non-blocking collective by polling with short sleeps: a rank waiting for the others
// (rank 0 planning, a slower rank replaying) leaves its core to the threads that work, where a
// blocking MPI call would spin on it. Latency added: at most ~2 ms per message.
void wait(MPI_Request& request) {
  int done = 0;
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    std::this_thread::sleep_for(pause);
    if (pause < std::chrono::microseconds(2000)) pause *= 2;
  }
}

int checked_count(std::uint64_t n, const char* what) {
  if (n > static_cast<std::uint64_t>(INT_MAX)) {
    throw Error(std::string("MPI ") + what + ": message of " + std::to_string(n) + " bytes exceeds the 2 GiB an MPI count holds");
  }
  return static_cast<int>(n);
}

class MpiComm : public Communicator {
 public:
  MpiComm() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &node_size_);
    MPI_Comm_free(&node);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int node_size() const override { return node_size_; }

  void broadcast(std::string& bytes, int root) override {
    std::uint64_t n = bytes.size();
    MPI_Request req;
    MPI_Ibcast(&n, 1, MPI_UINT64_T, root, MPI_COMM_WORLD, &req);
    wait(req);
    const int count = checked_count(n, "broadcast");
    if (rank_ != root) bytes.assign(static_cast<std::size_t>(count), '\0');
    if (count == 0) return;
    MPI_Ibcast(bytes.data(), count, MPI_BYTE, root, MPI_COMM_WORLD, &req);
    wait(req);
  }

  std::vector<std::string> gather(const std::string& bytes, int root) override {
    const std::uint64_t n = bytes.size();
    std::vector<std::uint64_t> sizes(rank_ == root ? static_cast<std::size_t>(size_) : 0);
    MPI_Request req;
    MPI_Igather(&n, 1, MPI_UINT64_T, sizes.data(), 1, MPI_UINT64_T, root, MPI_COMM_WORLD, &req);
    wait(req);
    std::vector<int> counts, displs;
    std::string all;
    if (rank_ == root) {
      std::uint64_t total = 0;
      for (std::uint64_t s : sizes) {
        counts.push_back(checked_count(s, "gather"));
        displs.push_back(checked_count(total, "gather"));
        total += s;
      }
      all.assign(static_cast<std::size_t>(checked_count(total, "gather")), '\0');
    }
    MPI_Igatherv(bytes.data(), checked_count(n, "gather"), MPI_BYTE, all.data(), counts.data(), displs.data(), MPI_BYTE, root,
                 MPI_COMM_WORLD, &req);
    wait(req);
    std::vector<std::string> out;
    for (std::size_t r = 0; r < counts.size(); ++r) out.push_back(all.substr(static_cast<std::size_t>(displs[r]), static_cast<std::size_t>(counts[r])));
    return out;
  }

 private:
  int rank_ = 0, size_ = 1, node_size_ = 1;
};

}  // namespace

bool MpiSession::available() { return true; }

MpiSession::MpiSession() {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  if (provided < MPI_THREAD_FUNNELED) {
    MPI_Finalize();
    throw ConfigError("MPI: the library provides thread level " + std::to_string(provided) +
                      ", below MPI_THREAD_FUNNELED (replay threads run beside the communicating one)");
  }
  world_ = std::make_unique<MpiComm>();
}

MpiSession::~MpiSession() {
  world_.reset();
  MPI_Finalize();
}

}  // namespace lgreco::pipeline
