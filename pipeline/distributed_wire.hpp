#pragma once
/// The byte encoding of the distributed replay's messages (pipeline/distributed.hpp). Every rank runs
/// the same binary, so values travel as their in-memory bytes: a double or a MethodSpec arrives bit
/// for bit as it left (no text round trip), which is what makes the gathered measurements identical
/// to one process's.
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>
#include <type_traits>
#include <vector>

#include "sim/replay.hpp"
#include "sim/replay_candidates.hpp"
#include "sim/replay_windows.hpp"

namespace lgreco::pipeline::wire {

/// Appends values to a message.
class Writer {
 public:
  /// A trivially copyable value, as its bytes.
  template <class T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>, "wire: only trivially copyable values travel as bytes");
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  /// A length, then the elements' bytes.
  template <class T>
  void pods(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>, "wire: only trivially copyable values travel as bytes");
    pod<std::uint64_t>(v.size());
    if (!v.empty()) out_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  /// A length, then the characters.
  void str(const std::string& s) {
    pod<std::uint64_t>(s.size());
    out_ += s;
  }
  /// The message so far.
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

/// Reads values back in the order they were written; Error("distributed replay: malformed message")
/// when the message ends early or has bytes left over.
class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  template <class T>
  T pod() {
    static_assert(std::is_trivially_copyable_v<T>, "wire: only trivially copyable values travel as bytes");
    T v;
    need(sizeof v);
    std::memcpy(&v, in_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  template <class T>
  std::vector<T> pods() {
    const auto n = pod<std::uint64_t>();
    need_elements(n, sizeof(T));
    std::vector<T> v(static_cast<std::size_t>(n));
    if (n) std::memcpy(v.data(), in_.data() + pos_, v.size() * sizeof(T));
    pos_ += v.size() * sizeof(T);
    return v;
  }
  std::string str() {
    const auto n = pod<std::uint64_t>();
    need_elements(n, 1);
    std::string s = in_.substr(pos_, static_cast<std::size_t>(n));
    pos_ += s.size();
    return s;
  }
  /// Checks that every byte was read.
  void done() const;

 private:
  void need(std::size_t n) const;
  void need_elements(std::uint64_t n, std::size_t size) const;
  const std::string& in_;
  std::size_t pos_ = 0;
};

void put(Writer& w, const sim::Window& v);
sim::Window get_window(Reader& r);
void put(Writer& w, const sim::LayerWindow& v);
sim::LayerWindow get_layer_window(Reader& r);
void put(Writer& w, const sim::CandidateSet& v);
sim::CandidateSet get_candidate_set(Reader& r);
/// The options without the progress callback (progress is reported by rank 0 only).
void put(Writer& w, const sim::ReplayOptions& v);
sim::ReplayOptions get_replay_options(Reader& r);

/// An exception on its way between ranks: its type and message, so that every rank can throw the
/// same type with the same message (and the CLI prints the same line and exit code everywhere).
struct Failure {
  /// The lgreco exception types (core/error.hpp); kError also stands for any other std::exception.
  enum class Kind : std::uint8_t { kError, kConfig, kField, kOutputExists, kTrace, kInput, kCuda, kCudaUnavailable, kCancelled, kUsage };
  Kind kind = Kind::kError;
  std::string what;
  std::string field, detail;  ///< FieldError's parts
};

/// Classifies a caught exception.
Failure capture(const std::exception_ptr& e);
/// Throws the exception a Failure describes.
[[noreturn]] void rethrow(const Failure& f);
void put(Writer& w, const Failure& v);
Failure get_failure(Reader& r);

}  // namespace lgreco::pipeline::wire
