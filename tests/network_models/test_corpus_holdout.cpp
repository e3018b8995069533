// The presets against the measurement corpus: leave-one-system-out, node-count trends, the shipped
// constants being the corpus fit, and the presets against NCCL's own constants.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "core/units.hpp"
#include "network_models/corpus_fit.hpp"
#include "tests/network_models/support.hpp"

using namespace lgreco;
using namespace lgreco::net;

namespace {

// Systems that miss the held-out bars, with the reason (docs/network-model.md "Held-out errors").
// The test fails if one of them starts to meet the bars (take it off the list) or another misses.
const std::map<std::string, std::string> kKnownHeldOutMisses{
    {"a100x8-40gb-galvatron", "1-4 MiB of one process driving 8 A100 (79-131 us) sit on dgx-a100's LL128 plateau, which "
                              "the other systems' latencies do not give (-37 % at 2 MiB)"},
    {"aws-p3dn-dlami", "NCCL 2.4.8 with the tree off (nccl_env NCCL_TREE_THRESHOLD=0, predicted as the ring it ran) on "
                       "EFA v1 without GPUDirect RDMA: 1 GiB at 8.8 GB/s busbw on 2 hosts, 1.6x p3dn-eks' 5.5 (2 hosts) "
                       "and 5.3 (8 hosts) on the same NIC; held out, the no-GPUDirect factor comes from p3dn-eks (1 GiB "
                       "+171 %)"},
    {"aws-p3dn-eks", "NCCL 2.6.4 on EFA v1 without GPUDirect RDMA: 64-rank rows at 8-16 MiB take 16-17 ms (slower than "
                     "32 MiB; -77 % at 8 MiB held out) and small messages 2.2 ms (-83 % at 256 B); held out, 128 MiB at "
                     "64 ranks comes out +20 %"},
    {"aws-p3dn-eks-1gpn", "one GPU per host (2 ranks) over one 100 Gb/s EFA v1 NIC: 16 B in 51 us but 4 MiB-2 GiB at "
                          "2.1-2.6 GB/s, a fifth of the NIC; the only single-GPU-per-host system"},
    {"aws-p4de", "held out, EFA v1 comes from p4dn and the p3dn files: 2 GiB at 2 nodes runs 44 % faster than that "
                 "gives"},
    {"aws-p4dn", "held out, EFA v1 comes from p4de and the p3dn files: 4 nodes at 1 GiB -32 %, 3 nodes -27 %, 2 nodes "
                 "-23 %"},
    {"aws-p5en", "the only EFA v3 system, two rows on 16 nodes: held out its factors are their prior, and 16 B over "
                 "128 ranks (167 us measured) comes out at the shared plugin LL step's 667 (+299 %); 16 GiB within 8 %"},
    {"azure-ndv5-h100-ib", "2-64 Azure ND H100 v5 nodes at 8 GiB: 2-8 nodes within 9 % held out, from 16 nodes on "
                           "223-253 GB/s busbw against the 364-365 the model's non-blocking switch gives (-39 % at 64 "
                           "nodes held out); the source attributes the drop to congestion in the fabric's spine, which "
                           "the topology does not describe"},
    {"gb200-nvl72-rack", "72 ranks of one NVLink domain, modelled as one host of 72 B200: NVLS reaches 297-425 GB/s "
                         "algbw at 512 MiB-8 GiB, the model's NVLS bandwidth (per GPU, from 8-GPU hosts) 445-492; -35.0 "
                         "% at 512 MiB"},
    {"dgx-a100", "the sweep's NCCL (not stated; one process for 8 GPUs) has a 101 us plateau at 1-4 MiB that the NCCL 2.2x "
                 "hosts do not show"},
    {"gcp-a3-mega", "held out, TCPXO comes from gcp-a3-mega-dstack's all_gather (8-64 MiB in 167-447 us); this "
                    "allreduce keeps LL up to 16 MiB (978 us, predicted on Simple at 302: -69 %) and takes 1.06-1.65 ms "
                    "at 32-128 MiB (-69 to -44 %); the all_gather has no small rows, so TCPXO's LL factor is near its "
                    "prior: 123 us at 128 B, predicted 140 (+14 %)"},
    {"gcp-a3-mega-dstack", "held out, TCPXO comes from gcp-a3-mega's allreduce, whose pipelined rows sit on a ~1 ms "
                           "floor at 32-128 MiB; this all_gather moves 8-64 MiB in 167-447 us (+63 to +206 %, 32 MiB "
                           "worst); within 23 % from 512 MiB on"},
    {"gcp-a3-high-dstack", "held out, TCPX comes from the two Ring/Simple allreduces (gcp-a3-high-skypilot, "
                           "gcp-a3-high-gke): this all_gather's LL rows at 8-16 MiB (785-1010 us) come out -70 and -59 "
                           "%, and its 50 GB/s busbw from 128 MiB on -39 to -44 % from 1 GiB on"},
    {"gcp-a3-high-gke", "held out, TCPX comes from gcp-a3-high-dstack's all_gather (50 GB/s busbw) and "
                        "gcp-a3-high-skypilot's allreduce (66-68 with 8 channels): this allreduce's 12 channels reach "
                        "84-90 GB/s busbw from 256 MiB on, predicted at about 56 (+55 to +58 %); its 1-16 MiB floor "
                        "(1.65-1.93 ms) within 20 %"},
    {"gcp-a3-high-skypilot", "held out, TCPX comes from gcp-a3-high-dstack's all_gather and gcp-a3-high-gke's "
                             "allreduce, whose 12 channels are faster at large sizes: 2 GiB comes out -23.3 % and 1 "
                             "GiB -20.1 %; within 20 % from 128 KiB (1.29 ms, +19 %) to 512 MiB"},
    {"h100-hgx-vm-4node-ib", "VMs with a hand-edited NCCL topology: at 1 MiB the LL tree over 4 hosts is 82 us, +73 % "
                             "with the RDMA latencies learned from the other IB and RoCE runs (4 MiB in 151 us, +39 %)"},
    {"h100-ndr-8node", "rows as published are not monotonic at 8 hosts (8 MiB in 1272 us, 16 MiB in 378 us: -79 % at 8 "
                       "MiB); at 64 ranks 2 MiB (143 us) comes out +68 % and 32 MiB -39 %"},
    {"h100-xe9680-ib", "2-host H100 IB: small messages (256 B in 94 us, a first-call outlier at 8 B) and 2 MiB (76 us) fall "
                       "on both sides of the shared RDMA latency"},
    {"h20-ib", "the only InfiniBand NVLS-tree H20 system, below its own expectation per its thread (343 of 460 GB/s)"},
    {"hgx-h200", "held out, NVLS mid sizes (16-32 MiB +38 and +24 %) come from B200 and H100, whose NVLS fill differs"},
    {"lambda-b200-ib", "2-host B200 IB: 512 KiB out-of-place in 241 us (in place 126 us, -75 %) and a 114-118 us plateau at "
                       "1-4 MiB (-27 % at 1 MiB); from 2 MiB on within 20 %"},
    {"l40s-openshift", "the only socket and RoCE-over-VF system; held out its socket constants are the priors"},
    {"nebius-h100-ib", "2-host H100 IB: 2 MiB +25 % (99 us, against 87 us at 1 MiB); 512 KiB (98 us, slower than "
                       "1 MiB) -38 %, inside its 40 % bar since the twelfth round; the other 30 of 31 rows within the bars"},
    {"oci-bm-gpu4-a100-roce", "16 RoCE ports per host of A100: 8 GiB reaches 238 GB/s busbw, beyond the PCIe Gen4 path the "
                              "layout gives every GPU (192 GB/s); uneven curve (165, 156, 219 GB/s at 256 MiB-1 GiB)"},
    {"p6-b200", "the only EFA v4 system: held out, its factors are their prior (4 nodes at 8 MiB: 463 us measured, 1102 "
                "predicted, +138 %, the shared plugin LL step raised by TCPX); its 4-node PyTorch rows at 32-64 KiB "
                "take 3-6 ms (printed busbw 0.01-0.04 GB/s)"},
    {"rtx2080ti-2x-pcie", "2 GeForce RTX 2080 Ti without NVLink or P2P behind one PCIe Gen3 switch: 4.0 GB/s busbw "
                          "from 16 MiB on, 0.67 of the 6 GB/s the model's path through host memory allows; held out, "
                          "the PCIe efficiency comes from the two RTX 4090 boxes (0.30): +121 to +137 % from 1 MiB on"},
    {"rtx4090-8x-pcie", "8 GeForce without P2P reach 15 GB/s busbw, the 4-GPU box rtx4090-pcie 2-4 GB/s and the 2080 Ti "
                        "pair 4.0 on PCIe Gen3: one PCIe efficiency cannot give all three (+248 % at 32 MiB held out)"},
    {"rtx4090-pcie", "4 GeForce without P2P in a Kubernetes pod at 2-4 GB/s busbw, against 15 GB/s on the 8-GPU box and "
                     "4.0 on the 2080 Ti pair's PCIe Gen3: one PCIe efficiency cannot give all three (-73 % at 16 MiB "
                     "held out)"},
    {"v100-sxm2-8gpu-cubemesh", "the only V100 (hybrid cube mesh modelled as a 6 x 20 GB/s fabric): held out 1-2 MiB "
                                "-33 and -25 %; from 4 MiB on within 20 %"},
    {"voltagepark-h100-ib", "4 hosts of H100 on 8 x 400 Gb/s IB: the tree at 1-4 MiB (92-160 us) comes out +26 to +52 % "
                            "held out, as h100-hgx-vm's does, and the all_gather's rows at 32-128 MiB (309-750 us, a "
                            "dip to 173 GB/s busbw at 128 MiB) -26 to -38 %; from 512 MiB on within 15 %"},
    {"together-b200-ib", "Ring on 1-60 nodes of B200 at 8-32 GiB: within 11 % on 1-48 nodes held out; at 60 nodes the 8 "
                         "GiB row (273 GB/s busbw against 386-391 on 2-32 nodes) is -23.1 % (within the bars before the "
                         "ninth round's refit moved eta_rdma 0.870 -> 0.92: -18.7 %)"},
};

// Node-count trends that miss the 25 % bar with the shipped presets, with the reason.
const std::map<std::string, std::string> kKnownTrendMisses{
    {"aws-p3dn-eks", "1 GiB at 2 and 8 hosts: 5.5 and 5.3 GB/s busbw, the same on both, as a ring gives; the run's "
                     "NCCL_ALGO is not published (NCCL 2.6.4 does not log it), the model takes the tree that halves the NIC "
                     "traffic on 2 hosts (p4dn's NCCL 2.9.9 shows that gain: 2 hosts twice as fast as 4), and the "
                     "no-GPUDirect efficiency it shares with p3dn-dlami's ring (8.8 GB/s) puts 2 hosts at -33 %, 8 at +11 % (the ratio 1.81 against the measured 1.09)"},
    {"azure-ndv5-h100-ib", "8 GiB on 2, 4 and 8 nodes within 8 % (482, 335, 392 GB/s busbw), on 16-64 nodes -31 to -39 %: "
                           "measured 253-224 GB/s, falling with the node count, predicted a flat 362-363; the topology is one "
                           "non-blocking switch, with no spine whose congestion (the source's diagnosis) could slow it"},
};

std::vector<PreparedFile> corpus() { return prepare_corpus(load_corpus_dir(testing::corpus_dir())); }

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// The text with every run of whitespace (line breaks included) made one space.
std::string flatten(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool space = c == ' ' || c == '\n' || c == '\t';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out.push_back(space ? ' ' : c);
  }
  return out;
}

/// The markdown table under `header` (the one line it must appear on once): first cell -> the other cells.
std::map<std::string, std::vector<std::string>> docs_table(const std::string& docs, const std::string& header) {
  const auto at = docs.find(header);
  REQUIRE(at != std::string::npos);
  REQUIRE(docs.find(header, at + 1) == std::string::npos);
  std::istringstream lines(docs.substr(at));
  std::string line;
  std::getline(lines, line), std::getline(lines, line);  // the header and the rule under it
  std::map<std::string, std::vector<std::string>> rows;
  while (std::getline(lines, line) && line.rfind("| ", 0) == 0) {
    std::vector<std::string> cells;
    std::istringstream parts(line.substr(1));
    for (std::string cell; std::getline(parts, cell, '|');) {
      const auto b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
      cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
    }
    const std::string key = cells.front();
    cells.erase(cells.begin());
    rows.emplace(key, std::move(cells));
  }
  return rows;
}


/// The docs spell counts below ten as words at the start of a sentence.
std::string number_word(int n) {
  const char* words[] = {"No", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine"};
  return n >= 0 && n < 10 ? words[n] : std::to_string(n);
}

std::vector<ValidationPoint> all_points(const std::vector<PreparedFile>& files, const CorpusConstants& k) {
  std::vector<ValidationPoint> out;
  for (const auto& f : files) {
    const auto pts = predict_file(f, k);
    out.insert(out.end(), pts.begin(), pts.end());
  }
  return out;
}

}  // namespace

TEST_CASE("leave-one-system-out: every system within the bars or listed with its reason", "[loso]") {
  const auto files = corpus();
  // What `lgreco net validate DIR --holdout` computes and prints.
  const auto held = validate_corpus(files, true);
  std::printf("\nleave-one-system-out (fit on the other systems, predict this one); bars: >= 1 MiB %.0f %%, below %.0f %%\n",
              100 * kLargeBar, 100 * kSmallBar);
  std::printf("%-16s %8s %14s %5s %8s %14s %5s\n", "system", ">=1MiB", "at_size", "ranks", "<1MiB", "at_size", "ranks");
  for (const auto& h : held) {
    const auto& e = h.errors;
    std::printf("%-16s %+7.1f%% %14.0f %5d %+7.1f%% %14.0f %5d\n", h.system.c_str(), 100 * e.large_error(),
                e.worst_large ? e.worst_large->row.size_bytes : 0.0, e.worst_large ? e.worst_large->row.ranks : 0, 100 * e.small_error(),
                e.worst_small ? e.worst_small->row.size_bytes : 0.0, e.worst_small ? e.worst_small->row.ranks : 0);
  }
  for (const auto& h : held) {
    const bool meets = h.errors.meets_bars();
    CAPTURE(h.system, h.errors.large_error(), h.errors.small_error());
    const auto known = kKnownHeldOutMisses.find(h.system);
    if (known == kKnownHeldOutMisses.end()) {
      CHECK(meets);
    } else {
      INFO("listed as a known miss: " << known->second);
      CHECK_FALSE(meets);
    }
  }
  CHECK(held.size() >= 8);

  // docs/network-model.md quotes these figures: its held-out columns and totals must be this run's.
  const std::string docs = read_text(testing::source_dir() / "docs" / "network-model.md");
  const auto table = docs_table(docs, "| system | held out ≥ 1 MiB | held out < 1 MiB | presets ≥ 1 MiB | presets < 1 MiB |");
  REQUIRE(table.size() == held.size());
  for (const auto& h : held) {
    CAPTURE(h.system);
    const bool meets = h.errors.meets_bars();
    const auto row = table.find(h.system + (meets ? " ✓" : ""));
    REQUIRE(row != table.end());
    REQUIRE(row->second.size() == 4);
    std::vector<ValidationPoint> large, small;
    for (const auto& [f, p] : h.points) (p.row.size_bytes >= net::kMiB ? large : small).push_back(p);
    for (const auto& [cell, worst, points] : {std::tuple{row->second[0], h.errors.worst_large, &large},
                                              std::tuple{row->second[1], h.errors.worst_small, &small}}) {
      CAPTURE(cell);
      if (!worst) {
        CHECK(cell == "—");
        continue;
      }
      // "-36.5 % (2 MiB, 8 ranks; 8/11 rows in)": the error to its printed digit, the rest exactly.
      const auto split = cell.find(" % (");
      REQUIRE(split != std::string::npos);
      CHECK(std::stod(cell.substr(0, split)) == Approx(100 * worst->error()).margin(0.051));
      const long in = std::count_if(points->begin(), points->end(), [](const ValidationPoint& p) { return within_bar(p); });
      const std::string rest = "(" + units::format_bytes_exact(worst->row.size_bytes) + ", " + std::to_string(worst->row.ranks) + " ranks; " +
                               std::to_string(in) + "/" + std::to_string(points->size()) + " rows in)";
      CHECK(cell.substr(split + 3) == rest);
    }
  }
  const CorpusTotals t = corpus_totals(held);
  const std::string prose = flatten(docs);
  auto check_quoted = [&](const char* text) {
    INFO("docs/network-model.md should say: " << text);
    CHECK(prose.find(text) != std::string::npos);
  };
  char quote[160];
  std::snprintf(quote, sizeof quote, "%d of %d rows are within the bars held out", t.rows_within, t.rows);
  check_quoted(quote);
  std::snprintf(quote, sizeof quote, "%s of %d systems meet the held-out bars", number_word(t.systems_within).c_str(), t.systems);
  check_quoted(quote);
  std::snprintf(quote, sizeof quote, "held out it is %.3f", t.median_abs_log);
  check_quoted(quote);

  // The error bands the tools print with the presets' predictions (error_bands_table.cpp) are this run's.
  INFO("regenerate with: lgreco net validate tests/data/network --holdout --write-error-bands network_models/error_bands_table.cpp --force");
  const ErrorBands bands = error_bands(held);
  for (int c = 0; c < kNumPredictionClasses; ++c) {
    for (int k = 0; k < kNumSizeBands; ++k) {
      const ErrorBand& now = bands[c][k];
      const ErrorBand& shipped = shipped_error_bands()[c][k];
      CAPTURE(to_string(static_cast<PredictionClass>(c)), to_string(static_cast<SizeBand>(k)), now.rows);
      CHECK(now.systems == shipped.systems);
      CHECK(now.rows == shipped.rows);
      CHECK(now.median == Approx(shipped.median).margin(1e-6));
      CHECK(now.p80 == Approx(shipped.p80).margin(1e-6));
      CHECK(now.p90 == Approx(shipped.p90).margin(1e-6));
      CHECK(now.max == Approx(shipped.max).margin(1e-6));
    }
  }
  CHECK(shipped_error_bands_origin().systems == t.systems);
  CHECK(shipped_error_bands_origin().rows == t.rows);
}

TEST_CASE("error bands: order statistics of |ln(pred/meas)| per prediction class and size band", "[corpus]") {
  const auto files = corpus();
  auto validated = validate_corpus(files, false);
  // Known errors: one system's rows at >= 64 MiB predicted exp(k/100) times their measurement, k = 1..n.
  auto& v = *std::find_if(validated.begin(), validated.end(), [](const SystemValidation& s) { return s.system == "h100-node005"; });
  std::vector<double> logs;
  for (auto& [f, p] : v.points) {
    REQUIRE(size_band(p.row.size_bytes) == SizeBand::kAtLeast64MiB);
    logs.push_back(static_cast<double>(logs.size() + 1) / 100);
    p.predicted_s = p.row.time_s * std::exp(logs.back() * (logs.size() % 2 ? 1 : -1));  // too slow and too fast alike
  }
  const int n = static_cast<int>(logs.size());
  REQUIRE(n >= 5);
  // The only one-host NVLink system left: every other one goes.
  std::erase_if(validated, [&](const SystemValidation& s) {
    return s.system != v.system && std::any_of(s.points.begin(), s.points.end(), [](const auto& fp) {
             return prediction_class(fp.first->topology, fp.first->embeddings.at(fp.second.row.ranks)) == PredictionClass::kOneHostNvlink;
           });
  });
  const ErrorBands b = error_bands(validated);
  const ErrorBand& e = band_of(b, PredictionClass::kOneHostNvlink, SizeBand::kAtLeast64MiB);
  CHECK(e.systems == 1);
  CHECK(e.rows == n);
  CHECK(e.median == Approx(logs[n / 2]));
  CHECK(e.p80 == Approx(logs[static_cast<std::size_t>(std::floor(0.8 * n))]));
  CHECK(e.p90 == Approx(logs[std::min<std::size_t>(n - 1, static_cast<std::size_t>(std::floor(0.9 * n)))]));
  CHECK(e.max == Approx(logs.back()));
  CHECK(band_of(b, PredictionClass::kOneHostNvlink, SizeBand::kBelow1MiB).rows == 0);
  CHECK(band_of(b, PredictionClass::kOneHostNvlink, SizeBand::k1To64MiB).rows == 0);
  // Every row counted once, in the class of its file's topology at its rank count.
  int rows = 0, multi_host_rdma = 0;
  for (const auto& s : validated)
    for (const auto& [f, p] : s.points) {
      ++rows;
      if (p.hosts > 1 && f->topology.transport == Transport::kRdma) ++multi_host_rdma;
    }
  int counted = 0, rdma = 0;
  for (const auto& cb : b)
    for (const auto& band : cb) counted += band.rows;
  for (const auto& band : b[static_cast<int>(PredictionClass::kRdma)]) rdma += band.rows;
  CHECK(counted == rows);
  CHECK(rdma == multi_host_rdma);
  CHECK(size_band(net::kMiB - 1) == SizeBand::kBelow1MiB);
  CHECK(size_band(net::kMiB) == SizeBand::k1To64MiB);
  CHECK(size_band(64 * net::kMiB - 1) == SizeBand::k1To64MiB);
  CHECK(size_band(64 * net::kMiB) == SizeBand::kAtLeast64MiB);
  for (const auto& cb : b)
    for (const auto& band : cb) {
      if (band.rows == 0) continue;
      CHECK(band.median <= band.p80);
      CHECK(band.p80 <= band.p90);
      CHECK(band.p90 <= band.max);
    }
}

TEST_CASE("the shipped error bands add up to the corpus and are the docs' table", "[corpus]") {
  const auto& bands = shipped_error_bands();
  const auto& origin = shipped_error_bands_origin();
  const auto files = corpus();
  const CorpusTotals t = corpus_totals(validate_corpus(files, false));
  CHECK(origin.corpus == "tests/data/network");
  CHECK(origin.systems == t.systems);
  CHECK(origin.rows == t.rows);
  int rows = 0;
  for (const auto& cb : bands)
    for (const auto& band : cb) rows += band.rows;
  CHECK(rows == origin.rows);
  // The file is the generator's output, not edited by hand.
  CHECK(read_text(testing::source_dir() / "network_models" / "error_bands_table.cpp") == error_bands_source(bands, origin));

  const std::string docs = read_text(testing::source_dir() / "docs" / "network-model.md");
  const auto table = docs_table(docs, "| class and size | systems | rows | median | 80 % of rows | 90 % of rows | worst |");
  CHECK(table.size() == kNumSizeBands * kNumPredictionClasses);
  for (int c = 0; c < kNumPredictionClasses; ++c) {
    const auto pc = static_cast<PredictionClass>(c);
    for (auto sb : all_size_bands()) {
      const ErrorBand& band = band_of(bands, pc, sb);
      const char* size = sb == SizeBand::kBelow1MiB ? "< 1 MiB" : sb == SizeBand::k1To64MiB ? "1-64 MiB" : "≥ 64 MiB";
      const std::string key = std::string(describe(pc)) + ", " + size;
      CAPTURE(key);
      const auto row = table.find(key);
      REQUIRE(row != table.end());
      REQUIRE(row->second.size() == 6);
      CHECK(row->second[0] == std::to_string(band.systems));
      CHECK(row->second[1] == std::to_string(band.rows));
      const double values[] = {band.median, band.p80, band.p90, band.max};
      for (int i = 0; i < 4; ++i) {
        char cell[32];
        std::snprintf(cell, sizeof cell, "×/÷ %.2f", std::exp(values[i]));
        CHECK(row->second[2 + i] == (band.rows ? std::string(cell) : std::string("—")));
      }
    }
  }
}

TEST_CASE("node-count trends of multi-node systems at their largest size", "[holdout]") {
  // The trends `lgreco net validate DIR` prints (node_count_trends over the shipped presets' predictions).
  const auto files = corpus();
  const auto trends = node_count_trends(validate_corpus(files, false));
  std::printf("\nnode-count trends (shipped presets), largest size per host count:\n");
  for (const auto& t : trends) {
    for (const auto& q : t.points) {
      const auto& p = q.point;
      std::printf("  %-12s %d host(s) %12.0f B: measured %10.1f us, predicted %10.1f us (%+5.1f %%); t/t(%d host) measured %.2f, predicted %.2f\n",
                  t.system.c_str(), q.hosts, p.row.size_bytes, p.row.time_s * 1e6, p.predicted_s * 1e6, 100 * p.error(), t.points.front().hosts,
                  q.measured_ratio, q.predicted_ratio);
    }
    CAPTURE(t.system);
    if (kKnownTrendMisses.count(t.system)) {
      INFO("listed as a known trend miss: " << kKnownTrendMisses.at(t.system));
      CHECK_FALSE(t.meets_bar());
    } else {
      CHECK(t.meets_bar());
    }
  }
  // Every listed miss is a multi-node system of the corpus.
  for (const auto& [system, why] : kKnownTrendMisses) {
    CAPTURE(system);
    CHECK(std::any_of(trends.begin(), trends.end(), [&](const NodeTrend& t) { return t.system == system; }));
  }
  CHECK(trends.size() >= 2);  // p6-b200 (1, 4 nodes) and aws-p4dn (1-4 nodes)
}

TEST_CASE("node-count trends: largest allreduce per host count, ratios to the fewest hosts", "[corpus]") {
  // A hand-made validation: two host counts, an all_gather that must be ignored, a tie kept in file order.
  auto point = [](Collective c, int hosts, double size, double meas_us, double pred_us) {
    ValidationPoint p;
    p.row.collective = c, p.row.size_bytes = size, p.row.time_s = meas_us * 1e-6, p.row.ranks = 8 * hosts;
    p.hosts = hosts, p.predicted_s = pred_us * 1e-6;
    return p;
  };
  SystemValidation v{"x", {}, {}};
  for (const auto& p : {point(Collective::kAllreduce, 2, 1 << 20, 100, 110), point(Collective::kAllreduce, 2, 1 << 30, 1000, 1100),
                        point(Collective::kAllgather, 4, 1 << 31, 9000, 1), point(Collective::kAllreduce, 4, 1 << 30, 3000, 2000),
                        point(Collective::kAllreduce, 4, 1 << 30, 5000, 5000)})
    v.points.emplace_back(nullptr, p);
  SystemValidation one{"single", {}, {}};
  one.points.emplace_back(nullptr, point(Collective::kAllreduce, 1, 1 << 30, 1, 1));
  const auto trends = node_count_trends({v, one});
  REQUIRE(trends.size() == 1);
  const NodeTrend& t = trends.front();
  CHECK(t.system == "x");
  REQUIRE(t.points.size() == 2);
  CHECK(t.points[0].hosts == 2);
  CHECK(t.points[0].point.row.size_bytes == Approx(1 << 30));
  CHECK(t.points[1].hosts == 4);
  CHECK(t.points[1].point.row.time_s == Approx(3000e-6));  // the first of the tie
  CHECK(t.points[1].measured_ratio == Approx(3.0));
  CHECK(t.points[1].predicted_ratio == Approx(2000.0 / 1100.0));
  CHECK_FALSE(t.meets_bar());  // -33 % at 4 hosts
  v.points.pop_back(), v.points.pop_back();
  v.points.emplace_back(nullptr, point(Collective::kAllreduce, 4, 1 << 30, 3000, 3700));  // +23 %
  CHECK(node_count_trends({v}).front().meets_bar());
}

TEST_CASE("the shipped constants are the corpus fit", "[holdout]") {
  const auto files = corpus();
  std::vector<const PreparedFile*> all;
  for (const auto& f : files) all.push_back(&f);
  const CorpusFit fit = fit_corpus(all);
  // The near optima: the fit first, then the others by objective, all within kNearOptimum of it.
  REQUIRE_FALSE(fit.near_optima.empty());
  CHECK(fit.near_optima.front().objective == fit.objective);
  for (const auto& d : corpus_constant_defs()) {
    CorpusConstants first = fit.near_optima.front().constants, chosen = fit.constants;  // copies: ref needs them mutable
    CHECK(d.ref(first) == d.ref(chosen));
  }
  for (std::size_t i = 1; i < fit.near_optima.size(); ++i) {
    CHECK(fit.near_optima[i].objective >= fit.near_optima[i - 1].objective);
    CHECK(fit.near_optima[i].objective <= fit.objective * (1 + kNearOptimum));
  }
  // The shipped values are the fit printed to 6 significant digits: every prediction agrees to 0.1 %.
  const auto shipped = all_points(files, corpus_constants()), refit = all_points(files, fit.constants);
  REQUIRE(shipped.size() == refit.size());
  for (std::size_t i = 0; i < shipped.size(); ++i) {
    CAPTURE(shipped[i].row.size_bytes, shipped[i].row.ranks, shipped[i].row.line);
    CHECK(shipped[i].predicted_s == Approx(refit[i].predicted_s).epsilon(1e-3));
  }
}

TEST_CASE("the presets are closer to the corpus than NCCL's own constants", "[holdout]") {
  const auto files = corpus();
  std::vector<double> preset, nccl;
  for (const auto& f : files) {
    for (const auto& p : predict_file(f, corpus_constants())) preset.push_back(std::abs(std::log(p.predicted_s / p.row.time_s)));
    // NCCL's model with the same benchmark host cost and the run's restrictions: only the network constants differ.
    const auto own = predict_file_nccl(f);
    REQUIRE(own.size() == f.file.rows.size());
    for (const auto& p : own) {
      nccl.push_back(std::abs(std::log(p.predicted_s / p.row.time_s)));
      // A run that forced the ring (together-b200-ib's NCCL_ALGO=Ring) is predicted as a ring by NCCL's model too.
      if (f.file.nccl_env.text == "NCCL_ALGO=Ring") CHECK(p.algorithm == Algorithm::kRing);
    }
  }
  std::printf("\nmedian |ln(pred/meas)| over %zu corpus rows: presets %.3f, NCCL's constants %.3f\n", preset.size(), upper_median(preset),
              upper_median(nccl));
  CHECK(nccl_constants_median(files) == Approx(upper_median(nccl)).epsilon(1e-12));
  CHECK(upper_median(preset) < upper_median(nccl));
}

TEST_CASE("corpus totals count the rows, bars and systems of a validation", "[holdout]") {
  const auto files = corpus();
  const auto validated = validate_corpus(files, false);
  const CorpusTotals t = corpus_totals(validated);
  std::size_t rows = 0;
  for (const auto& f : files) rows += f.file.rows.size();
  CHECK(t.rows == static_cast<int>(rows));
  CHECK(t.systems == static_cast<int>(corpus_systems(files).size()));
  // Recount from the predictions of every file with the bars written out.
  int within = 0, systems_within = 0;
  std::vector<double> abs_log;
  for (const auto& system : corpus_systems(files)) {
    bool meets = true;
    for (const auto& f : files) {
      if (f.file.system != system) continue;
      for (const auto& p : predict_file(f, corpus_constants())) {
        const double bar = p.row.size_bytes >= 1048576.0 ? 0.20 : 0.40, e = std::abs(p.predicted_s / p.row.time_s - 1);
        within += e <= bar;
        meets = meets && e <= bar;
        abs_log.push_back(std::abs(std::log(p.predicted_s / p.row.time_s)));
      }
    }
    systems_within += meets;
  }
  CHECK(t.rows_within == within);
  CHECK(t.systems_within == systems_within);
  std::sort(abs_log.begin(), abs_log.end());
  CHECK(t.median_abs_log == Approx(abs_log[abs_log.size() / 2]).epsilon(1e-12));
  CHECK(upper_median({}) == 0.0);
  CHECK(upper_median({3.0, 1.0, 2.0, 4.0}) == 3.0);
}

TEST_CASE("a held-out miss said to be the only system of its transport is the one system its constants rest on", "[holdout]") {
  // The reasons above that call a system "the only EFA v3 / EFA v4 / socket system" say that held out its
  // transport's constants fall back to their prior. The evidence at the shipped constants (constant_evidence)
  // must agree: some constant has 95 % or more of its rows' part from that system alone.
  const auto files = corpus();
  std::vector<const PreparedFile*> all;
  for (const auto& f : files) all.push_back(&f);
  const auto evidence = constant_evidence(all, corpus_constants());
  int checked = 0;
  for (const auto& [system, why] : kKnownHeldOutMisses) {
    if (why.find("the only EFA") != 0 && why.find("the only socket") != 0) continue;
    CAPTURE(system, why);
    ++checked;
    std::vector<std::string> pinned;
    for (const auto& e : evidence) {
      const double rows_part = 1 - e.prior_share;
      if (rows_part > 0.5 && !e.systems.empty() && e.systems.front().system == system && e.systems.front().share >= 0.95 * rows_part)
        pinned.push_back(e.name);
    }
    INFO("constants it pins alone: " << pinned.size());
    CHECK_FALSE(pinned.empty());
  }
  CHECK(checked == 3);  // aws-p5en (EFA v3), p6-b200 (EFA v4), l40s-openshift (sockets)
}

TEST_CASE("prediction class: the intra-host path on one host, the transport across hosts", "[corpus]") {
  auto cls = [](const std::string& topology, int ranks) {
    const Topology t = preset_topology(topology);
    return prediction_class(t, embed(t, ranks));
  };
  CHECK(cls("dgx-a100", 8) == PredictionClass::kOneHostNvlink);
  CHECK(cls("pcie-8x-rtx3090", 8) == PredictionClass::kOneHostPcie);
  CHECK(cls("1x2xL40S-1x100G", 2) == PredictionClass::kOneHostPcie);
  CHECK(cls("4x8xA100-4x100G", 32) == PredictionClass::kRdma);
  CHECK(cls("4x8xA100-4x100G", 8) == PredictionClass::kOneHostNvlink);  // 8 ranks fit on one host
  CHECK(cls("2x8xH100-32x100G-efa", 16) == PredictionClass::kEfa);
  CHECK(cls("2x8xH100-4x200G-tcpx", 16) == PredictionClass::kTcpx);
  CHECK(cls("2x8xH100-8x200G-tcpxo", 16) == PredictionClass::kTcpxo);
  CHECK(cls("2x1xL40S-1x400GbE", 2) == PredictionClass::kSocket);
  for (int c = 0; c < kNumPredictionClasses; ++c) {
    const auto pc = static_cast<PredictionClass>(c);
    CHECK(std::string(to_string(pc)) != "?");
    CHECK(std::string(describe(pc)) != "?");
  }
}

TEST_CASE("band-scaled cost: every collective slower or faster by its class's and size band's 80 % factor", "[corpus]") {
  const RingCost ring(10e-6, 12.5e9, 16);
  ErrorBands bands{};
  bands[static_cast<int>(PredictionClass::kRdma)][static_cast<int>(SizeBand::kBelow1MiB)] = {2, 10, 0.1, 0.2, 0.3, 0.4};
  bands[static_cast<int>(PredictionClass::kRdma)][static_cast<int>(SizeBand::k1To64MiB)] = {2, 10, 0.1, 0.5, 0.6, 0.7};
  // No rows at >= 64 MiB: the time stays.
  const BandScaledCost slow(ring, PredictionClass::kRdma, 16, +1, bands), fast(ring, PredictionClass::kRdma, 16, -1, bands);
  CHECK(slow.time_s(Collective::kAllreduce, 4096) == Approx(ring.time_s(Collective::kAllreduce, 4096) * std::exp(0.2)));
  CHECK(fast.time_s(Collective::kAllreduce, 4096) == Approx(ring.time_s(Collective::kAllreduce, 4096) * std::exp(-0.2)));
  CHECK(slow.time_s(Collective::kAllreduce, 8 * net::kMiB) == Approx(ring.time_s(Collective::kAllreduce, 8 * net::kMiB) * std::exp(0.5)));
  CHECK(slow.time_s(Collective::kAllreduce, 128 * net::kMiB) == Approx(ring.time_s(Collective::kAllreduce, 128 * net::kMiB)));
  // An allgather's size is every rank's payload together (nccl-tests): 16 x 128 KiB = 2 MiB, the 1-64 MiB band.
  CHECK(slow.time_s(Collective::kAllgather, 128 * 1024) == Approx(ring.time_s(Collective::kAllgather, 128 * 1024) * std::exp(0.5)));
  CHECK(slow.time_s(Collective::kAllreduce, 0) == 0);
  // With the shipped bands: the factor the tools print as "80 % of rows".
  const BandScaledCost shipped(ring, PredictionClass::kEfa, 16, +1);
  CHECK(shipped.time_s(Collective::kAllreduce, 1024) ==
        Approx(ring.time_s(Collective::kAllreduce, 1024) * std::exp(band_of(shipped_error_bands(), PredictionClass::kEfa, SizeBand::kBelow1MiB).p80)));
}
