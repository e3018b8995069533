#pragma once
// A group of ranks that are threads of one process (pipeline/comm.hpp), for testing the distributed
// replay's protocol without MPI: collective calls are matched by their sequence number on each rank,
// exactly as MPI matches collectives on a communicator.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pipeline/comm.hpp"

namespace lgreco::testing {

class ThreadHub {
 public:
  explicit ThreadHub(int size) : size_(size) {}
  int size() const { return size_; }

  void broadcast(std::uint64_t seq, int rank, std::string& bytes, int root) {
    std::unique_lock<std::mutex> lock(m_);
    if (rank == root) {
      bcast_[seq] = {bytes, size_ - 1};
      if (size_ == 1) bcast_.erase(seq);
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return bcast_.count(seq) != 0; });
    auto& slot = bcast_[seq];
    bytes = slot.first;
    if (--slot.second == 0) bcast_.erase(seq);
  }

  std::vector<std::string> gather(std::uint64_t seq, int rank, const std::string& bytes, int root) {
    std::unique_lock<std::mutex> lock(m_);
    auto& parts = gather_[seq];
    parts.resize(static_cast<std::size_t>(size_));
    parts[static_cast<std::size_t>(rank)] = bytes;
    ++arrived_[seq];
    cv_.notify_all();
    if (rank != root) return {};
    cv_.wait(lock, [&] { return arrived_[seq] == size_; });
    std::vector<std::string> out = std::move(gather_[seq]);
    gather_.erase(seq);
    arrived_.erase(seq);
    return out;
  }

 private:
  int size_;
  std::mutex m_;
  std::condition_variable cv_;
  std::map<std::uint64_t, std::pair<std::string, int>> bcast_;
  std::map<std::uint64_t, std::vector<std::string>> gather_;
  std::map<std::uint64_t, int> arrived_;
};

class ThreadComm : public pipeline::Communicator {
 public:
  ThreadComm(ThreadHub& hub, int rank) : hub_(hub), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return hub_.size(); }
  int node_size() const override { return hub_.size(); }
  void broadcast(std::string& bytes, int root) override { hub_.broadcast(seq_++, rank_, bytes, root); }
  std::vector<std::string> gather(const std::string& bytes, int root) override { return hub_.gather(seq_++, rank_, bytes, root); }

 private:
  ThreadHub& hub_;
  int rank_;
  std::uint64_t seq_ = 0;
};

/// Runs fn(comm) on `ranks` threads, one rank each, and waits for all.
inline void run_ranks(int ranks, const std::function<void(pipeline::Communicator&)>& fn) {
  ThreadHub hub(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&hub, &fn, r] {
      ThreadComm comm(hub, r);
      fn(comm);
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace lgreco::testing
