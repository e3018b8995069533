#pragma once
/// Model presets: the parameter tensors of well-known models, with their real PyTorch names and
/// shapes in model.parameters() order (tied parameters appear once, where PyTorch first yields
/// them). Used by the synthetic trace generator and by what-if studies that need a model's layer
/// table without a recorded trace.
#include <cstdint>
#include <string>
#include <vector>

namespace lgreco::traces {

/// What a parameter tensor is; the trace format stores it as "weight", "bias", "norm" or "embedding".
enum class LayerKind { kWeight, kBias, kNorm, kEmbedding };

/// "weight", "bias", "norm", "embedding".
const char* to_string(LayerKind kind);
/// Inverse of to_string; throws ConfigError naming `text` and the accepted values.
LayerKind parse_layer_kind(const std::string& text);

/// One parameter tensor of a model.
struct TensorSpec {
  std::string name;                ///< PyTorch parameter name ("layer1.0.conv1.weight").
  std::vector<std::int64_t> shape; ///< PyTorch shape; never empty (a scalar is recorded as [1]).
  LayerKind kind;                  ///< weight, bias, norm (affine of BatchNorm/LayerNorm/RMSNorm) or embedding.
  /// Times the tensor is applied per sample: conv output positions, sequence length for transformer
  /// matrices, 1 for a classifier head or a pure lookup table. Forward FLOPs ≈ 2·numel·uses.
  std::int64_t uses_per_sample;
};

/// Number of elements of a shape (product of the dimensions; 1 for an empty shape). ConfigError
/// for a negative dimension or a product beyond int64 (core/int_math.hpp's shape_numel).
std::int64_t numel_of(const std::vector<std::int64_t>& shape);

/// A model: its tensors in model.parameters() order and a typical per-GPU batch size.
struct ModelPreset {
  std::string name;                 ///< "resnet50"
  std::string description;          ///< one line: architecture, dataset, source of the definition
  std::vector<TensorSpec> tensors;  ///< model.parameters() order, PyTorch names
  std::int64_t batch_per_gpu;       ///< samples per GPU per step in the reference setup
  /// Σ numel over tensors.
  std::uint64_t parameters() const;
};

/// All presets: resnet18, resnet50, transformer-xl-base, gpt2, bert-base, vit-b16, llama2-7b, and the
/// two small models of examples/ whose recorded traces the synthetic profile was fitted to:
/// digits-resnet and charlm.
const std::vector<ModelPreset>& model_presets();
/// The preset called `name`; ConfigError listing the known names otherwise.
const ModelPreset& find_model_preset(const std::string& name);

}  // namespace lgreco::traces
