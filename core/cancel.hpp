#pragma once
/// Cooperative cancellation (Ctrl-C). The CLI's signal handler calls request_cancel(); long loops
/// in the library call throw_if_cancelled() between units of work, so that destructors remove
/// unfinished outputs and nothing half-written is left behind.
namespace lgreco {

/// Asks every running operation to stop at its next check (async-signal-safe).
void request_cancel() noexcept;
/// True once request_cancel() was called.
bool cancel_requested() noexcept;
/// Throws lgreco::Cancelled when cancellation was requested.
void throw_if_cancelled();
/// Clears the flag (tests).
void reset_cancel() noexcept;

}  // namespace lgreco
