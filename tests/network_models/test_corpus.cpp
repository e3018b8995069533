// The measurement corpus: every file reads, resolves its topology and re-derives its times from the
// published figures; the reader is strict.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>

#include "network_models/corpus.hpp"
#include "network_models/corpus_fit.hpp"
#include "tests/network_models/support.hpp"

using namespace lgreco;
using namespace lgreco::net;

namespace {

// Times in the files are written with 4-5 significant digits; re-deriving them from the published
// figure must agree to that rounding (the figure's own rounding is the file's stated uncertainty).
constexpr double kDerivationTolerance = 5e-4;

const char* kGood =
    "# title line\n"
    "# system: s\n# machine: m\n# topology: dgx-a100\n# benchmark: nccl-tests\n# gpus_per_process: 1\n"
    "# nccl: 2.27.7\n# source: https://github.com/x/y f.md\n# derived: time_us = S / algbw\n"
    "collective\tranks\tsize_bytes\ttime_us\tpublished\n"
    "allreduce\t8\t1048576\t100\ttime_us=100\n";

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("corpus files read, name their source and resolve every row's topology", "[corpus]") {
  const auto files = load_corpus_dir(testing::corpus_dir());
  std::set<std::string> systems;
  for (const auto& f : files) {
    CAPTURE(f.origin);
    systems.insert(f.system);
    CHECK(f.source.rfind("https://", 0) == 0);
    CHECK_FALSE(f.nccl.empty());
    CHECK_FALSE(f.derived.empty());
    INFO("a file kept out of the fit belongs in excluded/");
    CHECK(f.excluded.empty());
  }
  // Issue 13 asks for at least 8 systems.
  CHECK(systems.size() >= 8);
  const auto prepared = prepare_corpus(files);
  REQUIRE(prepared.size() == files.size());
  for (const auto& p : prepared)
    for (const auto& r : p.file.rows) CHECK(p.embeddings.count(r.ranks) == 1);
}

TEST_CASE("files kept out of the fit say why, read and resolve like the corpus", "[corpus]") {
  const auto excluded = load_corpus_dir(testing::corpus_dir() / "excluded");
  std::set<std::string> fitted;
  for (const auto& f : load_corpus_dir(testing::corpus_dir())) fitted.insert(f.system);
  for (const auto& p : prepare_corpus(excluded)) {
    CAPTURE(p.file.origin);
    CHECK_FALSE(p.file.excluded.empty());
    CHECK(p.file.source.rfind("https://", 0) == 0);
    CHECK(fitted.count(p.file.system) == 0);
    for (const auto& r : p.file.rows) CHECK(p.embeddings.count(r.ranks) == 1);
  }
}

TEST_CASE("corpus times follow from the published figures", "[corpus]") {
  auto files = load_corpus_dir(testing::corpus_dir());
  for (auto& f : load_corpus_dir(testing::corpus_dir() / "excluded")) files.push_back(std::move(f));
  for (const auto& f : files) {
    for (const auto& r : f.rows) {
      CAPTURE(f.origin, r.line, r.published);
      // nccl-tests convention (PERFORMANCE.md): algbw = S / t, busbw = algbw · factor.
      if (r.published_time_s) CHECK(r.time_s == Approx(*r.published_time_s).epsilon(1e-12));
      if (r.algbw_Bps) CHECK(r.time_s == Approx(r.size_bytes / *r.algbw_Bps).epsilon(kDerivationTolerance));
      if (r.busbw_Bps && !r.algbw_Bps)
        CHECK(r.time_s == Approx(r.size_bytes * busbw_factor(r.collective, r.ranks) / *r.busbw_Bps).epsilon(kDerivationTolerance));
    }
  }
}

TEST_CASE("corpus reader: bad files name the file, the line and the field", "[corpus]") {
  CHECK(parse_corpus(kGood, "g.tsv").rows.size() == 1);
  CHECK(is_corpus_text(kGood));
  CHECK_FALSE(is_corpus_text("# nThread 1 nGpus 8\n"));
  CHECK_THROWS_WITH(parse_corpus(replaced(kGood, "# machine: m\n", "# colour: red\n"), "b.tsv"),
                    Catch::Contains("b.tsv:3") && Catch::Contains("colour"));
  CHECK_THROWS_WITH(parse_corpus(replaced(kGood, "# source: https://github.com/x/y f.md\n", ""), "b.tsv"),
                    Catch::Contains("b.tsv") && Catch::Contains("source"));
  CHECK_THROWS_WITH(parse_corpus(replaced(kGood, "nccl-tests", "mpi"), "b.tsv"), Catch::Contains("mpi"));
  CHECK_THROWS_WITH(parse_corpus(replaced(kGood, "time_us\tpublished", "time\tpublished"), "b.tsv"), Catch::Contains("b.tsv:10"));
  CHECK_THROWS_WITH(parse_corpus(replaced(kGood, "\t100\ttime", "\t-1\ttime"), "b.tsv"), Catch::Contains("b.tsv:11") && Catch::Contains("-1"));
  CHECK_THROWS_WITH(parse_corpus(replaced(kGood, "allreduce\t8", "allreduce\t1"), "b.tsv"), Catch::Contains("ranks"));
  CHECK_THROWS_WITH(parse_corpus(replaced(kGood, "time_us=100", "peak"), "b.tsv"), Catch::Contains("peak"));
  CHECK_THROWS_WITH(parse_corpus(replaced(kGood, "time_us=100", "note=x"), "b.tsv"), Catch::Contains("busbw_GBps"));
  CHECK_THROWS_WITH(parse_corpus(replaced(kGood, "allreduce\t8", "alltoall\t8"), "b.tsv"), Catch::Contains("alltoall"));
  // Sizes past what any command accepts (units::kMaxBytes, below 2^64) are refused like --sizes refuses them.
  CHECK(parse_corpus(replaced(kGood, "\t1048576\t", "\t18000000000000000000\t"), "g.tsv").rows.size() == 1);
  CHECK_THROWS_WITH(parse_corpus(replaced(kGood, "\t1048576\t", "\t18000000000000000001e1\t"), "b.tsv"),
                    Catch::Contains("b.tsv:11") && Catch::Contains("size_bytes") && Catch::Contains("1.8e+19"));
  CHECK_THROWS_AS(load_corpus_dir(testing::corpus_dir() / "no-such-dir"), lgreco::InputError);
}

TEST_CASE("predictions carry the benchmark's host cost only when asked", "[corpus]") {
  const auto prepared = prepare_corpus({parse_corpus(kGood, "g.tsv")});
  CorpusFile torch = parse_corpus(replaced(kGood, "nccl-tests", "pytorch"), "t.tsv");
  const auto both = prepare_corpus({torch});
  const CorpusConstants& k = corpus_constants();
  const double with = predict_file(both[0], k, true)[0].predicted_s, without = predict_file(both[0], k, false)[0].predicted_s;
  // One process per GPU: the PyTorch term alone (preset_constants.hpp).
  CHECK(with - without == Approx(k.pytorch_overhead_s).epsilon(1e-9));
  CHECK(predict_file(prepared[0], k, true)[0].predicted_s == without);
}

TEST_CASE("the fit's Jacobian columns recompute only the files a constant reaches, with the same residuals", "[corpus]") {
  const auto files = prepare_corpus(load_corpus_dir(testing::corpus_dir()));
  std::vector<const PreparedFile*> all;
  for (const auto& f : files) all.push_back(&f);
  const LmProblem pb = corpus_fit_problem(all);
  REQUIRE(pb.residuals_after_change);
  REQUIRE(pb.centre.size() == corpus_constant_defs().size());
  std::mt19937_64 gen(7);
  std::size_t partial_columns = 0;  // columns that leave some residual as it was: the shortcut is used
  for (int point = 0; point < 3; ++point) {
    std::vector<double> x = pb.centre;
    for (std::size_t j = 0; j < x.size(); ++j) x[j] += point == 0 ? 0.0 : lm_gaussian(gen) * std::min(pb.sigma[j], 1.0);
    lm_clamp(pb, x);
    const auto r = pb.residuals(x);
    for (std::size_t j = 0; j < x.size(); ++j) {
      auto xh = x;
      xh[j] += 0.3;
      const auto full = pb.residuals(xh), changed = pb.residuals_after_change(xh, j, r);
      CAPTURE(point, corpus_constant_defs()[j].name);
      REQUIRE(changed.size() == full.size());
      std::size_t differing = 0, kept = 0;
      for (std::size_t i = 0; i < full.size(); ++i) {
        differing += changed[i] != full[i];  // bit for bit: the fit's result may not depend on the shortcut
        kept += changed[i] == r[i];
      }
      CHECK(differing == 0);
      partial_columns += kept > full.size() / 2;
    }
  }
  CHECK(partial_columns > 0);
}

TEST_CASE("basin hopping crosses local optima that stop Levenberg–Marquardt, and never ends worse", "[corpus]") {
  // One parameter, residuals (x − 3, 1.5·sin 5x): a local minimum near every multiple of π/5, the global one
  // near x = 3. Levenberg–Marquardt from 0 stops in the first basin; hops of one σ walk basin by basin.
  LmProblem pb;
  pb.residuals = [](const std::vector<double>& x) { return std::vector<double>{x[0] - 3, 1.5 * std::sin(5 * x[0])}; };
  pb.centre = {0}, pb.sigma = {1}, pb.lo = {-10}, pb.hi = {10};
  pb.prior_weight = 0, pb.cauchy_scale = 1e6;  // plain least squares
  const std::vector<double> x0 = levenberg_marquardt(pb, {0.0});
  const LmEnd start{x0, lm_end_objective(pb, x0)};
  REQUIRE(start.objective > 1);  // stuck far from x = 3
  std::mt19937_64 gen(11), again(11);
  const LmEnd end = lm_basin_hopping(pb, start, 40, 1.0, gen);
  CHECK(end.objective <= start.objective);
  CHECK(end.objective < 0.1);
  CHECK(std::abs(end.x[0] - 3) < 0.2);
  CHECK(end.objective == lm_end_objective(pb, end.x));
  const LmEnd same = lm_basin_hopping(pb, start, 40, 1.0, again);  // the same seed: the same end, bit for bit
  CHECK(same.x == end.x);
  // Zero hops: the start comes back as it was; each further hop can only lower the objective.
  std::mt19937_64 g0(3);
  CHECK(lm_basin_hopping(pb, start, 0, 1.0, g0).x == start.x);
  double last = start.objective;
  for (int hops = 1; hops <= 8; ++hops) {
    std::mt19937_64 g(5);
    const double f = lm_basin_hopping(pb, start, hops, 1.0, g).objective;
    CHECK(f <= last);
    last = f;
  }
}

TEST_CASE("the corpus fit's chains give the same fit on any thread count; its near optima come best first", "[corpus]") {
  const auto files = prepare_corpus(load_corpus_dir(testing::corpus_dir()));
  std::vector<const PreparedFile*> some;
  for (const auto& f : files) {
    const std::string name = std::filesystem::path(f.file.origin).filename().string();
    if (name == "a100-dgx-nccltests.tsv" || name == "h200-hgx-pytorch.tsv" || name == "p4dn-a100-efa-nccltests.tsv") some.push_back(&f);
  }
  REQUIRE(some.size() == 3);
  const FitSearch search{3, 4, 0.2};
  const CorpusFit one = fit_corpus(some, search, 1), two = fit_corpus(some, search, 2);
  CHECK(one.objective == two.objective);
  CHECK(one.search.chains == 3);
  CHECK(one.search.hops == 4);
  REQUIRE_FALSE(one.near_optima.empty());
  REQUIRE(one.near_optima.size() == two.near_optima.size());
  CHECK(one.near_optima.front().objective == one.objective);
  for (std::size_t i = 0; i < one.near_optima.size(); ++i) {
    CHECK(one.near_optima[i].objective == two.near_optima[i].objective);
    if (i > 0) CHECK(one.near_optima[i].objective >= one.near_optima[i - 1].objective);
    CHECK(one.near_optima[i].objective <= one.objective * (1 + kNearOptimum));
  }
  for (const auto& d : corpus_constant_defs()) {
    CorpusConstants a = one.constants, b = two.constants;  // copies: ref needs them mutable
    CAPTURE(d.name);
    CHECK(d.ref(a) == d.ref(b));
  }
  // Hops only ever lower a chain's objective: more hops cannot end above fewer.
  const CorpusFit more = fit_corpus(some, FitSearch{3, 8, 0.2}, 2);
  CHECK(more.objective <= one.objective);
}

TEST_CASE("lm_curvature splits each parameter's curvature into its rows and its prior", "[corpus]") {
  // Linear residuals (2·x0, x0 + x1, 3·x1): ∂r/∂x0 = (2, 1, 0), ∂r/∂x1 = (0, 1, 3); unit weights (a huge
  // Cauchy scale), prior (λ/σ_j)² with λ 0.05 and σ (1, 0.5).
  LmProblem pb;
  pb.residuals = [](const std::vector<double>& x) { return std::vector<double>{2 * x[0], x[0] + x[1], 3 * x[1]}; };
  pb.centre = {0, 0}, pb.sigma = {1, 0.5}, pb.lo = {-10, -10}, pb.hi = {10, 10};
  pb.cauchy_scale = 1e9;
  const LmCurvature c = lm_curvature(pb, {0.3, -0.2});
  REQUIRE(c.data.size() == 2);
  const std::vector<double> want0{4, 1, 0}, want1{0, 1, 9};
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(c.data[0][i] == Approx(want0[i]).margin(1e-6));
    CHECK(c.data[1][i] == Approx(want1[i]).margin(1e-6));
  }
  CHECK(c.prior[0] == Approx(0.0025));
  CHECK(c.prior[1] == Approx(0.01));
  // The Cauchy weights enter: a row whose residual equals the scale c weighs 1/√2.
  pb.cauchy_scale = 0.6;  // residual 2·0.3 = 0.6 of row 0
  CHECK(lm_curvature(pb, {0.3, -0.2}).data[0][0] == Approx(4 / std::sqrt(2.0)).epsilon(1e-4));
}

TEST_CASE("lm_standard_errors are ordinary least squares' on a linear problem", "[corpus]") {
  // r_i = x0 + t_i·x1 − y_i, t = 0..3, y = (1, 3, 2, 5): the least-squares line is 1.1 + 1.1·t, the residuals
  // (0.1, −0.8, 1.3, −0.6), s² = 2.7 / (4 − 2) = 1.35 and (AᵀA)⁻¹ = [[0.7, −0.3], [−0.3, 0.2]], so the standard
  // errors are √(1.35·0.7) and √(1.35·0.2). Unit weights and a negligible prior.
  LmProblem pb;
  pb.residuals = [](const std::vector<double>& x) {
    const double y[] = {1, 3, 2, 5};
    std::vector<double> r;
    for (int t = 0; t < 4; ++t) r.push_back(x[0] + t * x[1] - y[t]);
    return r;
  };
  pb.centre = {0, 0}, pb.sigma = {1, 1}, pb.lo = {-10, -10}, pb.hi = {10, 10};
  pb.cauchy_scale = 1e9, pb.prior_weight = 1e-9;
  const LmCurvature c = lm_curvature(pb, {1.1, 1.1});
  CHECK(lm_residual_variance(c) == Approx(1.35).epsilon(1e-6));
  const auto se = lm_standard_errors(c, lm_gram(c), lm_residual_variance(c));
  REQUIRE(se.size() == 2);
  CHECK(se[0] == Approx(std::sqrt(1.35 * 0.7)).epsilon(1e-5));
  CHECK(se[1] == Approx(std::sqrt(1.35 * 0.2)).epsilon(1e-5));
  // Without the last two rows (t = 2, 3) the slope rests on two points: a larger error for the same s².
  const auto fewer = lm_standard_errors(c, lm_gram(c, [](std::size_t i) { return i < 2; }), 1.35);
  CHECK(fewer[1] > se[1]);
  CHECK(fewer[1] == Approx(std::sqrt(1.35 * 2.0)).epsilon(1e-5));  // (AᵀA)⁻¹ of t = 0, 1: [[1, −1], [−1, 2]]
}

TEST_CASE("lm_inverse inverts a symmetric positive definite matrix", "[corpus]") {
  const std::vector<std::vector<double>> a{{4, 1, 0.5}, {1, 3, 0.2}, {0.5, 0.2, 2}};
  const auto inv = lm_inverse(a);
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t k = 0; k < 3; ++k) {
      double s = 0;
      for (std::size_t m = 0; m < 3; ++m) s += a[i][m] * inv[m][k];
      CHECK(s == Approx(i == k ? 1.0 : 0.0).margin(1e-12));
    }
  }
  // Pivoting: a zero on the diagonal does not stop it.
  const auto swap = lm_inverse({{0, 2}, {2, 1}});
  CHECK(swap[0][0] == Approx(-0.25));
  CHECK(swap[0][1] == Approx(0.5));
  CHECK(swap[1][1] == Approx(0.0).margin(1e-15));
}

TEST_CASE("what pins each constant: shares of the prior and of the systems that reach it add up to 1", "[corpus]") {
  const auto files = prepare_corpus(load_corpus_dir(testing::corpus_dir()));
  std::vector<const PreparedFile*> some;
  std::map<std::string, std::set<double>> sizes;  // by system
  for (const auto& f : files) {
    const std::string name = std::filesystem::path(f.file.origin).filename().string();
    if (name != "a100-dgx-nccltests.tsv" && name != "h200-hgx-pytorch.tsv" && name != "p4dn-a100-efa-nccltests.tsv") continue;
    some.push_back(&f);
    for (const auto& r : f.file.rows) sizes[f.file.system].insert(r.size_bytes);
  }
  REQUIRE(some.size() == 3);
  const auto evidence = constant_evidence(some, corpus_constants());
  REQUIRE(evidence.size() == corpus_constant_defs().size());
  std::map<std::string, const ConstantEvidence*> by_name;
  for (std::size_t j = 0; j < evidence.size(); ++j) {
    const ConstantEvidence& e = evidence[j];
    CAPTURE(e.name);
    CHECK(e.name == corpus_constant_defs()[j].name);
    by_name[e.name] = &e;
    double sum = e.prior_share;
    for (std::size_t s = 0; s < e.systems.size(); ++s) {
      const auto& sys = e.systems[s];
      CHECK(sys.share > 0);
      if (s > 0) CHECK(sys.share <= e.systems[s - 1].share);
      sum += sys.share;
      REQUIRE(sizes.count(sys.system) == 1);
      CHECK(sizes[sys.system].count(sys.min_size_bytes) == 1);
      CHECK(sizes[sys.system].count(sys.max_size_bytes) == 1);
      CHECK(sys.min_size_bytes <= sys.max_size_bytes);
      CHECK(sys.rows >= 1);
      CHECK_FALSE(sys.ranks.empty());
    }
    CHECK(sum == Approx(1.0).epsilon(1e-12));
    // Rows only add information, and taking a system's rows out only takes it away: the standard error is at
    // most the prior's alone, and at least what it is with every row.
    CHECK(e.std_ln > 0);
    CHECK(e.std_ln <= e.prior_std_ln * (1 + 1e-9));
    for (const auto& sys : e.systems) {
      CHECK(sys.std_ln_without >= e.std_ln * (1 - 1e-9));
      CHECK(sys.std_ln_without <= e.prior_std_ln * (1 + 1e-9));
    }
  }
  // No socket, TCPX or EFA v2 file among the three: those constants are their prior alone.
  for (const char* name : {"eta_socket", "hop_ll_socket", "tcpx_eta_factor", "efa2_eta_factor"}) {
    CAPTURE(name);
    CHECK(by_name.at(name)->prior_share == 1.0);
    CHECK(by_name.at(name)->systems.empty());
    // No row reaches it, so nothing couples it to the others: its standard error is the prior's.
    CHECK(by_name.at(name)->std_ln == Approx(by_name.at(name)->prior_std_ln).epsilon(1e-9));
  }
  // PyTorch's per-call cost reaches the PyTorch file alone; EFA v1's efficiency the p4dn file alone.
  const auto& torch = *by_name.at("pytorch_overhead");
  REQUIRE(torch.systems.size() == 1);
  CHECK(torch.systems[0].system == "hgx-h200");
  CHECK(torch.systems[0].share > 0.9);
  const auto& efa1 = *by_name.at("efa1_eta_factor");
  REQUIRE(efa1.systems.size() == 1);
  CHECK(efa1.systems[0].system == "aws-p4dn");
}
