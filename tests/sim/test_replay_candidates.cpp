// Candidate sets (sim/replay_candidates.hpp): L-GreCo's rank range and the analogous ranges.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/error.hpp"
#include "kernels/wire.hpp"
#include "sim/replay_candidates.hpp"

using namespace lgreco;
using namespace lgreco::sim;
using kernels::Method;

namespace {
FamilyDefaults defaults(Family f, std::vector<std::pair<std::string, std::string>> kv = {}) {
  return parse_family_defaults(f, kv);
}
}  // namespace

TEST_CASE("powersgd: ranks floor(r/2)..2r on compressible matrices, none elsewhere") {
  const std::vector<std::int64_t> conv = {256, 128, 3, 3};
  auto s = make_candidates(Family::kPowerSgd, defaults(Family::kPowerSgd, {{"rank", "4"}}), conv);
  REQUIRE(s.candidates.size() == 7);
  for (int i = 0; i < 7; ++i) {
    CHECK(s.candidates[i].method == Method::kPowerSgd);
    CHECK(s.candidates[i].powersgd.rank == i + 2);
  }
  CHECK(s.candidates[s.default_index].powersgd.rank == 4);
  CHECK(s.planned);
  // A bias and a matrix that rank 4 does not compress: only "none".
  for (std::vector<std::int64_t> shape : {std::vector<std::int64_t>{256}, {8, 8}}) {
    auto t = make_candidates(Family::kPowerSgd, defaults(Family::kPowerSgd), shape);
    REQUIRE(t.candidates.size() == 1);
    CHECK(t.candidates[0].method == Method::kNone);
    CHECK_FALSE(t.planned);
  }
  // Rank 1: rank 0 ("send nothing") is a candidate.
  auto r1 = make_candidates(Family::kPowerSgd, defaults(Family::kPowerSgd, {{"rank", "1"}}), conv);
  CHECK(r1.candidates.front().powersgd.rank == 0);
}

TEST_CASE("powersgd: ranks past compressibility become one 'none' candidate") {
  // 40×40 at rate 2: compressible iff 80·r·2 < 1600, i.e. r < 10. Default 8 → ranks 4..16.
  const std::vector<std::int64_t> shape = {40, 40};
  auto s = make_candidates(Family::kPowerSgd, defaults(Family::kPowerSgd, {{"rank", "8"}}), shape);
  int none = 0, max_rank = 0;
  for (const auto& c : s.candidates) {
    if (c.method == Method::kNone) ++none;
    else max_rank = std::max(max_rank, c.powersgd.rank);
  }
  CHECK(none == 1);
  CHECK(max_rank == 9);
  CHECK(s.candidates.size() == 7);  // ranks 4..9 and none
}

TEST_CASE("topk: five geometric densities around the default; qsgd/maxmin: bits b/2..2b") {
  const std::vector<std::int64_t> shape = {512, 512};
  auto t = make_candidates(Family::kTopK, defaults(Family::kTopK, {{"density", "0.01"}}), shape);
  REQUIRE(t.candidates.size() == 5);
  for (int j = 0; j < 5; ++j) CHECK(t.candidates[j].topk.density == Approx(0.01 * std::pow(2.0, (j - 2) / 2.0)));
  CHECK(t.default_index == 2);
  auto m = make_candidates(Family::kMaxMin, defaults(Family::kMaxMin), shape);
  REQUIRE(m.candidates.size() == 7);
  CHECK(m.candidates.front().maxmin.bits == 2);
  CHECK(m.candidates.back().maxmin.bits == 8);
  auto q = make_candidates(Family::kQsgd, defaults(Family::kQsgd, {{"bits", "4"}}), shape);
  REQUIRE(q.candidates.size() == 7);
  CHECK(q.candidates[q.default_index].qsgd.levels == 7);
  CHECK(q.candidates.back().qsgd.levels == 127);
  // Biases are not planned.
  CHECK(make_candidates(Family::kTopK, defaults(Family::kTopK), std::vector<std::int64_t>{4096}).candidates.size() == 1);
}

TEST_CASE("mixed: PowerSGD ranks and max-min bits on matrices, max-min on the rest, none when small") {
  const auto d = defaults(Family::kMixed, {{"rank", "4"}, {"bits", "4"}});
  auto big = make_candidates(Family::kMixed, d, std::vector<std::int64_t>{512, 256});
  CHECK(big.candidates.size() == 7 + 7);
  CHECK(big.candidates[big.default_index].method == Method::kPowerSgd);
  auto embed_like = make_candidates(Family::kMixed, d, std::vector<std::int64_t>{16, 2048});  // (16+2048)·4·2 > 16·2048? no: 16512 < 32768
  CHECK(embed_like.planned);
  auto thin = make_candidates(Family::kMixed, d, std::vector<std::int64_t>{4, 4096});  // 4100·4·2 > 16384: not PowerSGD
  CHECK(thin.candidates.size() == 7);
  CHECK(thin.candidates[thin.default_index].method == Method::kMaxMin);
  auto small = make_candidates(Family::kMixed, d, std::vector<std::int64_t>{64});
  CHECK(small.candidates.size() == 1);
  CHECK_THROWS_AS(parse_family_defaults(Family::kMixed, {{"no_such", "1"}}), ConfigError);
  CHECK_THROWS_AS(family_from_name("sgd"), ConfigError);
}

TEST_CASE("all: PowerSGD ranks, top-k densities and max-min bits together") {
  const auto d = defaults(Family::kAll);
  auto big = make_candidates(Family::kAll, d, std::vector<std::int64_t>{512, 256});
  CHECK(big.candidates.size() == 7 + 5 + 7);
  CHECK(big.candidates[big.default_index].method == Method::kPowerSgd);
  auto thin = make_candidates(Family::kAll, d, std::vector<std::int64_t>{4, 4096});
  CHECK(thin.candidates.size() == 5 + 7);
  CHECK(thin.candidates[thin.default_index].method == Method::kMaxMin);
  CHECK(parse_family_defaults(Family::kAll, {{"density", "0.02"}}).sparse.topk.density == 0.02);
}
