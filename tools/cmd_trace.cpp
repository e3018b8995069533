// `lgreco trace synth|info|validate`: write synthetic traces, describe and check trace files.
#include <memory>
#include <fmt/format.h>

#include <climits>
#include <cmath>
#include <iostream>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "core/provenance.hpp"
#include "core/text.hpp"
#include "core/units.hpp"
#include "tools/args.hpp"
#include "tools/command.hpp"
#include "traces/presets.hpp"
#include "traces/reader.hpp"
#include "tools/progress.hpp"
#include "traces/synth.hpp"
#include "traces/validate.hpp"

namespace lgreco::cli {
namespace {

using traces::LayerStats;
using traces::TraceReader;

// Counted progress of a trace command (tools/progress.hpp).
struct Progress {
  std::shared_ptr<ProgressLine> line;
  std::string unit;
  Progress(const std::string& stage, std::string u) : line(std::make_shared<ProgressLine>(stage)), unit(std::move(u)) {}
  void operator()(std::int64_t done, std::int64_t total) const { line->count(done, total, unit); }
};

int run_synth(const std::vector<std::string>& args) {
  std::string model, steps, bursts, burst_length, spacing, dtype = "float32", seed, world, profile = "measured", decay,
      rho, tail, rank, noise, scale, deflate, threads, tflops, out;
  bool force = false;
  ArgParser p("lgreco trace synth",
              "Write a synthetic gradient trace of a model preset (see `lgreco models`): per layer a low-rank\n"
              "matrix with spectral decay, AR(1) step-to-step correlation and noise. The default profile,\n"
              "measured, sets norm, spectrum, correlation and tails by layer class, depth and size as fitted to\n"
              "recorded traces; flat is the earlier generator with the same structure in every layer\n"
              "(docs/synthetic-traces.md, traces/synth.hpp). Deterministic from --seed.");
  p.option("--model", &model, "NAME", "model preset (required)", true)
      .option("--steps", &steps, "N", "recorded steps (required)", true)
      .option("--bursts", &bursts, "K", "split the steps into K bursts of consecutive ids (default 1)")
      .option("--burst-length", &burst_length, "L", "bursts of L consecutive steps (instead of --bursts)")
      .option("--burst-spacing", &spacing, "S", "step-id distance between burst starts (default 1000)")
      .option("--dtype", &dtype, "float32|float16|bfloat16", "storage dtype (default float32)")
      .option("--seed", &seed, "S", "random seed (default 0)")
      .option("--world-size", &world, "W", "data-parallel workers recorded in the trace (default 1)")
      .option("--profile", &profile, "measured|flat", "per-layer parameters: measured (default) or flat")
      .option("--decay", &decay, "X", "spectral decay exponent of every layer: sigma_r = (r+1)^-X (flat default 1.0)")
      .option("--rho", &rho, "X", "AR(1) step-to-step correlation of every layer's factors, [0,1) (flat default 0.9)")
      .option("--tail", &tail, "NU", "Student-t degrees of freedom of every layer's noise (> 2), 0 = Gaussian (flat default 4)")
      .option("--rank-terms", &rank, "R", "rank-1 terms per layer (default 24 measured, 16 flat)")
      .option("--noise", &noise, "X", "every layer's noise norm relative to the low-rank part (flat default 0.3)")
      .option("--scale", &scale, "X", "element RMS of a reference layer (default 1e-3)")
      .option("--deflate", &deflate, "0-9", "HDF5 deflate level (default 1)")
      .option("--threads", &threads, "N", "generator threads (default: all cores)")
      .option("--compute-tflops", &tflops, "X", "also write compute_time_s = backward FLOPs / (X TFLOP/s)")
      .option("--output", &out, "FILE", "output trace (required)", true, "-o")
      .flag("--force", &force, "overwrite an existing output");
  if (!p.parse(args)) return 0;
  if (p.given("--bursts") && p.given("--burst-length")) {
    throw UsageError("lgreco trace synth: give --bursts or --burst-length, not both");
  }
  traces::SynthOptions o;
  o.steps = parse_int("--steps", steps);
  if (p.given("--bursts")) o.bursts = parse_int("--bursts", bursts);
  if (p.given("--burst-length")) o.burst_length = parse_int("--burst-length", burst_length);
  if (p.given("--burst-spacing")) o.burst_spacing = parse_int("--burst-spacing", spacing, 1, traces::kMaxSynthStepId);
  try {
    o.dtype = traces::parse_storage_dtype(dtype);
  } catch (const ConfigError& e) {
    throw UsageError(std::string("lgreco trace synth: --dtype: ") + e.what());
  }
  if (p.given("--seed")) {
    const long long s = parse_int("--seed", seed, 0, LLONG_MAX);
    o.seed = static_cast<std::uint64_t>(s);
  }
  if (p.given("--world-size")) o.world_size = parse_int("--world-size", world);
  try {
    o.profile = traces::parse_synth_profile(profile);
  } catch (const ConfigError& e) {
    throw UsageError(std::string("lgreco trace synth: --profile: ") + e.what());
  }
  if (p.given("--decay")) o.decay = parse_double("--decay", decay);
  if (p.given("--rho")) o.rho = parse_double("--rho", rho);
  if (p.given("--tail")) o.tail = parse_double("--tail", tail);
  if (p.given("--rank-terms")) o.rank_terms = static_cast<int>(parse_int("--rank-terms", rank));
  if (p.given("--noise")) o.noise = parse_double("--noise", noise);
  if (p.given("--scale")) o.scale = parse_double("--scale", scale);
  if (p.given("--deflate")) o.deflate_level = static_cast<int>(parse_int("--deflate", deflate));
  if (p.given("--threads")) o.threads = static_cast<int>(parse_int("--threads", threads));
  if (p.given("--compute-tflops")) o.compute_flops_per_s = parse_double("--compute-tflops", tflops) * 1e12;
  traces::check_synth_options(o);  // a FieldError names the flag (tools/main.cpp)
  const traces::ModelPreset* preset_ptr = nullptr;
  try {
    preset_ptr = &traces::find_model_preset(model);
  } catch (const ConfigError& e) {
    throw UsageError(std::string("lgreco trace synth: --model: ") + e.what());
  }
  const auto& preset = *preset_ptr;
  const Overwrite policy = force ? Overwrite::kAllow : Overwrite::kRefuse;
  check_writable_destination(out, policy);  // before any work
  Progress progress{"trace synth", "layer-steps"};
  traces::synthesize_trace(preset, o, out, policy, std::cref(progress));
  const TraceReader r(out);
  std::cout << fmt::format("wrote {}: model {}, {} layers, {} steps in {} bursts, {}, {}\n", out, preset.name,
                           r.layers().size(), r.steps().size(), r.bursts().size(), traces::to_string(o.dtype),
                           units::format_bytes(static_cast<double>(r.file_size_bytes())));
  return 0;
}

Json bursts_json(const TraceReader& r) {
  Json a = Json::array();
  for (const auto& b : r.bursts()) a.push_back({{"first_step", b.first_step}, {"length", b.length}, {"first_index", b.first_index}});
  return a;
}

std::string bursts_text(const TraceReader& r) {
  std::string s;
  for (const auto& b : r.bursts()) {
    s += (s.empty() ? "" : ", ") + fmt::format("{}..{}", b.first_step, b.first_step + static_cast<std::int64_t>(b.length) - 1);
  }
  return s.empty() ? "none" : s;
}

int run_trace_info(const std::vector<std::string>& args) {
  std::string file;
  Format fmt = Format::kTable;
  ArgParser p("lgreco trace info",
              "Describe a trace: run metadata, steps and bursts, and per layer its shape, kind, DDP bucket,\n"
              "backward order, gradient norms and NaN/Inf counts (reads every step, chunk by chunk).");
  p.positional("FILE", &file, "trace file (HDF5, docs/trace-format.md)").format(&fmt);
  if (!p.parse(args)) return 0;
  const TraceReader r(file);
  Progress progress{"trace info", "layers"};
  const auto stats = traces::scan_trace(r, [&](std::size_t i) {
    progress(static_cast<std::int64_t>(i + 1), static_cast<std::int64_t>(r.layers().size()));
  });
  std::uint64_t params = 0;
  for (const auto& l : r.layers()) params += static_cast<std::uint64_t>(l.numel);
  const auto& h = r.header();
  if (fmt == Format::kJson) {
    Json layers = Json::array();
    for (std::size_t i = 0; i < r.layers().size(); ++i) {
      const auto& l = r.layers()[i];
      const LayerStats& s = stats[i];
      layers.push_back({{"index", i}, {"name", l.name}, {"shape", l.shape}, {"numel", l.numel},
                        {"kind", traces::to_string(l.kind)}, {"bucket", l.bucket}, {"backward_order", l.backward_order},
                        {"dtype", traces::to_string(l.dtype)}, {"l2_norm_mean", s.l2_norm_mean},
                        {"l2_norm_max", s.l2_norm_max}, {"max_abs", s.max_abs}, {"nan_count", s.nan_count},
                        {"inf_count", s.inf_count}, {"zero_steps", s.zero_steps},
                        {"has_compute_time", r.compute_time_s(i).has_value()}});
    }
    const Json doc = {{"schema_version", 1}, {"kind", "lgreco-trace-info"}, {"file", file},
                      {"format", traces::kTraceFormatName}, {"version", traces::kTraceFormatVersion},
                      {"model", h.model}, {"world_size", h.world_size}, {"dtype", traces::to_string(h.dtype)},
                      {"producer", h.producer}, {"created", h.created},
                      {"producer_config", h.producer_config.empty() ? Json(nullptr) : Json(h.producer_config)},
                      {"derived", h.derived},
                      {"steps", r.steps()},
                      {"bursts", bursts_json(r)}, {"parameters", params}, {"file_size_bytes", r.file_size_bytes()},
                      {"has_loss", r.loss().has_value()}, {"has_lr", r.lr().has_value()}, {"layers", layers},
                      {"provenance", provenance_json({file})}};
    std::cout << doc.dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format("trace {}\n  format     {} v{}\n  model      {} (world size {}, stored as {})\n"
                           "  producer   {}{}\n  created    {}\n  steps      {} in {} bursts: {}\n"
                           "  layers     {} tensors, {} parameters ({} fp32 per step)\n  file       {}\n",
                           file, traces::kTraceFormatName, traces::kTraceFormatVersion, h.model, h.world_size,
                           traces::to_string(h.dtype), h.producer,
                           h.producer_config.empty() ? "" : "\n  config     " + h.producer_config, h.created, r.steps().size(), r.bursts().size(),
                           bursts_text(r), r.layers().size(), params, units::format_bytes(4.0 * static_cast<double>(params)),
                           units::format_bytes(static_cast<double>(r.file_size_bytes())));
  if (!h.derived.empty()) {
    // One line: what the file does not hold and the reader filled in (docs/trace-format.md).
    std::string d;
    for (const auto& f : h.derived) d += (d.empty() ? "" : "; ") + f;
    std::cout << "  derived    " << d << "\n";
  }
  std::cout << "\n";
  std::cout << fmt::format("{:>5}  {:<44} {:<18} {:>11} {:<9} {:>6} {:>5} {:>11} {:>11} {:>6} {:>6}\n", "index", "name",
                           "shape", "numel", "kind", "bucket", "bwd", "l2 mean", "l2 max", "nan", "inf");
  for (std::size_t i = 0; i < r.layers().size(); ++i) {
    const auto& l = r.layers()[i];
    std::string shape;
    for (auto d : l.shape) {
      if (!shape.empty()) shape += 'x';
      shape += std::to_string(d);
    }
    std::cout << fmt::format("{:>5}  {:<44} {:<18} {:>11} {:<9} {:>6} {:>5} {:>11.4g} {:>11.4g} {:>6} {:>6}\n", i, l.name,
                             shape, l.numel, traces::to_string(l.kind), l.bucket, l.backward_order, stats[i].l2_norm_mean,
                             stats[i].l2_norm_max, stats[i].nan_count, stats[i].inf_count);
  }
  return 0;
}

int run_trace_validate(const std::vector<std::string>& args) {
  std::string file;
  Format fmt = Format::kTable;
  ArgParser p("lgreco trace validate",
              "Check a trace completely: format and version, layer table, dataset shapes and types, every chunk\n"
              "readable, no NaN/Inf. Exit 0 when valid; exit 1 with the first problem (one line naming the file\n"
              "and dataset) and the per-layer NaN/Inf counts.");
  p.positional("FILE", &file, "trace file (HDF5, docs/trace-format.md)").format(&fmt);
  if (!p.parse(args)) return 0;
  Progress progress{"trace validate", "layers"};
  std::size_t nlayers = 0;
  const auto report = traces::validate_trace(file, [&](std::size_t i) { progress(static_cast<std::int64_t>(++nlayers), -1); });
  if (nlayers > 0) progress.line->show(1.0, std::to_string(nlayers) + " layers");
  if (fmt == Format::kJson) {
    Json layers = Json::array();
    for (std::size_t i = 0; i < report.stats.size(); ++i) {
      layers.push_back({{"index", i}, {"name", report.layers[i].name}, {"nan_count", report.stats[i].nan_count},
                        {"inf_count", report.stats[i].inf_count}, {"zero_steps", report.stats[i].zero_steps}});
    }
    const Json doc = {{"schema_version", 1}, {"kind", "lgreco-trace-validation"}, {"file", file},
                      {"valid", report.ok}, {"first_problem", report.ok ? Json(nullptr) : Json(report.first_problem)},
                      {"warnings", report.warnings}, {"layers", layers}, {"provenance", provenance_json({})}};
    std::cout << doc.dump(2) << "\n";
  } else {
    for (std::size_t i = 0; i < report.stats.size(); ++i) {
      const auto& s = report.stats[i];
      if (s.nan_count > 0 || s.inf_count > 0) {
        std::cout << fmt::format("layer {:>5} {:<44} nan {:>10} inf {:>10}\n", i, report.layers[i].name, s.nan_count,
                                 s.inf_count);
      }
    }
    for (const auto& w : report.warnings) std::cout << "warning: " << w << "\n";
    if (report.ok) {
      const TraceReader r(file);
      std::cout << fmt::format("trace {}: valid ({} layers, {} steps in {} bursts, no NaN/Inf)\n", file,
                               r.layers().size(), r.steps().size(), r.bursts().size());
    }
  }
  if (!report.ok) std::cerr << "lgreco: error: " << printable(report.first_problem) << "\n";
  return report.ok ? 0 : 1;
}

LGRECO_COMMAND("trace synth", "write a synthetic gradient trace of a model preset", run_synth);
LGRECO_COMMAND("trace info", "describe a trace: metadata, layers, norms, NaN/Inf counts", run_trace_info);
LGRECO_COMMAND("trace validate", "check a trace completely (exit 1 with the first problem)", run_trace_validate);

}  // namespace
}  // namespace lgreco::cli
