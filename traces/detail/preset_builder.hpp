#pragma once
// Private to traces/: small helpers that the preset definitions share.
#include <string>
#include <utility>
#include <vector>

#include "traces/presets.hpp"

namespace lgreco::traces::detail {

/// Appends tensors to a preset with a name prefix ("layer1.0.").
class PresetBuilder {
 public:
  explicit PresetBuilder(std::vector<TensorSpec>& out) : out_(out) {}

  void add(const std::string& name, std::vector<std::int64_t> shape, LayerKind kind, std::int64_t uses) {
    out_.push_back({name, std::move(shape), kind, uses});
  }
  /// nn.Linear(in, out[, bias]) named `prefix` ("fc" → fc.weight [out, in], fc.bias [out]).
  void linear(const std::string& prefix, std::int64_t in, std::int64_t out, bool bias, std::int64_t uses) {
    add(prefix + ".weight", {out, in}, LayerKind::kWeight, uses);
    if (bias) add(prefix + ".bias", {out}, LayerKind::kBias, uses);
  }
  /// HF Conv1D(nf=out, nx=in): weight [in, out], bias [out].
  void conv1d_hf(const std::string& prefix, std::int64_t in, std::int64_t out, std::int64_t uses) {
    add(prefix + ".weight", {in, out}, LayerKind::kWeight, uses);
    add(prefix + ".bias", {out}, LayerKind::kBias, uses);
  }
  /// nn.Conv2d(in, out, k, bias) → weight [out, in, k, k].
  void conv(const std::string& prefix, std::int64_t in, std::int64_t out, std::int64_t k, bool bias,
            std::int64_t positions) {
    add(prefix + ".weight", {out, in, k, k}, LayerKind::kWeight, positions);
    if (bias) add(prefix + ".bias", {out}, LayerKind::kBias, positions);
  }
  /// BatchNorm/LayerNorm affine: weight and bias [c] (RMSNorm: weight only).
  void norm(const std::string& prefix, std::int64_t c, std::int64_t uses, bool bias = true) {
    add(prefix + ".weight", {c}, LayerKind::kNorm, uses);
    if (bias) add(prefix + ".bias", {c}, LayerKind::kNorm, uses);
  }

 private:
  std::vector<TensorSpec>& out_;
};

ModelPreset make_resnet18_cifar();
ModelPreset make_resnet50();
ModelPreset make_transformer_xl_base();
ModelPreset make_gpt2();
ModelPreset make_bert_base();
ModelPreset make_vit_b16();
ModelPreset make_llama2_7b();
ModelPreset make_digits_resnet();
ModelPreset make_charlm();

}  // namespace lgreco::traces::detail
