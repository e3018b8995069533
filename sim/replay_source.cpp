#include "sim/replay_source.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace lgreco::sim {

MemorySource::MemorySource(std::string model, int world_size, std::vector<std::int64_t> steps,
                           std::vector<SourceLayer> layers, std::vector<std::vector<std::vector<float>>> grads)
    : model_(std::move(model)),
      world_size_(world_size),
      steps_(std::move(steps)),
      layers_(std::move(layers)),
      grads_(std::move(grads)) {
  if (grads_.size() != layers_.size()) throw InputError("memory source: gradients for " + std::to_string(grads_.size()) +
                                                        " layers, " + std::to_string(layers_.size()) + " declared");
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    if (grads_[l].size() != steps_.size()) {
      throw InputError("memory source: layer '" + layers_[l].name + "' has " + std::to_string(grads_[l].size()) + " rows, expected " +
                       std::to_string(steps_.size()));
    }
    for (const auto& row : grads_[l]) {
      if (row.size() != layers_[l].numel) throw InputError("memory source: layer '" + layers_[l].name + "': row of wrong size");
    }
  }
}

void MemorySource::read(std::size_t layer, std::size_t row, std::span<float> out) const {
  const auto& src = grads_.at(layer).at(row);
  if (out.size() != src.size()) throw InputError("memory source: layer '" + layers_[layer].name + "': buffer of wrong size");
  std::copy(src.begin(), src.end(), out.begin());
}

LayerSubset::LayerSubset(const GradientSource& base, std::vector<std::size_t> layers) : base_(base), index_(std::move(layers)) {
  std::vector<bool> seen(base_.layers().size(), false);
  for (std::size_t i : index_) {
    if (i >= seen.size() || seen[i]) {
      throw Error("layer subset: index " + std::to_string(i) + (i >= seen.size() ? " outside the source's " : " repeated among ") +
                  std::to_string(seen.size()) + " layers");
    }
    seen[i] = true;
    layers_.push_back(base_.layers()[i]);
  }
}

void LayerSubset::read(std::size_t layer, std::size_t row, std::span<float> out) const { base_.read(index_.at(layer), row, out); }

}  // namespace lgreco::sim
