// `lgreco scaleout`: how a closed-loop replay (plan/whatif --trace) splits over MPI ranks, before
// running it: per rank count the balance, the memory a rank needs and, given a measured cost rate,
// the projected replay time. Reads only a trace's layer table (or a model preset's shapes).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <limits>
#include <numeric>

#include "core/error.hpp"
#include "core/provenance.hpp"
#include "core/units.hpp"
#include "pipeline/distributed.hpp"
#include "sim/replay_trace_source.hpp"
#include "sim/replay_windows.hpp"
#include "tools/args.hpp"
#include "tools/command.hpp"
#include "tools/loop_args.hpp"
#include "traces/presets.hpp"

namespace lgreco::cli {
namespace {

int run_scaleout(const std::vector<std::string>& args) {
  LoopArgs a;
  std::string model, steps_text, ranks_text = "1,2,4,8,16,32,64", rate_text;
  Format fmt = Format::kTable;
  ArgParser p("lgreco scaleout",
              "Estimate how `mpirun -np N lgreco plan --trace ...` spreads the replay over N ranks (docs/scale-out.md): "
              "the layers split by estimated cost (pipeline/distributed.hpp), the balance (largest rank cost over the mean), "
              "the replay memory of the fullest rank, and with --rate the projected replay time. Reads only the layer "
              "table of --trace, or the shapes of a --model preset with --steps recorded steps.");
  add_loop_options(p, a, false);
  p.option("--model", &model, "NAME", "model preset (lgreco models) instead of --trace");
  p.option("--steps", &steps_text, "N", "recorded steps of the --model trace (one burst; at most 10000000)");
  p.option("--ranks", &ranks_text, "LIST", "rank counts to estimate (default 1,2,4,8,16,32,64)");
  p.option("--rate", &rate_text, "SECONDS",
           "measured replay seconds per estimated byte-pass on one thread (docs/performance.md); projects the time");
  p.format(&fmt);
  if (!p.parse(args)) return 0;
  if (a.trace.empty() == model.empty()) throw UsageError("lgreco scaleout: give exactly one of --trace FILE and --model NAME");
  if (!model.empty() && steps_text.empty()) throw UsageError("lgreco scaleout: --model needs --steps N");
  LoopRequest req = resolve_loop_options(a);
  const pipeline::LoopOptions& o = req.options;
  std::vector<int> rank_counts;
  for (const auto& r : split_list(ranks_text)) {
    const long long v = parse_int("--ranks", r);
    if (v < 1 || v > 1000000) throw UsageError("--ranks: expected counts >= 1, got " + r);
    rank_counts.push_back(static_cast<int>(v));
  }
  const bool has_rate = !rate_text.empty();
  const double rate = has_rate ? parse_double("--rate", rate_text) : 0.0;
  if (has_rate && !(rate > 0)) throw UsageError("--rate: expected seconds > 0, got " + rate_text);

  std::vector<sim::SourceLayer> layers;
  std::vector<std::int64_t> steps;
  std::string name;
  if (!a.trace.empty()) {
    const auto source = sim::open_trace_source(a.trace);
    layers = source->layers();
    steps = source->steps();
    name = source->model();
  } else {
    const traces::ModelPreset* found = nullptr;
    try {
      found = &traces::find_model_preset(model);
    } catch (const ConfigError& e) {
      throw UsageError(std::string("--model: ") + e.what());
    }
    const auto& preset = *found;
    for (const auto& t : preset.tensors) {
      sim::SourceLayer l;
      l.name = t.name;
      l.shape = t.shape;
      l.numel = static_cast<std::uint64_t>(traces::numel_of(t.shape));
      layers.push_back(std::move(l));
    }
    // Ten million recorded steps: far beyond any trace, and the step list stays below 100 MB.
    const long long n = parse_int("--steps", steps_text, 1, 10'000'000);
    steps.resize(static_cast<std::size_t>(n));
    std::iota(steps.begin(), steps.end(), std::max<std::int64_t>(0, o.windows.warmup_steps));
    name = preset.name;
  }
  std::vector<sim::CandidateSet> sets;
  for (const auto& l : layers) sets.push_back(sim::make_candidates(o.family, o.defaults, l.shape, o.ranges));
  sim::ReplayOptions ro;
  ro.mode = o.error_mode;
  ro.threads = o.threads;
  const auto windows = sim::plan_windows(steps, o.windows).windows;
  ro.windows_total = windows.size();
  // State carries from a window to the next within a burst: each rank then keeps its layers' residuals.
  const bool carries = std::any_of(windows.begin() + (windows.empty() ? 0 : 1), windows.end(), [](const sim::Window& w) { return !w.starts_burst; });
  const auto cost = pipeline::layer_costs(layers, steps.size(), sets, ro);
  const double total = std::accumulate(cost.begin(), cost.end(), 0.0);

  Json rows = Json::array();
  for (int n : rank_counts) {
    const auto split = pipeline::split_layers(cost, n);
    // Replay memory of a rank: the fp32 residuals it carries between windows (every element of its
    // layers, when a burst continues) plus its `threads` largest layer tasks at once (memory limit aside).
    double memory = 0;
    for (const auto& mine : split.layers) {
      std::vector<double> b;
      double carried = 0;
      for (std::size_t l : mine) {
        b.push_back(sim::layer_task_bytes(layers[l].numel));
        carried += carries ? 4.0 * static_cast<double>(layers[l].numel) : 0.0;
      }
      std::sort(b.rbegin(), b.rend());
      const auto running = static_cast<long>(std::min<std::size_t>(b.size(), o.threads));
      memory = std::max(memory, carried + std::accumulate(b.begin(), b.begin() + running, 0.0));
    }
    const double max_cost = *std::max_element(split.cost.begin(), split.cost.end());
    Json row{{"ranks", n},
             {"threads_per_rank", o.threads},
             {"estimated_cost_max_over_mean", split.max_over_mean()},
             {"largest_rank_cost_share", total > 0 ? max_cost / total : 0.0},
             {"rank_replay_memory_bytes", memory},
             {"projected_replay_s", has_rate ? Json(max_cost * rate / static_cast<double>(o.threads)) : Json(nullptr)}};
    rows.push_back(row);
  }
  if (fmt == Format::kJson) {
    std::cout << Json{{"schema_version", 1},
                      {"kind", "lgreco-scaleout"},
                      {"model", name},
                      {"layers", layers.size()},
                      {"steps", steps.size()},
                      {"windows", ro.windows_total},
                      {"estimated_cost_byte_passes", total},
                      {"rate_s_per_byte_pass", has_rate ? Json(rate) : Json(nullptr)},
                      {"family", sim::to_string(o.family)},
                      {"error_mode", sim::to_string(o.error_mode)},
                      {"rows", rows},
                      {"provenance", a.trace.empty() ? provenance_json() : provenance_json({a.trace})}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::printf("%s: %zu layers, %zu steps in %zu window(s), family %s, error mode %s; estimated cost %.4g byte-passes%s\n",
              name.c_str(), layers.size(), steps.size(), ro.windows_total, sim::to_string(o.family).c_str(),
              sim::to_string(o.error_mode).c_str(), total, has_rate ? "; times are projections, not measurements" : "");
  std::printf("rank memory: the fp32 residuals a rank carries between windows%s plus its threads' largest layer tasks "
              "(32 bytes per element)\n",
              carries ? " (4 bytes per element of its layers)" : " (none here: no window continues a burst)");
  std::printf("%7s %8s %9s %12s %14s %14s\n", "ranks", "threads", "max/mean", "max share", "rank memory", "projected");
  for (const auto& r : rows) {
    std::printf("%7d %8u %9.3f %11.1f%% %14s %14s\n", r["ranks"].get<int>(), r["threads_per_rank"].get<unsigned>(),
                r["estimated_cost_max_over_mean"].get<double>(), 100 * r["largest_rank_cost_share"].get<double>(),
                units::format_bytes(r["rank_replay_memory_bytes"].get<double>()).c_str(),
                r["projected_replay_s"].is_null() ? "-" : units::format_seconds(r["projected_replay_s"].get<double>()).c_str());
  }
  return 0;
}

LGRECO_COMMAND("scaleout", "estimate how a trace replay splits over MPI ranks: balance, memory, projected time", run_scaleout);

}  // namespace
}  // namespace lgreco::cli
