#include "core/atomic_file.hpp"

#include <atomic>
#include <cstdio>
#include <system_error>
#include <unistd.h>

#include "core/error.hpp"

namespace lgreco {
namespace fs = std::filesystem;

void check_writable_destination(const fs::path& dest, Overwrite policy) {
  if (dest.empty()) throw ConfigError("output path is empty");
  std::error_code ec;
  if (fs::is_directory(dest, ec)) throw ConfigError("output '" + dest.string() + "' is a directory");
  if (policy == Overwrite::kRefuse && fs::exists(dest, ec)) {
    throw OutputExists("output '" + dest.string() + "' exists and is kept");
  }
  const fs::path parent = dest.has_parent_path() ? dest.parent_path() : fs::path(".");
  if (!fs::is_directory(parent, ec)) {
    throw ConfigError("output '" + dest.string() + "': folder '" + parent.string() + "' does not exist");
  }
}

AtomicPath::AtomicPath(fs::path dest, Overwrite policy) : dest_(std::move(dest)) {
  check_writable_destination(dest_, policy);
  static std::atomic<unsigned> counter{0};
  temp_ = dest_;
  temp_ += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
}

AtomicPath::AtomicPath(AtomicPath&& other) noexcept
    : dest_(std::move(other.dest_)), temp_(std::move(other.temp_)), active_(other.active_) {
  other.active_ = false;
}

AtomicPath::~AtomicPath() { discard(); }

void AtomicPath::discard() noexcept {
  if (!active_) return;
  std::error_code ec;
  fs::remove(temp_, ec);
  active_ = false;
}

void AtomicPath::commit() {
  if (!active_) throw Error("output '" + dest_.string() + "': already committed or discarded");
  std::error_code ec;
  fs::rename(temp_, dest_, ec);
  if (ec) {
    discard();
    throw Error("output '" + dest_.string() + "': cannot rename temporary file: " + ec.message());
  }
  active_ = false;
}

AtomicFile::AtomicFile(fs::path dest, Overwrite policy, bool binary)
    : path_(std::move(dest), policy),
      out_(path_.temp_path(), binary ? std::ios::out | std::ios::binary | std::ios::trunc
                                     : std::ios::out | std::ios::trunc) {
  if (!out_) throw Error("output '" + path_.dest().string() + "': cannot create '" + path_.temp_path().string() + "'");
}

void AtomicFile::commit() {
  out_.flush();
  const bool ok = static_cast<bool>(out_);
  out_.close();
  if (!ok || out_.fail()) {
    path_.discard();
    throw Error("output '" + path_.dest().string() + "': write failed (disk full?)");
  }
  path_.commit();
}

void write_file_atomic(const fs::path& dest, const std::string& content, Overwrite policy) {
  AtomicFile f(dest, policy);
  f.stream() << content;
  f.commit();
}

}  // namespace lgreco
