#include "sim/replay_pool.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "core/cancel.hpp"

namespace lgreco::sim {

unsigned resolve_threads(int requested) {
  if (requested > 0) return static_cast<unsigned>(requested);
  return std::max(1u, std::thread::hardware_concurrency());
}

void parallel_for(std::size_t n, unsigned threads, const std::function<void(std::size_t, unsigned)>& task) {
  if (n == 0) return;
  const unsigned count = static_cast<unsigned>(std::min<std::size_t>(std::max(1u, threads), n));
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first;
  std::mutex first_mutex;
  auto body = [&](unsigned worker) {
    for (;;) {
      if (failed.load(std::memory_order_relaxed)) return;
      const std::size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= n) return;
      try {
        throw_if_cancelled();
        task(i, worker);
      } catch (...) {
        std::lock_guard<std::mutex> lock(first_mutex);
        if (!first) first = std::current_exception();
        failed.store(true, std::memory_order_relaxed);
        return;
      }
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
}

}  // namespace lgreco::sim
