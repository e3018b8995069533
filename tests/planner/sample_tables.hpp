#pragma once
// A small two-window tables document shared by the planner tests.
#include <catch2/catch.hpp>

#include "kernels/method.hpp"
#include "planner/tables.hpp"

namespace lgreco::planner::testing {

// A two-window table with PowerSGD ranks 1..4 on two matrices and an uncompressed bias.
inline Tables sample_tables() {
  Tables t;
  t.model = "toy";
  t.world_size = 4;
  for (int w = 0; w < 2; ++w) {
    Window win;
    win.start_step = 100 + 50 * w;
    win.end_step = 150 + 50 * w;
    int order = 0;
    for (auto [name, n, m] : {std::tuple{"fc2.weight", 64, 256}, std::tuple{"fc1.weight", 256, 128}}) {
      LayerTable l;
      l.name = name;
      l.shape = {n, m};
      l.numel = n * m;
      l.bucket = 0;
      l.backward_order = order++;
      for (int r = 1; r <= 4; ++r) {
        const double error = (5.0 - r) * (w + 1) * (n == 64 ? 1.0 : 2.0);
        const Candidate c = make_candidate(kernels::parse_method("powersgd", {{"rank", std::to_string(r)}}), l.shape, error);
        REQUIRE(c.bytes == 4.0 * r * (n + m));  // compressible at every rank here: 4·r·(n + m)
        l.candidates.push_back(c);
      }
      l.default_index = 1;  // rank 2
      win.layers.push_back(l);
    }
    LayerTable b;
    b.name = "fc1.bias";
    b.shape = {256};
    b.numel = 256;
    b.kind = "bias";
    b.bucket = 1;
    b.backward_order = order;
    b.candidates = {make_candidate(kernels::MethodSpec{}, b.shape, 0.0)};
    win.layers.push_back(b);
    t.windows.push_back(win);
  }
  return t;
}


}  // namespace lgreco::planner::testing
