#pragma once
/// Streaming trace reader. Opening reads and checks the structure (attributes, layer table, dataset
/// shapes and types) but no gradient data; reads then fetch one layer × one step (or a range of it)
/// into a caller buffer, decoding float16/bfloat16 to float32 exactly. HDF5's chunk cache is off,
/// so memory beyond the caller's buffer is bounded by one chunk (≤ 4 MiB decoded, plus its
/// compressed bytes), whatever the size of the file.
///
/// Threads: the Debian HDF5 build is not thread-safe; keep all trace I/O of a process on one
/// thread at a time (a reader is also not safe to share between threads).
///
/// Errors are TraceError with one line naming the file and the dataset:
/// `trace run.h5: layer 'fc.weight' (/layers/000012/grad): dataset has 1 dims, expected 2`.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "traces/trace_format.hpp"

namespace lgreco::traces {

class TraceReader {
 public:
  /// Opens `path` and validates its structure; throws TraceError on the first problem found.
  explicit TraceReader(const std::filesystem::path& path);
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;
  TraceReader(TraceReader&&) noexcept;

  const std::filesystem::path& path() const;
  const TraceHeader& header() const;
  /// The layer table, index i is /layers/<i>.
  const std::vector<TraceLayer>& layers() const;
  /// Recorded step ids (strictly increasing), T = steps().size().
  const std::vector<std::int64_t>& steps() const;
  /// Maximal runs of consecutive step ids.
  std::vector<Burst> bursts() const;
  /// Index of the layer called `name`; TraceError naming the file when there is none.
  std::size_t find_layer(const std::string& name) const;
  /// "trace <file>: layer '<name>' (/layers/<i>/grad)", the prefix of messages about a layer.
  std::string layer_context(std::size_t layer) const;

  /// Reads the whole gradient of `layer` at step index `t`; out.size() must equal numel.
  void read(std::size_t layer, std::size_t t, std::span<float> out) const;
  /// Reads elements [offset, offset + out.size()) of that gradient.
  void read_range(std::size_t layer, std::size_t t, std::int64_t offset, std::span<float> out) const;

  /// Per-step backward compute time of a layer; std::nullopt when the trace has none.
  std::optional<std::vector<double>> compute_time_s(std::size_t layer) const;
  /// /loss and /lr; std::nullopt when absent.
  std::optional<std::vector<double>> loss() const;
  std::optional<std::vector<double>> lr() const;

  /// Size of the file on disk.
  std::uint64_t file_size_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lgreco::traces
