// Uniform PowerSGD compression ratios follow the DDP hook's counting rule: a matrix n × m
// (n = shape[0], m = numel/n) with (n+m)·r·2 < n·m sends r·(n+m) elements, everything else n·m.
// For the PowerSGD paper's ResNet-18 (CIFAR variant) the ratios at rank 1/2/4 are 243×, 136×, 72×.
//
// The shapes are written out here from the CIFAR ResNet-18 architecture (3×3 stem with 64
// channels, four stages of two BasicBlocks with 64/128/256/512 channels, 1×1 projection shortcuts
// with batch norm where the stage changes, 10-way classifier): 11,173,962 parameters.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "planner/methods.hpp"

using namespace lgreco::planner;

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

}  // namespace

TEST_CASE("uniform PowerSGD ratios of ResNet-18 match the paper (243x, 136x, 72x)", "[ratios]") {
  const auto shapes = resnet18_cifar_shapes();
  std::int64_t params = 0;
  for (const auto& s : shapes) params += shape_numel(s);
  REQUIRE(params == 11173962);
  const std::vector<std::pair<int, double>> expected = {{1, 243}, {2, 136}, {4, 72}};
  for (auto [rank, ratio] : expected) {
    const MethodSpec spec = parse_method_text("powersgd:rank=" + std::to_string(rank), "test");
    double sent = 0, sent_elements = 0;
    for (const auto& s : shapes) {
      sent += *wire_bytes(spec, s);
      // The counting rule, written out independently of wire_bytes.
      const std::int64_t n = s[0], m = shape_numel(s) / n, r = std::min<std::int64_t>({n, m, rank});
      sent_elements += (n + m) * r * 2 < n * m ? static_cast<double>(r * (n + m)) : static_cast<double>(n * m);
    }
    CAPTURE(rank, sent, sent_elements);
    REQUIRE(sent == 4 * sent_elements);
    CHECK(std::round(4.0 * params / sent) == ratio);
  }
}
