#pragma once
/// A small fork-join pool for replay: runs tasks 0..n−1 on `threads` std::threads, each thread
/// taking the next unstarted task (dynamic scheduling, so callers order tasks largest first for
/// balance). Cancellation (core/cancel.hpp) is checked before every task; the first exception thrown
/// by any task stops the others from starting new tasks and is rethrown to the caller after every
/// thread has joined.
#include <cstddef>
#include <functional>
#include <vector>

namespace lgreco::sim {

/// Number of worker threads to use: `requested` when > 0, else std::thread::hardware_concurrency()
/// (at least 1).
unsigned resolve_threads(int requested);

/// Runs task(i, worker) for i in [0, n) on min(threads, n) threads; worker ∈ [0, threads) names the
/// thread (for per-thread scratch). Blocks until all are done; rethrows the first exception.
void parallel_for(std::size_t n, unsigned threads, const std::function<void(std::size_t task, unsigned worker)>& task);

/// What a weighted run did (for tests and reports).
struct PoolStats {
  double peak_weight = 0;   ///< largest sum of weights of tasks running at the same time
  unsigned peak_tasks = 0;  ///< largest number of tasks running at the same time
};

/// As parallel_for, with admission by weight (e.g. the bytes a task holds): tasks start in index
/// order, and task i starts only when the weights of the running tasks plus weight[i] stay within
/// `capacity`, or when nothing else is running (a task heavier than the capacity runs alone).
/// capacity ≤ 0 means no limit. Waiting threads sleep; cancellation is checked before every task.
PoolStats parallel_for_weighted(std::size_t n, unsigned threads, const std::vector<double>& weight, double capacity,
                                const std::function<void(std::size_t task, unsigned worker)>& task);

}  // namespace lgreco::sim
