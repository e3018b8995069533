#pragma once
/// A group of processes (ranks) and the two collective operations the distributed replay needs
/// (pipeline/distributed.hpp): broadcast from one rank, gather to one rank. Messages are byte
/// strings; what they mean is the caller's business.
///
/// Backends, chosen by CMake (LGRECO_MPI=AUTO|ON|OFF, cmake/LgrecoMpi.cmake): MPI
/// (pipeline/comm_mpi.cpp, the only file that includes <mpi.h>) or none (pipeline/comm_none.cpp,
/// whose MpiSession refuses to start). Tests also run the protocol over an in-process group of
/// threads (tests/pipeline/thread_comm.hpp).
#include <memory>
#include <string>
#include <vector>

namespace lgreco::pipeline {

/// A group of ranks. Collective calls must be made by every rank of the group, in the same order.
class Communicator {
 public:
  virtual ~Communicator() = default;
  /// This process's rank, 0 ≤ rank < size.
  virtual int rank() const = 0;
  /// Ranks in the group.
  virtual int size() const = 0;
  /// Ranks of the group on this machine, this one included (for dividing its cores).
  virtual int node_size() const = 0;
  /// Collective: every rank's `bytes` becomes `root`'s.
  virtual void broadcast(std::string& bytes, int root) = 0;
  /// Collective: `root` gets every rank's `bytes`, in rank order; the other ranks get nothing.
  virtual std::vector<std::string> gather(const std::string& bytes, int root) = 0;
};

/// MPI for this process, from initialisation to finalisation (the CLI holds one while it runs when
/// an MPI launcher started it). Only the thread that created it communicates (MPI_THREAD_FUNNELED).
class MpiSession {
 public:
  /// Whether this build has the MPI backend.
  static bool available();
  /// Initialises MPI; ConfigError when the build has no MPI backend (configure with -DLGRECO_MPI=ON).
  MpiSession();
  /// Finalises MPI.
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  /// Every rank the launcher started (MPI_COMM_WORLD).
  Communicator& world() { return *world_; }

 private:
  std::unique_ptr<Communicator> world_;
};

}  // namespace lgreco::pipeline
