// Uniform PowerSGD compression ratios follow the DDP hook's counting rule: a matrix n × m
// (n = shape[0], m = numel/n) with (n+m)·r·2 < n·m sends r·(n+m) elements, everything else n·m.
// For the PowerSGD paper's ResNet-18 (CIFAR variant) the ratios at rank 1/2/4 are 243×, 136×, 72×.
//
// The shapes come from the model presets (traces/presets.hpp); they are cross-checked against the
// CIFAR ResNet-18 architecture written out here (3×3 stem with 64 channels, four stages of two
// BasicBlocks with 64/128/256/512 channels, 1×1 projection shortcuts with batch norm where the stage
// changes, 10-way classifier): 11,173,962 parameters.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "core/int_math.hpp"
#include "kernels/wire.hpp"
#include "traces/presets.hpp"


namespace {

std::vector<std::vector<std::int64_t>> resnet18_cifar_shapes() {
  std::vector<std::vector<std::int64_t>> s = {{64, 3, 3, 3}, {64}, {64}};
  std::int64_t in = 64;
  for (std::int64_t planes : {64, 128, 256, 512}) {
    for (int block = 0; block < 2; ++block) {
      s.push_back({planes, in, 3, 3});
      s.push_back({planes});
      s.push_back({planes});
      s.push_back({planes, planes, 3, 3});
      s.push_back({planes});
      s.push_back({planes});
      if (in != planes) {
        s.push_back({planes, in, 1, 1});
        s.push_back({planes});
        s.push_back({planes});
      }
      in = planes;
    }
  }
  s.push_back({10, 512});
  s.push_back({10});
  return s;
}

std::vector<std::vector<std::int64_t>> preset_shapes(const std::string& name) {
  std::vector<std::vector<std::int64_t>> out;
  for (const auto& t : lgreco::traces::find_model_preset(name).tensors) out.push_back(t.shape);
  return out;
}

// Elements sent per step under the hook's counting rule, written out independently of wire_bytes.
double counted_elements(const std::vector<std::vector<std::int64_t>>& shapes, std::int64_t rank) {
  double sent = 0;
  for (const auto& s : shapes) {
    const std::int64_t n = s[0], m = *lgreco::shape_numel(s) / n, r = std::min<std::int64_t>({n, m, rank});
    sent += (n + m) * r * 2 < n * m ? static_cast<double>(r * (n + m)) : static_cast<double>(n * m);
  }
  return sent;
}

}  // namespace

TEST_CASE("wire bytes of uniform PowerSGD follow the counting rule on every preset", "[ratios]") {
  for (const auto& preset : lgreco::traces::model_presets()) {
    std::vector<std::vector<std::int64_t>> shapes;
    for (const auto& t : preset.tensors) shapes.push_back(t.shape);
    for (std::int64_t rank : {1, 4, 32}) {
      const auto spec = lgreco::kernels::parse_method_text("powersgd:rank=" + std::to_string(rank));
      double sent = 0;
      for (const auto& s : shapes) sent += static_cast<double>(lgreco::kernels::wire_size(spec, s).bytes);
      CAPTURE(preset.name, rank);
      REQUIRE(sent == 4 * counted_elements(shapes, rank));
      REQUIRE(sent < 4.0 * static_cast<double>(preset.parameters()));
    }
  }
}

TEST_CASE("uniform PowerSGD ratios of ResNet-18 match the paper (243x, 136x, 72x)", "[ratios]") {
  const auto shapes = preset_shapes("resnet18");
  REQUIRE(shapes == resnet18_cifar_shapes());
  std::int64_t params = 0;
  for (const auto& s : shapes) params += *lgreco::shape_numel(s);
  REQUIRE(params == 11173962);
  const std::vector<std::pair<int, double>> expected = {{1, 243}, {2, 136}, {4, 72}};
  for (auto [rank, ratio] : expected) {
    const auto spec = lgreco::kernels::parse_method_text("powersgd:rank=" + std::to_string(rank));
    double sent = 0;
    for (const auto& s : shapes) sent += static_cast<double>(lgreco::kernels::wire_size(spec, s).bytes);
    const double sent_elements = counted_elements(shapes, rank);
    CAPTURE(rank, sent, sent_elements);
    REQUIRE(sent == 4 * sent_elements);
    CHECK(std::round(4.0 * params / sent) == ratio);
  }
}
