#pragma once
/// Streaming trace reader. Opening reads and checks the structure (attributes, layer table, dataset
/// shapes and types) but no gradient data; reads then fetch one layer × one step (or a range of it)
/// into a caller buffer, decoding float16/bfloat16 to float32 exactly. HDF5's chunk cache is off,
/// so memory beyond the caller's buffer is bounded by one chunk (≤ 4 MiB decoded, plus its
/// compressed bytes), whatever the size of the file.
///
/// Threads: the Debian HDF5 build is not thread-safe; keep all trace I/O of a process on one
/// thread at a time (a reader is also not safe to share between threads). The two-phase read
/// (fetch_raw under the caller's lock, then decode_raw without it) lets the expensive part of a
/// read — inflate, unshuffle, dtype conversion — run on several threads at once.
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

/// Caller-owned buffer of a two-phase read: the raw (still filtered) chunks of one layer × step.
/// Reuse one per thread to keep its allocations. It holds one row's stored (compressed) bytes plus
/// two decoded chunks of scratch (≤ 8 MiB).
struct RawRow {
  bool done = false;          ///< the fallback path already wrote the values; decode_raw does nothing
  bool shuffle = false;       ///< chunks are shuffled (HDF5 shuffle filter)
  bool deflate = false;       ///< chunks are deflated (zlib stream)
  StorageDtype dtype = StorageDtype::kFloat32;
  std::int64_t numel = 0;     ///< elements of the row
  std::int64_t chunk = 0;     ///< elements per chunk along numel (the last chunk is stored padded)
  std::string where;          ///< context for errors, "trace <file>: layer '...' (...), step index t"
  std::vector<unsigned char> bytes;       ///< the chunks' stored bytes, back to back
  std::vector<std::size_t> offsets;       ///< chunk k is bytes[offsets[k], offsets[k + 1])
  mutable std::vector<unsigned char> scratch;  ///< decode workspace
};

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

  /// Phase 1 of a two-phase read (needs the HDF5 lock): fetches the stored chunks covering row `t`
  /// of `layer` into `raw`. When the dataset's layout or filters are not ones decode_raw decodes
  /// exactly (chunks one row high; filters [shuffle, deflate], [deflate], [shuffle] or none; chunk
  /// filter mask 0; little-endian type), it reads the row the ordinary way into `out` instead and
  /// sets raw.done. out.size() must equal numel.
  void fetch_raw(std::size_t layer, std::size_t t, RawRow& raw, std::span<float> out) const;
  /// Phase 2 (no HDF5 call, safe without the lock): inflates, unshuffles and converts `raw` into
  /// `out`, bit-identical to read(). Throws TraceError on a corrupt chunk.
  static void decode_raw(const RawRow& raw, std::span<float> out);
  /// Whether fetch_raw uses the raw-chunk path for `layer` (false: it falls back to read()).
  bool raw_path(std::size_t layer) const;

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
