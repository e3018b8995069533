#pragma once
/// Cooperative cancellation (Ctrl-C, SIGTERM). The CLI's signal handler calls request_cancel();
/// long loops in the library call throw_if_cancelled() between units of work, and committing an
/// atomic output checks it too, so that destructors remove unfinished outputs and nothing
/// half-written is left behind.
namespace lgreco {

/// Asks every running operation to stop at its next check; `signal` is the signal that asked
/// (0: not a signal). The first request's signal is kept. Async-signal-safe.
void request_cancel(int signal = 0) noexcept;
/// True once request_cancel() was called.
bool cancel_requested() noexcept;
/// The signal of the first request (0 when none or not a signal).
int cancel_signal() noexcept;
/// Throws lgreco::Cancelled when cancellation was requested.
void throw_if_cancelled();
/// Clears the flag (tests).
void reset_cancel() noexcept;

}  // namespace lgreco
