// The presets against the measurement corpus: leave-one-system-out, node-count trends, the shipped
// constants being the corpus fit, and the presets against NCCL's own constants.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "network_models/corpus_fit.hpp"
#include "tests/network_models/support.hpp"

using namespace lgreco;
using namespace lgreco::net;

namespace {

constexpr double kTrendBar = 0.25;  // issue 13: node-count trend within 25 % at the largest size

// Systems that miss the held-out bars, with the reason (docs/network-model.md "Held-out errors").
// The test fails if one of them starts to meet the bars (take it off the list) or another misses.
const std::map<std::string, std::string> kKnownHeldOutMisses{
    {"aws-p4dn", "NCCL 2.9.9 on EFA v1 reaches ~60 % of the NICs (its thread is titled 'Slow bus bandwidth'); held out, "
                 "the plugin transport's efficiency comes from EFA v4 and TCPXO (76 %)"},
    {"dgx-a100", "the sweep's NCCL (version not stated, one process for 8 GPUs) has a 101 us LL128 plateau at 1-4 MiB and a "
                 "slower mid-size range than the NCCL 2.27 hosts the held-out fit learns from"},
    {"gcp-a3-mega", "NCCL over TCPXO keeps LL up to 16 MiB and its Simple protocol costs ~870 us per call on 2 hosts; the "
                    "only other plugin fabric, EFA, shows ~170 us per network step"},
    {"h20-ib", "the only InfiniBand NVLS-tree system, below its own expectation per its thread (343 of 460 GB/s); held "
               "out, the RDMA per-step latency comes from a RoCE VF pair of L40S only"},
    {"hgx-h200", "held out, NVLS and the pipeline fill are learned from B200 and the A100 sweep, which disagree at "
                 "4-128 MiB"},
    {"l40s-openshift", "the only socket system and the only RoCE-over-VF system; held out, their constants fall back to "
                       "NCCL's priors and the H20 InfiniBand rows"},
    {"p6-b200", "held out, the EFA plugin is learned from TCPXO (A3 Mega) and NCCL 2.9.9 EFA v1 (p4dn); its 4-node "
                "PyTorch rows below 128 KiB take 3-6 ms, which no NCCL latency model gives"},
    {"rtx4090-pcie", "the only PCIe box without peer-to-peer (2-4 GB/s busbw); held out, PCIe efficiency is learned from "
                     "the L40S pair"},
};

// Node-count trends that miss the 25 % bar with the shipped presets, with the reason.
const std::map<std::string, std::string> kKnownTrendMisses{
    {"p6-b200", "4 nodes at 16 GiB +26 %: the plugin efficiency (76 %) is shared with NCCL 2.9.9 on EFA v1 (p4dn, ~60 %) "
                "and TCPXO"},
};

std::vector<PreparedFile> corpus() { return prepare_corpus(load_corpus_dir(testing::corpus_dir())); }

std::vector<ValidationPoint> all_points(const std::vector<PreparedFile>& files, const CorpusConstants& k) {
  std::vector<ValidationPoint> out;
  for (const auto& f : files) {
    const auto pts = predict_file(f, k);
    out.insert(out.end(), pts.begin(), pts.end());
  }
  return out;
}

}  // namespace

TEST_CASE("leave-one-system-out: every system within the bars or listed with its reason", "[holdout]") {
  const auto files = corpus();
  const auto held = leave_one_system_out(files);
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
    const bool meets = std::abs(h.errors.large_error()) <= kLargeBar && std::abs(h.errors.small_error()) <= kSmallBar;
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
}

TEST_CASE("node-count trends of multi-node systems at their largest size", "[holdout]") {
  const auto files = corpus();
  // Per system and host count: the row at the largest size published for that host count.
  std::map<std::string, std::map<int, ValidationPoint>> largest;
  for (const auto& f : files) {
    for (const auto& p : predict_file(f, corpus_constants())) {
      if (p.row.collective != Collective::kAllreduce) continue;
      auto& slot = largest[f.file.system];
      auto it = slot.find(p.hosts);
      if (it == slot.end() || p.row.size_bytes > it->second.row.size_bytes) slot.insert_or_assign(p.hosts, p);
    }
  }
  std::printf("\nnode-count trends (shipped presets), largest size per host count:\n");
  int systems = 0;
  for (const auto& [system, by_hosts] : largest) {
    if (by_hosts.size() < 2) continue;
    ++systems;
    const auto& base = by_hosts.begin()->second;
    bool meets = true;
    for (const auto& [hosts, p] : by_hosts) {
      const double measured_ratio = p.row.time_s / base.row.time_s, predicted_ratio = p.predicted_s / base.predicted_s;
      std::printf("  %-12s %d host(s) %12.0f B: measured %10.1f us, predicted %10.1f us (%+5.1f %%); t/t(%d host) measured %.2f, predicted %.2f\n",
                  system.c_str(), hosts, p.row.size_bytes, p.row.time_s * 1e6, p.predicted_s * 1e6, 100 * p.error(), by_hosts.begin()->first,
                  measured_ratio, predicted_ratio);
      meets = meets && std::abs(p.error()) <= kTrendBar;
    }
    CAPTURE(system);
    if (kKnownTrendMisses.count(system)) {
      INFO("listed as a known trend miss: " << kKnownTrendMisses.at(system));
      CHECK_FALSE(meets);
    } else {
      CHECK(meets);
    }
  }
  CHECK(systems >= 2);  // p6-b200 (1, 4 nodes) and aws-p4dn (1-4 nodes)
}

TEST_CASE("the shipped constants are the corpus fit", "[holdout]") {
  const auto files = corpus();
  std::vector<const PreparedFile*> all;
  for (const auto& f : files) all.push_back(&f);
  const CorpusFit fit = fit_corpus(all);
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
    for (const auto& r : f.file.rows) {
      // NCCL's model with the same benchmark host cost, so only the network constants differ.
      const Embedding& e = f.embeddings.at(r.ranks);
      ModelParams p = nccl_params(f.topology, e);
      p.host_overhead_s = benchmark_overhead_s(corpus_constants(), f.file.benchmark, f.file.gpus_per_process(e.ranks_per_host));
      const double t = CollectiveModel(e, f.topology, p).best(r.collective, r.size_bytes).time_s;
      nccl.push_back(std::abs(std::log(t / r.time_s)));
    }
  }
  auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  std::printf("\nmedian |ln(pred/meas)| over %zu corpus rows: presets %.3f, NCCL's constants %.3f\n", preset.size(), median(preset), median(nccl));
  CHECK(median(preset) < median(nccl));
}
