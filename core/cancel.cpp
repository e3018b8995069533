#include "core/cancel.hpp"

#include <atomic>

#include "core/error.hpp"

namespace lgreco {
namespace {
std::atomic<bool> g_cancel{false};
std::atomic<int> g_signal{0};
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free,
              "signal handler needs lock-free flags");
}  // namespace

void request_cancel(int signal) noexcept {
  int none = 0;
  if (signal != 0) g_signal.compare_exchange_strong(none, signal, std::memory_order_relaxed);
  g_cancel.store(true, std::memory_order_relaxed);
}
bool cancel_requested() noexcept { return g_cancel.load(std::memory_order_relaxed); }
int cancel_signal() noexcept { return g_signal.load(std::memory_order_relaxed); }
void throw_if_cancelled() {
  if (cancel_requested()) throw Cancelled();
}
void reset_cancel() noexcept {
  g_cancel.store(false, std::memory_order_relaxed);
  g_signal.store(0, std::memory_order_relaxed);
}

}  // namespace lgreco
