#include "traces/presets.hpp"

#include "core/error.hpp"
#include "core/text.hpp"
#include "core/int_math.hpp"
#include "traces/detail/preset_builder.hpp"

namespace lgreco::traces {
namespace {
std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}
}  // namespace

const char* to_string(LayerKind kind) {
  switch (kind) {
    case LayerKind::kWeight: return "weight";
    case LayerKind::kBias: return "bias";
    case LayerKind::kNorm: return "norm";
    case LayerKind::kEmbedding: return "embedding";
  }
  return "weight";
}

LayerKind parse_layer_kind(const std::string& text) {
  if (text == "weight") return LayerKind::kWeight;
  if (text == "bias") return LayerKind::kBias;
  if (text == "norm") return LayerKind::kNorm;
  if (text == "embedding") return LayerKind::kEmbedding;
  throw ConfigError("layer kind '" + printable(text) + "': expected weight, bias, norm or embedding");
}

std::int64_t numel_of(const std::vector<std::int64_t>& shape) {
  const auto n = shape_numel(shape);
  if (!n) throw ConfigError("shape " + shape_text(shape) + ": negative dimension or more elements than an int64 holds");
  return *n;
}

std::uint64_t ModelPreset::parameters() const {
  std::uint64_t total = 0;
  for (const auto& t : tensors) total += static_cast<std::uint64_t>(numel_of(t.shape));
  return total;
}

const std::vector<ModelPreset>& model_presets() {
  static const std::vector<ModelPreset> presets = {
      detail::make_resnet18_cifar(), detail::make_resnet50(), detail::make_transformer_xl_base(),
      detail::make_gpt2(),           detail::make_bert_base(), detail::make_vit_b16(),
      detail::make_llama2_7b(),     detail::make_digits_resnet(), detail::make_charlm(),
  };
  return presets;
}

const ModelPreset& find_model_preset(const std::string& name) {
  std::string known;
  for (const auto& p : model_presets()) {
    if (p.name == name) return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  throw ConfigError("model '" + printable(name) + "' is not a known preset (known: " + known + ")");
}

namespace detail {

// A CIFAR-style ResNet of basic blocks, named as kuangliu/pytorch-cifar names it: a 3x3 stem
// in_channels → widths[0] without bias + BatchNorm, then per stage `blocks` basic blocks (two 3x3
// convolutions with BatchNorm; the first block of every later stage halves the resolution, and a
// block whose input and output differ has a projection shortcut Sequential(conv1x1, BatchNorm)
// named shortcut.0 / shortcut.1), then a linear classifier. `side`: input resolution.
void basic_block_resnet(PresetBuilder& b, std::int64_t in_channels, std::int64_t side,
                        const std::vector<std::int64_t>& widths, int blocks, std::int64_t classes) {
  b.conv("conv1", in_channels, widths[0], 3, false, side * side);
  b.norm("bn1", widths[0], side * side);
  std::int64_t in = widths[0];
  for (std::size_t stage = 0; stage < widths.size(); ++stage) {
    for (int blk = 0; blk < blocks; ++blk) {
      const std::int64_t out = widths[stage];
      const bool down = blk == 0 && stage > 0;
      if (down) side /= 2;
      const std::string p = "layer" + std::to_string(stage + 1) + "." + std::to_string(blk) + ".";
      const std::int64_t pos = side * side;
      b.conv(p + "conv1", in, out, 3, false, pos);
      b.norm(p + "bn1", out, pos);
      b.conv(p + "conv2", out, out, 3, false, pos);
      b.norm(p + "bn2", out, pos);
      if (down || in != out) {
        b.conv(p + "shortcut.0", in, out, 1, false, pos);
        b.norm(p + "shortcut.1", out, pos);
      }
      in = out;
    }
  }
  b.linear("linear", in, classes, true, 1);
}

// kuangliu/pytorch-cifar ResNet18 (BasicBlock, [2,2,2,2], 3x3 stem without max-pool, 10 classes),
// the CIFAR model of the PowerSGD and L-GreCo experiments. Convolutions have no bias.
ModelPreset make_resnet18_cifar() {
  ModelPreset m{"resnet18", "ResNet-18, CIFAR variant (kuangliu/pytorch-cifar, 3x3 stem, 10 classes), 32x32 input", {}, 128};
  PresetBuilder b(m.tensors);
  basic_block_resnet(b, 3, 32, {64, 128, 256, 512}, 2, 10);
  return m;
}

// torchvision resnet50 (Bottleneck v1.5: stride on the 3x3 conv; expansion 4; [3,4,6,3]) for
// ImageNet-1k at 224x224: stem 7x7/2 → 112, max-pool → 56, stages at 56, 28, 14, 7.
ModelPreset make_resnet50() {
  ModelPreset m{"resnet50", "ResNet-50 (torchvision, ImageNet-1k, 224x224 input)", {}, 64};
  PresetBuilder b(m.tensors);
  b.conv("conv1", 3, 64, 7, false, 112 * 112);
  b.norm("bn1", 64, 112 * 112);
  std::int64_t in = 64, side = 56;
  const int blocks[4] = {3, 4, 6, 3};
  const std::int64_t widths[4] = {64, 128, 256, 512};
  for (int stage = 0; stage < 4; ++stage) {
    for (int blk = 0; blk < blocks[stage]; ++blk) {
      const std::int64_t w = widths[stage], out = 4 * w;
      const std::string p = "layer" + std::to_string(stage + 1) + "." + std::to_string(blk) + ".";
      const std::int64_t in_pos = side * side;
      if (blk == 0 && stage > 0) side /= 2;
      const std::int64_t pos = side * side;
      b.conv(p + "conv1", in, w, 1, false, in_pos);
      b.norm(p + "bn1", w, in_pos);
      b.conv(p + "conv2", w, w, 3, false, pos);
      b.norm(p + "bn2", w, pos);
      b.conv(p + "conv3", w, out, 1, false, pos);
      b.norm(p + "bn3", out, pos);
      if (blk == 0) {
        b.conv(p + "downsample.0", in, out, 1, false, pos);
        b.norm(p + "downsample.1", out, pos);
      }
      in = out;
    }
  }
  b.linear("fc", 2048, 1000, true, 1);
  return m;
}

// examples/digits_cnn.py (width 32): a ResNet in miniature for scikit-learn's 8x8 digits upsampled
// to 16x16: 3x3 stem 1→32 + BatchNorm, three stages of two basic blocks at widths 32, 64, 128 (the
// first block of stages 2 and 3 halves the resolution and has a 1x1 projection shortcut), a linear
// classifier for 10 classes; convolutions without bias; batch 32.
ModelPreset make_digits_resnet() {
  ModelPreset m{"digits-resnet", "examples/digits_cnn.py (ResNet in miniature, 16x16 digits, widths 32/64/128, 10 classes)",
                {}, 32};
  PresetBuilder b(m.tensors);
  basic_block_resnet(b, 1, 16, {32, 64, 128}, 2, 10);
  return m;
}

}  // namespace detail
}  // namespace lgreco::traces
