#pragma once
/// Where replay reads gradients from: a trace file (traces/ reader, see sim/replay_trace_source.hpp)
/// or memory (tests). Reads are per (layer, row) so that a replay never holds more than the rows it
/// is working on: one step of one layer at a time.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace lgreco::sim {

/// What replay needs to know about one layer (one model parameter).
struct SourceLayer {
  std::string name;                      ///< PyTorch parameter name
  std::vector<std::int64_t> shape;       ///< tensor shape
  std::uint64_t numel = 0;               ///< product of shape
  std::string kind = "weight";           ///< weight | bias | norm | embedding
  int bucket = 0;                        ///< DDP bucket index (bucket 0 holds the last layers)
  int backward_order = 0;                ///< position in which its gradient becomes ready
  std::optional<double> compute_time_s;  ///< mean recorded backward compute time, when recorded
};

/// A source of per-layer gradients for recorded steps (rows).
class GradientSource {
 public:
  virtual ~GradientSource() = default;
  /// Model name recorded in the source.
  virtual std::string model() const = 0;
  /// Data-parallel world size of the recorded run.
  virtual int world_size() const = 0;
  /// Recorded step ids, one per row, strictly increasing.
  virtual const std::vector<std::int64_t>& steps() const = 0;
  /// The layers, in model.parameters() order.
  virtual const std::vector<SourceLayer>& layers() const = 0;
  /// Reads row `row` of layer `layer` as fp32 into `out` (size numel). Must be safe to call from
  /// several threads at once. Throws TraceError (unreadable) naming the layer and row.
  virtual void read(std::size_t layer, std::size_t row, std::span<float> out) const = 0;
};

/// A source held in memory (tests and small synthetic inputs): grads[layer][row] is one row.
class MemorySource : public GradientSource {
 public:
  MemorySource(std::string model, int world_size, std::vector<std::int64_t> steps, std::vector<SourceLayer> layers,
               std::vector<std::vector<std::vector<float>>> grads);
  std::string model() const override { return model_; }
  int world_size() const override { return world_size_; }
  const std::vector<std::int64_t>& steps() const override { return steps_; }
  const std::vector<SourceLayer>& layers() const override { return layers_; }
  void read(std::size_t layer, std::size_t row, std::span<float> out) const override;

 private:
  std::string model_;
  int world_size_;
  std::vector<std::int64_t> steps_;
  std::vector<SourceLayer> layers_;
  std::vector<std::vector<std::vector<float>>> grads_;
};

}  // namespace lgreco::sim
