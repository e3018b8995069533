#pragma once
/// The contract every fuzz target of lgreco checks on arbitrary input: the reader either accepts it or
/// rejects it with an lgreco::Error whose message is one line and names where the input came from.
/// Anything else is a defect the target turns into an abort, so that the fuzzer (and the replay test)
/// stops on it: another exception type escaping (std::out_of_range from a std::stoi, a JSON library
/// type error, ...), a message spanning lines or not naming the input, and of course a crash,
/// a sanitizer report, a hang (libFuzzer's -timeout) or an allocation beyond -rss_limit_mb.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <typeinfo>

#include "core/error.hpp"

namespace lgreco::fuzz {

/// The origin every target passes to the reader; rejections must name it.
inline constexpr const char* kOrigin = "fuzz-input";

[[noreturn]] inline void defect(const char* what, const std::string& message) {
  std::fprintf(stderr, "fuzz contract broken: %s: %s\n", what, message.c_str());
  std::abort();
}

/// Inputs run so far that the reader accepted and rejected (the replay prints them).
inline std::size_t accepted = 0, rejected = 0;

/// Runs `f`; returns true when it finished, false when it rejected the input cleanly (an lgreco
/// error naming `origin` on one line); aborts on anything else.
template <class F>
bool run(F&& f, const std::string& origin = kOrigin) {
  try {
    f();
    ++accepted;
    return true;
  } catch (const lgreco::Error& e) {
    ++rejected;
    const std::string m = e.what();
    if (m.find('\n') != std::string::npos) defect("message spans lines", m);
    if (!origin.empty() && m.find(origin) == std::string::npos) defect("message does not name the input", m);
    static const bool verbose = std::getenv("LGRECO_FUZZ_VERBOSE") != nullptr;
    if (verbose) std::fprintf(stderr, "rejected: %s\n", m.c_str());
    return false;
  } catch (const std::exception& e) {
    defect(typeid(e).name(), e.what());
  } catch (...) {
    defect("non-std exception", "");
  }
}

inline std::string text(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

}  // namespace lgreco::fuzz
