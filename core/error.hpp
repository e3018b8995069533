#pragma once
/// The exception family of lgreco. Library code throws these; only tools/main.cpp catches.
#include <stdexcept>
#include <string>

namespace lgreco {

/// Base of every lgreco exception: a runtime failure with a message that names the object and value.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

/// Bad configuration, flags, JSON content or unit strings supplied by the user.
class ConfigError : public Error {
 public:
  explicit ConfigError(const std::string& what) : Error(what) {}
};

/// A bad value of a named setting of a library call (a field of an options struct): the message is
/// in the library's words; `field()` names the setting (snake_case) so that a command can say which
/// of its flags caused it (tools/main.cpp prints it as --field-name and exits with the usage code).
class FieldError : public ConfigError {
 public:
  FieldError(std::string field, const std::string& what) : ConfigError(field + " " + what), field_(std::move(field)), detail_(what) {}
  const std::string& field() const { return field_; }
  const std::string& detail() const { return detail_; }

 private:
  std::string field_, detail_;
};

/// An output that exists and may not be overwritten (the command's --force allows it).
class OutputExists : public ConfigError {
 public:
  explicit OutputExists(const std::string& what) : ConfigError(what) {}
};

/// A trace file that is missing, truncated, corrupt or inconsistent with the format.
class TraceError : public Error {
 public:
  explicit TraceError(const std::string& what) : Error(what) {}
};

/// Bad numeric input to a computation (NaN/Inf gradients or errors, impossible sizes).
class InputError : public Error {
 public:
  explicit InputError(const std::string& what) : Error(what) {}
};

/// A failing CUDA runtime or library call on a machine that has a device.
class CudaError : public Error {
 public:
  explicit CudaError(const std::string& what) : Error(what) {}
};

/// CUDA was asked for but this build has no CUDA backend or the machine has no device.
class CudaUnavailable : public Error {
 public:
  explicit CudaUnavailable(const std::string& what) : Error(what) {}
};

/// The user interrupted a long operation (Ctrl-C); outputs in progress are discarded.
class Cancelled : public Error {
 public:
  Cancelled() : Error("interrupted") {}
};

/// Wrong command-line usage: unknown flag, missing argument. The CLI maps it to exit code 2.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& what) : Error(what) {}
};

namespace detail {
[[noreturn]] void throw_check_failure(const char* expr, const char* file, int line, const std::string& msg);
}  // namespace detail

}  // namespace lgreco

/// Precondition check that is always on (also in Release). Throws lgreco::Error with the message.
#define LGRECO_CHECK(cond, msg)                                                        \
  do {                                                                                 \
    if (!(cond)) ::lgreco::detail::throw_check_failure(#cond, __FILE__, __LINE__, (msg)); \
  } while (0)
