#pragma once
/// Where replay reads gradients from: a trace file (traces/ reader, see sim/replay_trace_source.hpp)
/// or memory (tests). Reads are per (layer, row) so that a replay never holds more than the rows it
/// is working on: one step of one layer at a time.
#include <cstdint>
#include <filesystem>
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
  /// The layer's index in the whole model: the kernels' random streams and error-feedback state are
  /// keyed by it, so that a view of some layers (LayerSubset) replays them bit for bit as the whole.
  virtual std::size_t layer_id(std::size_t layer) const { return layer; }
  /// The file the gradients come from (empty: not a file). Processes that share a file system open
  /// the same source by it (pipeline/distributed.hpp).
  virtual std::filesystem::path path() const { return {}; }
  /// How messages name the source ("trace run.h5"; empty: nothing to add).
  virtual std::string origin() const { return {}; }
};

/// Some layers of another source, in the order given; layer_id() stays the base's, so a replay of
/// the view measures each layer exactly as a replay of the whole source does. Each read goes to the
/// base; nothing else of the base is read or held. The base must outlive the view.
class LayerSubset : public GradientSource {
 public:
  /// `layers`: indices into base.layers(), each at most once (Error otherwise).
  LayerSubset(const GradientSource& base, std::vector<std::size_t> layers);
  std::string model() const override { return base_.model(); }
  int world_size() const override { return base_.world_size(); }
  const std::vector<std::int64_t>& steps() const override { return base_.steps(); }
  const std::vector<SourceLayer>& layers() const override { return layers_; }
  void read(std::size_t layer, std::size_t row, std::span<float> out) const override;
  std::size_t layer_id(std::size_t layer) const override { return base_.layer_id(index_.at(layer)); }
  std::filesystem::path path() const override { return base_.path(); }
  std::string origin() const override { return base_.origin(); }
  /// Index in the base of the view's layer `layer`.
  std::size_t base_index(std::size_t layer) const { return index_.at(layer); }

 private:
  const GradientSource& base_;
  std::vector<std::size_t> index_;
  std::vector<SourceLayer> layers_;
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
