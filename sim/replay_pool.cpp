#include "sim/replay_pool.hpp"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/cancel.hpp"

namespace lgreco::sim {

unsigned resolve_threads(int requested) {
  if (requested > 0) return static_cast<unsigned>(requested);
  return std::max(1u, std::thread::hardware_concurrency());
}

void parallel_for(std::size_t n, unsigned threads, const std::function<void(std::size_t, unsigned)>& task) {
  parallel_for_weighted(n, threads, std::vector<double>(n, 0.0), 0.0, task);
}

PoolStats parallel_for_weighted(std::size_t n, unsigned threads, const std::vector<double>& weight, double capacity,
                                const std::function<void(std::size_t, unsigned)>& task) {
  if (weight.size() != n) throw std::invalid_argument("parallel_for_weighted: one weight per task");
  PoolStats stats;
  if (n == 0) return stats;
  const unsigned count = static_cast<unsigned>(std::min<std::size_t>(std::max(1u, threads), n));
  std::mutex m;
  std::condition_variable cv;
  std::size_t next = 0;
  double running = 0;
  unsigned running_tasks = 0;
  bool failed = false;
  std::exception_ptr first;
  auto body = [&](unsigned worker) {
    for (;;) {
      std::size_t i;
      {
        std::unique_lock<std::mutex> lock(m);
        // Admission: the next task in order, when it fits beside the running ones (or runs alone).
        cv.wait(lock, [&] {
          return failed || next >= n || running_tasks == 0 || capacity <= 0 || running + weight[next] <= capacity;
        });
        if (failed || next >= n) return;
        i = next++;
        running += weight[i];
        ++running_tasks;
        stats.peak_weight = std::max(stats.peak_weight, running);
        stats.peak_tasks = std::max(stats.peak_tasks, running_tasks);
      }
      std::exception_ptr err;
      try {
        throw_if_cancelled();
        task(i, worker);
      } catch (...) {
        err = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(m);
        running -= weight[i];
        if (--running_tasks == 0) running = 0;  // no drift from repeated float subtraction
        if (err && !first) first = err;
        if (err) failed = true;
      }
      cv.notify_all();
      if (err) return;
    }
  };
  if (count == 1) {
    body(0);
  } else {
    std::vector<std::thread> pool;
    pool.reserve(count);
    for (unsigned w = 0; w < count; ++w) pool.emplace_back(body, w);
    for (auto& t : pool) t.join();
  }
  if (first) std::rethrow_exception(first);
  return stats;
}

}  // namespace lgreco::sim
