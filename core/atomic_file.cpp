#include "core/atomic_file.hpp"

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <unistd.h>
#include <utility>

#include "core/cancel.hpp"
#include "core/error.hpp"
#include "core/text.hpp"

namespace lgreco {
namespace fs = std::filesystem;

namespace {

// Registry of pending temporary files, readable from a signal handler: fixed storage, lock-free
// slot states. A slot is free (0), being filled (1) or armed (2); only armed slots are removed.
constexpr int kPendingSlots = 64;
struct PendingSlot {
  std::atomic<int> state{0};
  char path[PATH_MAX];
};
PendingSlot g_pending[kPendingSlots];
static_assert(std::atomic<int>::is_always_lock_free);

int register_pending(const fs::path& p) noexcept {
  const std::string& s = p.native();
  if (s.size() >= PATH_MAX) return -1;  // not registered: only the signal path would miss it
  for (int i = 0; i < kPendingSlots; ++i) {
    int expected = 0;
    if (g_pending[i].state.compare_exchange_strong(expected, 1)) {
      std::memcpy(g_pending[i].path, s.c_str(), s.size() + 1);
      g_pending[i].state.store(2);
      return i;
    }
  }
  return -1;
}

void unregister_pending(int slot) noexcept {
  if (slot >= 0) g_pending[slot].state.store(0);
}

}  // namespace

void discard_pending_outputs() noexcept {
  for (auto& slot : g_pending) {
    if (slot.state.load() == 2) ::unlink(slot.path);
  }
}

void refuse_output_over_inputs(const fs::path& dest, const std::vector<fs::path>& inputs) {
  std::error_code ec;
  if (dest.empty() || !fs::exists(dest, ec)) return;
  for (const auto& in : inputs) {
    if (in.empty() || !fs::exists(in, ec)) continue;
    if (fs::equivalent(dest, in, ec)) {
      throw UsageError("output " + quote_name(dest.string()) + " is the input " + quote_name(in.string()) +
                       "; write the result elsewhere (--force does not replace an input)");
    }
  }
}

void refuse_same_outputs(const fs::path& a, const fs::path& b) {
  if (a.empty() || b.empty()) return;
  std::error_code ec, ec2;
  const fs::path ca = fs::weakly_canonical(fs::absolute(a, ec), ec), cb = fs::weakly_canonical(fs::absolute(b, ec2), ec2);
  if ((!ec && !ec2 && ca == cb) || a == b) {
    throw UsageError("outputs " + quote_name(a.string()) + " and " + quote_name(b.string()) + " are the same file; name two files");
  }
}

void check_writable_destination(const fs::path& dest, Overwrite policy) {
  if (dest.empty()) throw ConfigError("output path is empty");
  const std::string name = quote_name(dest.string());
  std::error_code ec;
  if (fs::is_directory(dest, ec)) throw ConfigError("output " + name + " is a directory");
  if (policy == Overwrite::kRefuse && fs::exists(fs::symlink_status(dest, ec))) {
    throw OutputExists("output " + name + " exists and is kept");
  }
  if (fs::exists(dest, ec) && !fs::is_regular_file(dest, ec)) {
    throw ConfigError("output " + name + " is not a regular file (a device, pipe or socket)");
  }
  const fs::path parent = dest.has_parent_path() ? dest.parent_path() : fs::path(".");
  if (!fs::is_directory(parent, ec)) {
    throw ConfigError("output " + name + ": folder " + quote_name(parent.string()) + " does not exist");
  }
}

AtomicPath::AtomicPath(fs::path dest, Overwrite policy) : dest_(std::move(dest)) {
  check_writable_destination(dest_, policy);
  static std::atomic<unsigned> counter{0};
  temp_ = dest_;
  temp_ += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  slot_ = register_pending(temp_);
}

AtomicPath::AtomicPath(AtomicPath&& other) noexcept
    : dest_(std::move(other.dest_)), temp_(std::move(other.temp_)), active_(other.active_),
      slot_(std::exchange(other.slot_, -1)) {
  other.active_ = false;
}

AtomicPath::~AtomicPath() { discard(); }

void AtomicPath::discard() noexcept {
  if (!active_) return;
  std::error_code ec;
  fs::remove(temp_, ec);
  active_ = false;
  unregister_pending(std::exchange(slot_, -1));
}

void AtomicPath::commit() {
  if (!active_) throw Error("output " + quote_name(dest_.string()) + ": already committed or discarded");
  if (cancel_requested()) {
    discard();
    throw Cancelled();
  }
  std::error_code ec;
  fs::rename(temp_, dest_, ec);
  if (ec) {
    discard();
    throw Error("output " + quote_name(dest_.string()) + ": cannot rename temporary file: " + ec.message());
  }
  active_ = false;
  // After the rename: a signal in between finds nothing to remove, never the committed output.
  unregister_pending(std::exchange(slot_, -1));
}

AtomicFile::AtomicFile(fs::path dest, Overwrite policy, bool binary)
    : path_(std::move(dest), policy),
      out_(path_.temp_path(), binary ? std::ios::out | std::ios::binary | std::ios::trunc
                                     : std::ios::out | std::ios::trunc) {
  if (!out_) {
    throw Error("output " + quote_name(path_.dest().string()) + ": cannot create " + quote_name(path_.temp_path().string()) + " (" +
                std::strerror(errno) + ")");
  }
}

void AtomicFile::commit() {
  out_.flush();
  const bool ok = static_cast<bool>(out_);
  out_.close();
  if (!ok || out_.fail()) {
    path_.discard();
    throw Error("output " + quote_name(path_.dest().string()) + ": write failed (disk full or file too large?)");
  }
  path_.commit();
}

void write_file_atomic(const fs::path& dest, const std::string& content, Overwrite policy) {
  AtomicFile f(dest, policy);
  f.stream() << content;
  f.commit();
}

}  // namespace lgreco
