// `lgreco whatif`: predicted step time of uncompressed, uniform and adaptive schedules over a grid of
// inter-node bandwidths and node counts, from one replay of the trace.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "core/atomic_file.hpp"
#include "core/cancel.hpp"
#include "core/error.hpp"
#include "core/provenance.hpp"
#include "core/units.hpp"
#include "tools/args.hpp"
#include "tools/command.hpp"
#include "pipeline/whatif.hpp"
#include "tools/loop_args.hpp"
#include "tools/net_common.hpp"
#include "tools/plan_report.hpp"
#include "tools/ranks.hpp"

#ifndef LGRECO_SOURCE_DIR
#define LGRECO_SOURCE_DIR "."
#endif

namespace lgreco::cli {
namespace {

/// "1Gbps:400Gbps:12" → 12 log-spaced points from 1 to 400 Gb/s (both ends included);
/// "10Gbps,25Gbps" → those points. Bytes per second.
double bandwidth(const std::string& text) {
  try {
    return units::parse_bandwidth_Bps(text);
  } catch (const ConfigError& e) {
    throw UsageError(std::string("--bandwidth: ") + e.what());
  }
}

std::vector<double> parse_bandwidths(const std::string& text) {
  std::vector<double> out;
  if (text.find(':') != std::string::npos) {
    const auto parts = split_list(text, ':');
    if (parts.size() != 3) throw UsageError("--bandwidth: expected LOW:HIGH:POINTS or a comma list, got '" + text + "'");
    const double lo = bandwidth(parts[0]), hi = bandwidth(parts[1]);
    const long long n = parse_int("--bandwidth", parts[2]);
    if (n < 1 || n > 1000 || hi < lo || (n > 1 && hi == lo))
      throw UsageError("--bandwidth: need LOW <= HIGH (LOW < HIGH for several points) and 1..1000 points, got '" + text + "'");
    for (long long i = 0; i < n; ++i) {
      out.push_back(n == 1 ? lo : lo * std::pow(hi / lo, static_cast<double>(i) / static_cast<double>(n - 1)));
    }
  } else {
    for (const auto& s : split_list(text)) {
      out.push_back(bandwidth(s));
      if (std::count(out.begin(), out.end(), out.back()) > 1) throw UsageError("--bandwidth: " + s + " given twice");
    }
  }
  if (out.empty()) throw UsageError("--bandwidth: no points");
  return out;
}

void run_plot(const std::string& json_path, const std::string& png) {
  const std::string script = std::string(LGRECO_SOURCE_DIR) + "/scripts/whatif_plot.py";
  if (!std::filesystem::exists(script)) throw ConfigError("--plot: plotting script not found at " + script);
  const pid_t pid = fork();
  if (pid < 0) throw Error("--plot: cannot start /usr/bin/python3");
  if (pid == 0) {
    execl("/usr/bin/python3", "python3", script.c_str(), json_path.c_str(), png.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw Error("--plot: " + script + " failed (exit " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                "); is matplotlib installed for /usr/bin/python3?");
  }
}

int run_whatif(const std::vector<std::string>& args) {
  LoopArgs a;
  std::string topology = "4x8xA100-1x25G", bandwidth = "1Gbps:400Gbps:12", nodes_text = "1,2,4,8", gpn, plot, tables,
              network_fit, nccl_env;
  bool force = false;
  Format fmt = Format::kTable;
  ArgParser p("lgreco whatif",
              "Replay the trace once (closed loop, as plan --trace), then predict the step time of the "
              "uncompressed, uniform and adaptive schedules at every (node count, inter-node bandwidth) point; "
              "time-aware engines re-plan per point.");
  add_loop_options(p, a, false);
  p.option("--tables", &tables, "FILE", "candidate tables (JSON or HDF5) from an earlier replay (plan --tables-out) instead of --trace");
  p.option("--topology", &topology, "NAME|FILE", "base cluster whose GPUs and node layout are varied (default 4x8xA100-1x25G)");
  p.option("--bandwidth", &bandwidth, "LOW:HIGH:N|LIST", "inter-node bandwidths: log-spaced range or comma list (default 1Gbps:400Gbps:12)");
  p.option("--nodes", &nodes_text, "LIST", "node counts (default 1,2,4,8)");
  p.option("--gpus-per-node", &gpn, "N", "GPUs per node (default: the topology's)");
  p.option("--network-fit", &network_fit, "FILE",
           "calibration of the base topology from `lgreco net calibrate`, carried over to every point");
  p.option("--nccl-env", &nccl_env, "VARS", kNcclEnvHelp);
  p.option("--plot", &plot, "FILE.png", "also plot speedup against bandwidth (matplotlib, /usr/bin/python3)");
  p.flag("--force", &force, "overwrite an existing plot");
  KernelTimeArgs kt;
  add_kernel_time_options(p, kt);
  p.format(&fmt, true);
  if (!p.parse(args)) return 0;
  const Overwrite policy = force ? Overwrite::kAllow : Overwrite::kRefuse;
  refuse_output_over_inputs(plot, {a.trace, tables, network_fit, topology, kt.profile});
  if (!plot.empty()) check_writable_destination(plot, policy);
  const auto bws = parse_bandwidths(bandwidth);
  std::vector<int> nodes;
  for (const auto& n : split_list(nodes_text)) {
    const long long v = parse_int("--nodes", n);
    if (v < 1 || v > net::kMaxTopologyHosts)
      throw UsageError("--nodes: node counts must be in [1, " + std::to_string(net::kMaxTopologyHosts) + "], got " + n);
    if (std::find(nodes.begin(), nodes.end(), v) != nodes.end()) throw UsageError("--nodes: node count " + n + " given twice");
    nodes.push_back(static_cast<int>(v));
  }
  std::optional<int> gpus;
  if (!gpn.empty()) {
    const long long g = parse_int("--gpus-per-node", gpn);
    if (g < 1 || g > net::kMaxGpusPerHost)
      throw UsageError("--gpus-per-node: expected an integer in [1, " + std::to_string(net::kMaxGpusPerHost) + "], got " + gpn);
    gpus = static_cast<int>(g);
  }

  if (a.trace.empty() == tables.empty()) throw UsageError("lgreco whatif: give exactly one of --trace FILE and --tables FILE");
  LoopRequest req = resolve_loop_options(a);
  pipeline::LoopOptions& o = req.options;
  std::optional<Json> fit_doc;
  if (!network_fit.empty()) fit_doc = read_json_file(network_fit);
  const Json* fit = fit_doc ? &*fit_doc : nullptr;
  const net::NcclEnv env = nccl_env_option(nccl_env);
  const pipeline::Cluster base = pipeline::make_cluster(topology, std::nullopt, gpus, std::nullopt, fit, network_fit, env);
  // Every point's cluster is checked before the replay (which may take minutes): a node count or rate the
  // model cannot build is refused now. The grid's extreme rates stand for the rest.
  const auto [lowest, highest] = std::minmax_element(bws.begin(), bws.end());
  for (int n : nodes) {
    for (double bw : {*lowest, *highest}) {
      try {
        pipeline::make_cluster(topology, n, gpus, bw, fit, network_fit, env);
      } catch (const ConfigError& e) {
        throw UsageError("--nodes " + std::to_string(n) + " at --bandwidth " + units::format_bandwidth(bw) + ": " + e.what());
      }
    }
  }
  const pipeline::KernelTime kernel_time = resolve_kernel_time(kt);
  o.plan.kernel_time = pipeline::kernel_time_fn(kernel_time, base);
  o.gpu = base.gpu;
  o.compute.recorded_scale = resolve_compute_scale(kt);
  pipeline::LoopResult r;
  if (!a.trace.empty()) {
    o.engine = ranks().engine;
    r = pipeline::run_closed_loop(a.trace, o, base.cost.get(), stderr_progress());
    print_layout_note(r.replay_layout);
  } else {
    // Tables computed earlier: plan their last window as the closed loop's final plan.
    r.tables = planner::read_tables(tables);
    r.model = r.tables.model;
    r.plan = o.plan;
    r.compute = pipeline::compute_model(r.tables.windows.back(), r.model, &base.gpu, o.compute);
    pipeline::apply_compute(r.compute, r.tables, r.plan);
    r.plans.push_back(planner::plan_window(r.tables.windows.back(), r.plan, base.cost.get()));
    r.backend = "none (tables)";
    r.provenance = provenance_json({tables});
  }
  if (!r.compute.note.empty()) std::cerr << "lgreco: note: " << r.compute.note << "\n";
  pipeline::WhatIfGrid grid;
  grid.topology = topology;
  grid.nodes = nodes;
  grid.bandwidths_Bps = bws;
  grid.gpus_per_node = gpus;
  grid.network_fit = fit;
  grid.fit_origin = network_fit;
  grid.nccl_env = env;
  grid.kernel_time = kernel_time;
  const bool time_aware = o.plan.engine == planner::Engine::kTime;
  Json points = Json::array();
  // With the presets, how far each point's network times may be off: the held-out errors of its class (every
  // size band: a step moves buckets of every size).
  std::vector<net::PredictionClass> classes;
  for (const auto& pt : pipeline::whatif(r.tables.windows.back(), r.plans.back(), r.plan, grid)) {
    points.push_back(pipeline::point_json(pt));
    if (pt.network_class) classes.push_back(*pt.network_class);
  }
  Json config = pipeline::loop_config(o, r);
  config["trace"] = a.trace;
  config["threads"] = req.threads_requested;
  config["topology"] = base.description;
  config["ranks"] = base.ranks();
  if (!tables.empty()) config["tables"] = tables;
  config["bandwidth"] = bandwidth;
  config["nodes"] = nodes;
  config["replanned_per_point"] = time_aware;
  config["kernel_time"] = pipeline::kernel_time_json(kernel_time, &base);
  const Json doc{{"schema_version", 1},
                 {"kind", "lgreco-whatif"},
                 {"model", r.model},
                 {"family", sim::to_string(o.family)},
                 {"engine", planner::engine_name(o.plan.engine)},
                 {"cluster", base.name},
                 {"points", points},
                 {"expected_network_error", classes.empty() ? Json(nullptr) : net::expected_error_json(classes, net::all_size_bands())},
                 {"config", config},
                 {"provenance", r.provenance}};
  if (!plot.empty()) {
    AtomicPath tmp(std::filesystem::absolute(plot).parent_path() / (".whatif-" + std::to_string(getpid()) + ".json"),
                   Overwrite::kAllow);
    write_json_file(tmp.temp_path(), doc, Overwrite::kAllow);
    run_plot(tmp.temp_path().string(), plot);
  }
  static const char* keys[] = {"bandwidth_Gbps", "nodes", "ranks", "uncompressed_step_s", "uniform_step_s", "adaptive_step_s",
                               "uncompressed_exposed_comm_s", "uniform_exposed_comm_s", "adaptive_exposed_comm_s",
                               "uniform_speedup", "adaptive_speedup", "adaptive_vs_uniform", "uncompressed_bytes_per_step",
                               "uniform_bytes_per_step", "adaptive_bytes_per_step", "compute_s"};
  if (fmt == Format::kJson) {
    std::cout << doc.dump(2) << "\n";
  } else if (fmt == Format::kCsv) {
    for (std::size_t i = 0; i < std::size(keys); ++i) std::cout << (i ? "," : "") << keys[i];
    std::cout << "\n";
    for (const auto& pt : points) {
      for (std::size_t i = 0; i < std::size(keys); ++i) std::cout << (i ? "," : "") << pt[keys[i]].dump();
      std::cout << "\n";
    }
  } else {
    std::printf("%s, family %s, engine %s, base cluster %s%s\n", r.model.c_str(), sim::to_string(o.family).c_str(),
                planner::engine_name(o.plan.engine).c_str(), base.name.c_str(), time_aware ? " (re-planned per point)" : "");
    std::printf("%6s %6s %10s | %11s %11s %11s | %9s %9s %9s | %13s\n", "nodes", "ranks", "Gb/s", "uncompr.", "uniform", "adaptive",
                "uniform", "adaptive", "ada/uni", "adaptive p80");
    for (const auto& pt : points) {
      std::string range = "-";
      if (const auto& r = pt["adaptive_speedup_range_p80"]; r.is_array()) {
        char b[32];
        std::snprintf(b, sizeof b, "%.2f-%.2fx", r[0].get<double>(), r[1].get<double>());
        range = b;
      }
      std::printf("%6d %6d %10.3g | %11s %11s %11s | %8.2fx %8.2fx %8.2fx | %13s\n", pt["nodes"].get<int>(), pt["ranks"].get<int>(),
                  pt["bandwidth_Gbps"].get<double>(), units::format_seconds(pt["uncompressed_step_s"].get<double>()).c_str(),
                  units::format_seconds(pt["uniform_step_s"].get<double>()).c_str(),
                  units::format_seconds(pt["adaptive_step_s"].get<double>()).c_str(), pt["uniform_speedup"].get<double>(),
                  pt["adaptive_speedup"].get<double>(), pt["adaptive_vs_uniform"].get<double>(), range.c_str());
    }
    if (!classes.empty())
      std::printf("adaptive p80: the adaptive speedup with the network times slower or faster by the factor within which 80 %% "
                  "of their class's held-out rows lie (below)\n");
    for (const auto& line : net::expected_error_lines(classes, net::all_size_bands())) std::printf("%s\n", line.c_str());
    if (!plot.empty()) std::printf("plot written to %s\n", plot.c_str());
  }
  return 0;
}

LGRECO_COMMAND("whatif", "predict speedups of uniform and adaptive compression over bandwidths and node counts", run_whatif);

}  // namespace
}  // namespace lgreco::cli
