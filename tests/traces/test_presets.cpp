// Model presets: parameter counts, names, shapes; compressible-layer counts derived from the
// PowerSGD rule against the numbers the L-GreCo reference reports (21 for ResNet-18, 81 for
// Transformer-XL base).
#include <catch2/catch.hpp>

#include <set>

#include "core/error.hpp"
#include "traces/presets.hpp"

using namespace lgreco::traces;

namespace {
// PowerSGD's rule (BRIEF): n = shape[0], m = numel / n, r = min(n, m, rank); compressible iff
// (n + m)·r·2 < n·m. 1-D tensors are never compressed by the reference hook.
int compressible(const ModelPreset& m, std::int64_t rank) {
  int count = 0;
  for (const auto& t : m.tensors) {
    if (t.shape.size() < 2) continue;
    const std::int64_t n = t.shape[0], cols = numel_of(t.shape) / n;
    const std::int64_t r = std::min({n, cols, rank});
    if ((n + cols) * r * 2 < n * cols) ++count;
  }
  return count;
}
}  // namespace

TEST_CASE("presets have the published parameter counts", "[presets]") {
  CHECK(find_model_preset("resnet18").parameters() == 11173962u);
  CHECK(find_model_preset("resnet50").parameters() == 25557032u);
  CHECK(find_model_preset("gpt2").parameters() == 124439808u);
  CHECK(find_model_preset("bert-base").parameters() == 109482240u);
  CHECK(find_model_preset("vit-b16").parameters() == 86567656u);
  CHECK(find_model_preset("llama2-7b").parameters() == 6738415616u);
  // The examples' models (sum of numel over a recorded trace's layers).
  CHECK(find_model_preset("digits-resnet").parameters() == 696042u);
  CHECK(find_model_preset("charlm").parameters() == 819542u);
}

TEST_CASE("transformer-xl-base count follows from its architecture", "[presets]") {
  // n_token 267735, 16 layers, d 512, 8 heads × 64, d_inner 2048, 3 adaptive-softmax clusters,
  // tied output weight (counted once), shared r_w_bias / r_r_bias.
  const std::uint64_t vocab = 267735, d = 512, inner = 2048, layers = 16, heads = 8, head_dim = 64;
  const std::uint64_t per_layer = 3 * heads * head_dim * d + heads * head_dim * d + 2 * d + heads * head_dim * d +
                                  (inner * d + inner) + (d * inner + d) + 2 * d;
  const std::uint64_t expected = 2 * heads * head_dim + vocab * d + layers * per_layer + (3 * d + 3) + vocab;
  CHECK(expected == 191950298u);
  CHECK(find_model_preset("transformer-xl-base").parameters() == expected);
}

TEST_CASE("compressible layer counts match the L-GreCo reference", "[presets]") {
  CHECK(compressible(find_model_preset("resnet18"), 4) == 21);
  CHECK(compressible(find_model_preset("transformer-xl-base"), 32) == 81);
}

TEST_CASE("every preset is well formed", "[presets]") {
  REQUIRE(model_presets().size() == 9);
  for (const auto& m : model_presets()) {
    CAPTURE(m.name);
    std::set<std::string> names;
    CHECK(m.batch_per_gpu >= 1);
    CHECK(!m.description.empty());
    for (const auto& t : m.tensors) {
      CAPTURE(t.name);
      CHECK(names.insert(t.name).second);
      REQUIRE(!t.shape.empty());
      for (auto d : t.shape) CHECK(d >= 1);
      CHECK(t.uses_per_sample >= 1);
      // Naming conventions tie the kind to the PyTorch name.
      if (t.kind == LayerKind::kBias) CHECK((t.name.find("bias") != std::string::npos));
      if (t.kind == LayerKind::kWeight && t.shape.size() == 1) FAIL("a 1-D tensor is not a weight matrix");
    }
  }
}

TEST_CASE("parameter order and names follow model.parameters()", "[presets]") {
  const auto& gpt2 = find_model_preset("gpt2");
  REQUIRE(gpt2.tensors.size() == 2 + 12 * 12 + 2);
  CHECK(gpt2.tensors.front().name == "transformer.wte.weight");
  CHECK(gpt2.tensors[3].name == "transformer.h.0.ln_1.bias");
  CHECK(gpt2.tensors[4].shape == std::vector<std::int64_t>{768, 2304});  // Conv1D is [in, out]
  CHECK(gpt2.tensors.back().name == "transformer.ln_f.bias");
  const auto& vit = find_model_preset("vit-b16");
  CHECK(vit.tensors.front().name == "class_token");  // the root module's own parameter comes first
  const auto& txl = find_model_preset("transformer-xl-base");
  CHECK(txl.tensors[0].name == "r_w_bias");
  CHECK(txl.tensors[2].name == "word_emb.emb_layers.0.weight");
  CHECK(txl.tensors.back().name == "crit.out_layers_biases.0");
  const auto& r50 = find_model_preset("resnet50");
  CHECK(r50.tensors.back().name == "fc.bias");
  CHECK(r50.tensors[3].shape == std::vector<std::int64_t>{64, 64, 1, 1});
  const auto& llama = find_model_preset("llama2-7b");
  CHECK(llama.tensors.back().name == "lm_head.weight");
  CHECK(llama.tensors.size() == 1 + 32 * 9 + 2);
}

TEST_CASE("unknown preset names are errors listing the known ones", "[presets]") {
  try {
    find_model_preset("resnet-9000");
    FAIL("expected ConfigError");
  } catch (const lgreco::ConfigError& e) {
    const std::string what = e.what();
    CHECK(what.find("resnet-9000") != std::string::npos);
    CHECK(what.find("llama2-7b") != std::string::npos);
  }
  CHECK_THROWS_AS(parse_layer_kind("conv"), lgreco::ConfigError);
  for (auto k : {LayerKind::kWeight, LayerKind::kBias, LayerKind::kNorm, LayerKind::kEmbedding}) {
    CHECK(parse_layer_kind(to_string(k)) == k);
  }
}
