#pragma once
/// A small fork-join pool for replay: runs tasks 0..n−1 on `threads` std::threads, each thread
/// taking the next unstarted task (dynamic scheduling, so callers order tasks largest first for
/// balance). Cancellation (core/cancel.hpp) is checked before every task; the first exception thrown
/// by any task stops the others from starting new tasks and is rethrown to the caller after every
/// thread has joined.
#include <cstddef>
#include <functional>

namespace lgreco::sim {

/// Number of worker threads to use: `requested` when > 0, else std::thread::hardware_concurrency()
/// (at least 1).
unsigned resolve_threads(int requested);

/// Runs task(i, worker) for i in [0, n) on min(threads, n) threads; worker ∈ [0, threads) names the
/// thread (for per-thread scratch). Blocks until all are done; rethrows the first exception.
void parallel_for(std::size_t n, unsigned threads, const std::function<void(std::size_t task, unsigned worker)>& task);

}  // namespace lgreco::sim
