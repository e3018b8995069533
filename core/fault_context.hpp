#pragma once
/// What the process is reading while a library that cannot be checked from outside may crash on
/// bad input. libhdf5 1.10 can fault on a damaged file (bytes overwritten in the global heap that
/// holds variable-length strings: a segmentation fault inside H5HG_read), which no check above the
/// library can see coming, or a heap it corrupted that glibc aborts on when the file is closed). The
/// readers name the file in a FaultContext around their HDF5 calls, closing included; the CLI's
/// SIGSEGV/SIGBUS/SIGABRT handler (tools/main.cpp) turns a fault inside one into its one error line
/// naming that file, removes pending outputs and exits 1. A fault anywhere else stays a crash.
#include <atomic>
#include <string_view>

namespace lgreco {

class FaultContext {
 public:
  /// `what` names the input, e.g. "trace run.h5" (cut at 511 bytes). Nested scopes keep the
  /// outermost text.
  explicit FaultContext(std::string_view what) noexcept;
  ~FaultContext();
  FaultContext(const FaultContext&) = delete;
  FaultContext& operator=(const FaultContext&) = delete;
};

/// The text of the live scope, or nullptr outside every scope. Async-signal-safe.
const char* fault_context() noexcept;

}  // namespace lgreco
