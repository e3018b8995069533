#pragma once
/// Streaming trace writer. The file is written to a temporary sibling and renamed onto the
/// destination by finish(); a writer destroyed before finish() (error, Ctrl-C) leaves nothing.
///
/// Usage: construct with the header and layer table, then add steps (all at once or one at a time)
/// and write every (layer, step) exactly once in any order — step by step or layer by layer — then
/// finish(). Memory: one chunk of conversion buffer; data goes to disk as it is written.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

#include "core/atomic_file.hpp"
#include "traces/trace_format.hpp"

namespace lgreco::traces {

/// Options of the writer.
struct TraceWriterOptions {
  int deflate_level = 1;  ///< 0..9; 1 favours speed (gradients compress little beyond shuffle)
  bool shuffle = true;    ///< HDF5 shuffle filter before deflate (off: for tests of other pipelines)
};

class TraceWriter {
 public:
  /// Creates the temporary file with root attributes, layer groups and empty [0, numel] datasets
  /// (extended as steps are added). `header.created` is filled in when empty. Throws ConfigError for
  /// an existing destination under Overwrite::kRefuse or an invalid layer (numel ≠ Π shape, numel < 1,
  /// duplicate name), TraceError when HDF5 fails.
  TraceWriter(const std::filesystem::path& dest, TraceHeader header, std::vector<TraceLayer> layers,
              Overwrite policy, TraceWriterOptions options = {});
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  /// Appends a recorded step id (strictly greater than the previous one); returns its index t.
  std::size_t add_step(std::int64_t step_id);
  /// Number of steps added so far.
  std::size_t num_steps() const;
  /// The layer table.
  const std::vector<TraceLayer>& layers() const;

  /// Stores the gradient of `layer` at step index `t` (values.size() == numel), converting float32
  /// to the layer's storage dtype (round to nearest even). Each (layer, t) may be written once.
  void write(std::size_t layer, std::size_t t, std::span<const float> values);
  /// Optional per-layer backward compute time in seconds, one value per step (size T at finish).
  void set_compute_time_s(std::size_t layer, std::vector<double> seconds);
  /// Optional loss and learning rate per step (size T at finish).
  void set_loss(std::vector<double> loss);
  void set_lr(std::vector<double> lr);

  /// Checks that every (layer, step) was written and optional series have T values, writes /steps,
  /// closes the file and renames it onto the destination. Throws TraceError naming what is missing.
  void finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lgreco::traces
