#pragma once
/// Atomic output: data goes to a temporary file in the destination's folder (`<dest>.tmp.<pid>.<n>`)
/// and is renamed onto the destination only by commit(). A run that fails or is interrupted leaves
/// the destination as it was (absent or the user's old file) and removes the temporary file.
/// Temporary files are created like any other file (mode 0666 minus the umask).
///
/// Every temporary path is also kept in a fixed-size registry that a signal handler may read:
/// discard_pending_outputs() removes them all with unlink() only, so a second Ctrl-C that ends the
/// process at once still leaves no temporary file behind.
#include <filesystem>
#include <vector>
#include <fstream>
#include <string>

namespace lgreco {

/// What to do when the destination already exists.
enum class Overwrite { kRefuse, kAllow };

/// A destination path with its temporary sibling; usable by stream writers and by libraries that
/// open paths themselves (HDF5): write to temp_path(), then commit().
class AtomicPath {
 public:
  /// Throws ConfigError if `dest` exists and policy is kRefuse, or if its folder does not exist.
  AtomicPath(std::filesystem::path dest, Overwrite policy);
  AtomicPath(const AtomicPath&) = delete;
  AtomicPath& operator=(const AtomicPath&) = delete;
  AtomicPath(AtomicPath&& other) noexcept;
  AtomicPath& operator=(AtomicPath&&) = delete;
  /// Removes the temporary file unless committed.
  ~AtomicPath();

  /// Where to write.
  const std::filesystem::path& temp_path() const { return temp_; }
  /// The final destination.
  const std::filesystem::path& dest() const { return dest_; }
  /// Renames the temporary file onto the destination (atomic on one file system). Throws
  /// Cancelled (and removes the temporary file) when cancellation was requested before.
  void commit();
  /// Removes the temporary file now.
  void discard() noexcept;

 private:
  std::filesystem::path dest_;
  std::filesystem::path temp_;
  bool active_ = true;
  int slot_ = -1;  // index in the registry of pending outputs (-1: not registered)
};

/// Text/binary stream output through an AtomicPath.
class AtomicFile {
 public:
  AtomicFile(std::filesystem::path dest, Overwrite policy, bool binary = false);
  /// The stream to write to.
  std::ostream& stream() { return out_; }
  /// Flushes, checks the stream, closes and renames. Throws Error when writing failed (disk full).
  void commit();

 private:
  AtomicPath path_;
  std::ofstream out_;
};

/// Writes `content` to `dest` atomically.
void write_file_atomic(const std::filesystem::path& dest, const std::string& content, Overwrite policy);

/// Throws ConfigError when `dest` exists and policy is kRefuse (checked before long work starts).
void check_writable_destination(const std::filesystem::path& dest, Overwrite policy);

/// Throws UsageError when `dest` is one of `inputs` (the same file, by name or by link), with --force too: a
/// result written over what it was computed from would lose that input. Inputs that are not files (preset
/// names, empty strings) are skipped. Every command that writes a file checks its inputs with it.
void refuse_output_over_inputs(const std::filesystem::path& dest, const std::vector<std::filesystem::path>& inputs);

/// Throws UsageError when two outputs of one command name the same file (the second would replace the first).
void refuse_same_outputs(const std::filesystem::path& a, const std::filesystem::path& b);

/// Removes every registered temporary file (those of AtomicPaths neither committed nor discarded).
/// Async-signal-safe: for a signal handler that ends the process with _exit().
void discard_pending_outputs() noexcept;

}  // namespace lgreco
