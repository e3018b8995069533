// NCCL's algorithm and protocol restrictions: NCCL's list syntax (its own examples), the strict parser,
// and the model honouring them by both selection rules, in the corpus and in every command's cost.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "core/error.hpp"
#include "network_models/collectives.hpp"
#include "network_models/corpus.hpp"
#include "network_models/corpus_fit.hpp"
#include "network_models/presets.hpp"

using namespace lgreco;
using namespace lgreco::net;

namespace {

constexpr Collective kColls[] = {Collective::kAllreduce, Collective::kAllgather, Collective::kReduceScatter, Collective::kBroadcast};

bool algo(const NcclEnv& e, Collective c, Algorithm a) { return e.algorithm[static_cast<int>(c)][static_cast<int>(a)]; }
bool proto(const NcclEnv& e, Collective c, Protocol p) { return e.protocol[static_cast<int>(c)][static_cast<int>(p)]; }

std::vector<double> sizes() {
  std::vector<double> s;
  for (double b = 8; b <= 8.0 * (1ull << 30); b *= 4) s.push_back(b);
  return s;
}

}  // namespace

TEST_CASE("NCCL_ALGO and NCCL_PROTO follow NCCL's list syntax (the examples in its tuning.cc)", "[nccl_env]") {
  const NcclEnv none = parse_nccl_env("", "t");
  CHECK_FALSE(none.restricted());
  for (auto c : kColls) {
    for (int a = 0; a < kNumAlgorithms; ++a) CHECK(none.algorithm[static_cast<int>(c)][a]);
    for (int p = 0; p < kNumProtocols; ++p) CHECK(none.protocol[static_cast<int>(c)][p]);
  }

  // "Enable ring and collnetdirect for all functions, then select tree and collnetdirect for allreduce
  // and ring for broadcast."
  const NcclEnv a = parse_nccl_env("NCCL_ALGO=ring,collnetdirect;allreduce:tree,collnetdirect;broadcast:ring", "t");
  CHECK(a.text == "NCCL_ALGO=ring,collnetdirect;allreduce:tree,collnetdirect;broadcast:ring");
  CHECK(algo(a, Collective::kAllreduce, Algorithm::kTree));
  CHECK_FALSE(algo(a, Collective::kAllreduce, Algorithm::kRing));
  CHECK_FALSE(algo(a, Collective::kAllreduce, Algorithm::kNvls));
  CHECK(algo(a, Collective::kBroadcast, Algorithm::kRing));
  CHECK(algo(a, Collective::kAllgather, Algorithm::kRing));
  CHECK_FALSE(algo(a, Collective::kAllgather, Algorithm::kNvls));
  CHECK_FALSE(algo(a, Collective::kReduceScatter, Algorithm::kTree));

  // "Enable LL and Simple for all functions, but everything except LL for allreduce."
  const NcclEnv p = parse_nccl_env("NCCL_PROTO=LL,Simple;allreduce:^LL", "t");
  CHECK(proto(p, Collective::kAllgather, Protocol::kLL));
  CHECK_FALSE(proto(p, Collective::kAllgather, Protocol::kLL128));
  CHECK(proto(p, Collective::kAllgather, Protocol::kSimple));
  CHECK_FALSE(proto(p, Collective::kAllreduce, Protocol::kLL));
  CHECK(proto(p, Collective::kAllreduce, Protocol::kLL128));
  CHECK(proto(p, Collective::kAllreduce, Protocol::kSimple));

  // "Enable everything but LL128, but only LL128 for allreduce." Case-insensitive names and functions.
  const NcclEnv q = parse_nccl_env("NCCL_PROTO=^ll128;AllReduce:LL128", "t");
  CHECK(proto(q, Collective::kBroadcast, Protocol::kLL));
  CHECK_FALSE(proto(q, Collective::kBroadcast, Protocol::kLL128));
  CHECK(proto(q, Collective::kAllreduce, Protocol::kLL128));
  CHECK_FALSE(proto(q, Collective::kAllreduce, Protocol::kSimple));

  const NcclEnv nvls = parse_nccl_env("NCCL_NVLS_ENABLE=0", "t");
  for (auto c : kColls) {
    CHECK_FALSE(algo(nvls, c, Algorithm::kNvls));
    CHECK_FALSE(algo(nvls, c, Algorithm::kNvlsTree));
    CHECK(algo(nvls, c, Algorithm::kRing));
  }
  CHECK(algo(parse_nccl_env("NCCL_NVLS_ENABLE=2", "t"), Collective::kAllreduce, Algorithm::kNvls));

  // NCCL 2.4: the tree for buffers of at most T bytes.
  const NcclEnv t = parse_nccl_env("NCCL_TREE_THRESHOLD=65536", "t");
  CHECK(t.allows(Collective::kAllreduce, Algorithm::kTree, Protocol::kLL, 65536));
  CHECK_FALSE(t.allows(Collective::kAllreduce, Algorithm::kTree, Protocol::kLL, 65537));
  CHECK(t.allows(Collective::kAllreduce, Algorithm::kRing, Protocol::kLL, 1e9));
  // The hierarchical what-if algorithm is not NCCL's: NCCL_ALGO does not name it.
  CHECK(parse_nccl_env("NCCL_ALGO=ring", "t").allows(Collective::kAllreduce, Algorithm::kHierarchical, Protocol::kSimple, 1e6));
}

TEST_CASE("NCCL environment: bad text names the source, the variable and the value", "[nccl_env]") {
  CHECK_THROWS_WITH(parse_nccl_env("NCCL_ALGO=ring;tree", "f.tsv:8"), Catch::Contains("f.tsv:8") && Catch::Contains("prefix"));
  CHECK_THROWS_WITH(parse_nccl_env("NCCL_ALGO=rign", "x"), Catch::Contains("rign") && Catch::Contains("Ring"));
  CHECK_THROWS_WITH(parse_nccl_env("NCCL_PROTO=alltoall:LL", "x"), Catch::Contains("alltoall"));
  CHECK_THROWS_WITH(parse_nccl_env("NCCL_PROTO=LL NCCL_PROTO=Simple", "x"), Catch::Contains("twice"));
  CHECK_THROWS_WITH(parse_nccl_env("NCCL_PROTO=", "x"), Catch::Contains("no value"));
  CHECK_THROWS_WITH(parse_nccl_env("NCCL_PROTO=^", "x"), Catch::Contains("names nothing"));
  CHECK_THROWS_WITH(parse_nccl_env("NCCL_ALGO=;;", "x"), Catch::Contains("names nothing"));
  CHECK_THROWS_WITH(parse_nccl_env("NCCL_NVLS_ENABLE=yes", "x"), Catch::Contains("yes"));
  CHECK_THROWS_WITH(parse_nccl_env("NCCL_NVLS_ENABLE=3", "x"), Catch::Contains("expected 0, 1 or 2"));
  CHECK_THROWS_WITH(parse_nccl_env("NCCL_TREE_THRESHOLD=-1", "x"), Catch::Contains("-1"));
  CHECK_THROWS_WITH(parse_nccl_env("NCCL_TREE_THRESHOLD=99999999999999999999999", "x"), Catch::Contains("not an integer"));
  CHECK_THROWS_WITH(parse_nccl_env("NCCL_IB_HCA=mlx5_0", "x"), Catch::Contains("NCCL_IB_HCA") && Catch::Contains("NCCL_ALGO"));
  CHECK_THROWS_WITH(parse_nccl_env("ring", "x"), Catch::Contains("NAME=VALUE"));
  CHECK_THROWS_AS(parse_nccl_env("NCCL_ALGO=ring:tree:x", "x"), ConfigError);
  // A pasted list is shown clipped, not whole.
  std::string huge = "NCCL_ALGO=";
  for (int i = 0; i < 10000; ++i) huge += "ring,";
  huge += "tree;ring";
  try {
    parse_nccl_env(huge, "x");
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).size() < 400);
    CHECK_THAT(e.what(), Catch::Contains("prefix") && Catch::Contains("..."));
  }
}

TEST_CASE("the model never picks what the NCCL environment rules out, by either selection rule", "[nccl_env]") {
  struct Case {
    const char* topology;
    const char* env;
    Algorithm banned;
  };
  for (const Case& k : {Case{"2x8xH100-8x400G", "NCCL_ALGO=ring", Algorithm::kTree}, Case{"2x8xH100-8x400G", "NCCL_ALGO=^NVLSTree", Algorithm::kNvlsTree},
                        Case{"hgx-h200", "NCCL_NVLS_ENABLE=0", Algorithm::kNvls}, Case{"4x8xA100-4x200G", "NCCL_TREE_THRESHOLD=0", Algorithm::kTree}}) {
    const Topology t = resolve_topology(k.topology);
    for (Selection sel : {Selection::kFastest, Selection::kNcclTuning}) {
      ModelParams free = default_params(t, t.gpus());
      free.selection = sel;
      ModelParams bound = free;
      bound.nccl_env = parse_nccl_env(k.env, "t");
      const CollectiveModel mf(t, t.gpus(), free), mb(t, t.gpus(), bound);
      bool free_uses_it = false;
      for (double s : sizes()) {
        CAPTURE(k.topology, k.env, to_string(sel), s);
        const Choice cf = mf.best(Collective::kAllreduce, s), cb = mb.best(Collective::kAllreduce, s);
        free_uses_it = free_uses_it || cf.algorithm == k.banned;
        CHECK(cb.algorithm != k.banned);
        // Fewer choices are never faster than the fastest of all of them.
        if (sel == Selection::kFastest) CHECK(cb.time_s >= cf.time_s * (1 - 1e-12));
        CHECK_FALSE(mb.evaluate(Collective::kAllreduce, k.banned, cf.protocol, s).has_value());
      }
      // The restriction changes something: unrestricted, the model uses what it bans at some size.
      if (sel == Selection::kFastest) CHECK(free_uses_it);
    }
  }
  // Protocols likewise; and nothing left is an error naming the restriction.
  const Topology h = resolve_topology("hgx-h200");
  ModelParams simple = default_params(h, 8);
  simple.nccl_env = parse_nccl_env("NCCL_PROTO=Simple", "t");
  const CollectiveModel ms(h, 8, simple);
  for (double s : sizes()) CHECK(ms.best(Collective::kAllgather, s).protocol == Protocol::kSimple);
  ModelParams tree_only = default_params(h, 8);
  tree_only.nccl_env = parse_nccl_env("NCCL_ALGO=tree", "t");
  CHECK_THROWS_WITH(CollectiveModel(h, 8, tree_only).best(Collective::kAllreduce, 1e6), Catch::Contains("NCCL_ALGO=tree"));
}

TEST_CASE("a corpus file's nccl_env is read strictly and its rows are predicted under it", "[nccl_env][corpus]") {
  const std::string good =
      "# system: s\n# machine: m\n# topology: 2x8xV100-1x100G-efa-nogdr\n# benchmark: nccl-tests\n# gpus_per_process: 1\n"
      "# nccl: 2.4.8\n# nccl_env: NCCL_TREE_THRESHOLD=0\n# source: https://github.com/x/y f.md\n# derived: time_us as published\n"
      "collective\tranks\tsize_bytes\ttime_us\tpublished\n"
      "allreduce\t16\t1073741824\t228178\ttime_us=228178\n";
  const CorpusFile f = parse_corpus(good, "r.tsv");
  CHECK(f.nccl_env.text == "NCCL_TREE_THRESHOLD=0");
  CorpusFile free = f;
  free.nccl_env = NcclEnv{};
  const auto prepared = prepare_corpus({f, free});
  const auto ring = predict_file(prepared[0], corpus_constants()), fastest = predict_file(prepared[1], corpus_constants());
  CHECK(ring[0].algorithm == Algorithm::kRing);
  CHECK(fastest[0].algorithm == Algorithm::kTree);  // two hosts: the tree halves the NIC traffic
  CHECK(ring[0].predicted_s > fastest[0].predicted_s);

  const auto with = [&](const std::string& line) {
    std::string s = good;
    s.replace(s.find("# nccl_env: NCCL_TREE_THRESHOLD=0\n"), 34, line);
    return s;
  };
  CHECK_THROWS_WITH(parse_corpus(with("# nccl_env: NCCL_ALGO=bogus\n"), "r.tsv"), Catch::Contains("r.tsv:7") && Catch::Contains("bogus"));
  CHECK_THROWS_WITH(parse_corpus(with("# nccl_env: NCCL_ALGO=ring\n# nccl_env: NCCL_PROTO=LL\n"), "r.tsv"), Catch::Contains("r.tsv:8") && Catch::Contains("twice"));
  CHECK_THROWS_WITH(parse_corpus(with("# nccl_env:\n"), "r.tsv"), Catch::Contains("r.tsv:7") && Catch::Contains("empty"));
}
