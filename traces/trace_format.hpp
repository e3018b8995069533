#pragma once
/// Trace format v1: the project's own description of a trace (no HDF5 types). The normative
/// specification, precise enough for third-party writers, is docs/trace-format.md.
///
/// Layout: root attributes format="lgreco-trace", version=1, model, world_size, dtype, producer,
/// created (dtype, producer, created and the layers' numel and dtype may be absent: the reader
/// derives or defaults them and lists them in TraceHeader::derived); /steps int64 [T] (strictly increasing recorded step ids; consecutive ids form bursts);
/// /layers/<i> (i zero-padded to 6 digits) with attributes name, shape, numel, kind, bucket,
/// backward_order, dtype and dataset grad [T, numel] (float32, float16, or bfloat16 stored as
/// uint16); optional /layers/<i>/compute_time_s [T] float64, /loss [T], /lr [T] float64.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "traces/presets.hpp"

namespace lgreco::traces {

/// Value of the root attribute "format".
inline constexpr const char* kTraceFormatName = "lgreco-trace";
/// The version this build reads and writes.
inline constexpr std::int64_t kTraceFormatVersion = 1;
/// Upper bound of one chunk's uncompressed size: a step of a layer larger than this is split into
/// several chunks along the numel axis.
inline constexpr std::int64_t kMaxChunkBytes = 4ll << 20;

/// How gradients are stored on disk (always decoded to float32 in memory).
enum class StorageDtype { kFloat32, kFloat16, kBFloat16 };

/// "float32", "float16", "bfloat16".
const char* to_string(StorageDtype dtype);
/// Inverse of to_string; ConfigError naming the text otherwise.
StorageDtype parse_storage_dtype(const std::string& text);
/// Bytes per stored element: 4 or 2.
std::int64_t storage_bytes(StorageDtype dtype);
/// Elements per chunk along numel for a layer: min(numel, kMaxChunkBytes / storage_bytes), ≥ 1.
std::int64_t chunk_elements(std::int64_t numel, StorageDtype dtype);
/// "/layers/000012" for i = 12.
std::string layer_group_path(std::size_t index);

/// Run-level metadata (root attributes).
struct TraceHeader {
  std::string model;                          ///< model name ("gpt2" or the recorder's choice)
  std::int64_t world_size = 1;                ///< data-parallel workers of the recorded run (≥ 1)
  StorageDtype dtype = StorageDtype::kFloat32;///< storage dtype of the gradients
  std::string producer;                       ///< "lgreco 0.1.0 trace synth", "lgreco.TraceRecorder"…
  std::string created;                        ///< ISO 8601 UTC time of creation
  /// Optional root attribute "producer_config": how the producer was configured (free text, JSON
  /// by convention; `trace synth` records its options). Empty = absent.
  std::string producer_config;
  /// Fields the file does not hold that the reader derived or defaulted, one phrase each
  /// ("producer (absent: 'unknown')"); empty for a file with every attribute. Not written.
  std::vector<std::string> derived{};
};

/// One entry of the layer table.
struct TraceLayer {
  std::string name;                 ///< PyTorch parameter name
  std::vector<std::int64_t> shape;  ///< parameter shape (≥ 1 dimension)
  std::int64_t numel = 0;           ///< product of shape (≥ 1)
  LayerKind kind = LayerKind::kWeight;
  std::int64_t bucket = 0;          ///< DDP bucket index (0 = reduced first)
  std::int64_t backward_order = 0;  ///< position in backward (0 = gradient ready first)
  StorageDtype dtype = StorageDtype::kFloat32;
};

/// A maximal run of consecutive step ids.
struct Burst {
  std::size_t first_index = 0;  ///< index into steps of its first step
  std::size_t length = 0;       ///< number of steps
  std::int64_t first_step = 0;  ///< step id of its first step
};

/// Splits strictly increasing step ids into bursts of consecutive ids.
std::vector<Burst> find_bursts(const std::vector<std::int64_t>& steps);

}  // namespace lgreco::traces
