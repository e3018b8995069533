// `lgreco net calibrate | predict | validate | topology`: the network model from the command line.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <iostream>
#include <limits>
#include <optional>

#include "core/atomic_file.hpp"
#include "core/json_util.hpp"
#include "core/provenance.hpp"
#include "core/text.hpp"
#include "core/units.hpp"
#include "network_models/corpus.hpp"
#include "network_models/corpus_fit.hpp"
#include "network_models/nccl_tests.hpp"
#include "tools/args.hpp"
#include "tools/command.hpp"
#include "tools/net_common.hpp"

namespace lgreco::cli {
namespace {

/// "32K:16G" (doubling, as nccl-tests -b/-e -f 2) or "1024,4096,1M".
std::vector<double> parse_sizes(const std::string& text) {
  std::vector<double> out;
  const auto colon = text.find(':');
  if (colon != std::string::npos) {
    const double lo = static_cast<double>(units::parse_bytes(text.substr(0, colon)));
    const double hi = static_cast<double>(units::parse_bytes(text.substr(colon + 1)));
    if (lo <= 0 || hi < lo) throw UsageError("--sizes " + text + ": expected MIN:MAX with 0 < MIN <= MAX");
    for (double s = lo; s <= hi; s *= 2) out.push_back(s);
  } else {
    for (const auto& item : split_list(text)) out.push_back(static_cast<double>(units::parse_bytes(item)));
  }
  if (out.empty()) throw UsageError("--sizes " + text + ": no sizes");
  return out;
}

// The point the model misses most (|predicted/measured - 1|).
const net::FitPoint& worst_point(const std::vector<net::FitPoint>& v) {
  const net::FitPoint* w = &v.front();
  for (const auto& p : v)
    if (std::abs(p.predicted_s / p.measured_s - 1) > std::abs(w->predicted_s / w->measured_s - 1)) w = &p;
  return *w;
}

// --collective's value; an unknown name is the option's usage error.
Collective collective_option(const std::string& s) {
  try {
    return parse_collective(s);
  } catch (const ConfigError& e) {
    throw UsageError(std::string("--collective: ") + e.what());
  }
}

// Ranks and collective of an nccl-tests run: the options when given, else what the file says.
std::pair<int, Collective> run_shape(const std::string& file, const net::NcclTestsRun& run, const std::string& ranks_s,
                                     const std::string& coll_s) {
  int ranks = parse_ranks(ranks_s);
  if (ranks == 0 && run.ranks) ranks = *run.ranks;
  if (ranks == 0) throw UsageError(file + ": the file does not say how many ranks ran; pass --ranks");
  if (!coll_s.empty()) return {ranks, collective_option(coll_s)};
  if (run.collective) return {ranks, *run.collective};
  throw UsageError(file + ": the file does not name its collective; pass --collective");
}

void print_points(const std::vector<net::FitPoint>& pts) {
  std::printf("%14s %12s %12s %8s %-12s %-7s\n", "size_bytes", "measured_us", "model_us", "err_%", "algorithm", "proto");
  for (const auto& p : pts) {
    std::printf("%14.0f %12.2f %12.2f %8.1f %-12s %-7s\n", p.size_bytes, p.measured_s * 1e6, p.predicted_s * 1e6,
                100 * (p.predicted_s / p.measured_s - 1), net::to_string(p.algorithm), net::to_string(p.protocol));
  }
}

int run_calibrate(const std::vector<std::string>& args) {
  std::string file, topology, ranks_s, coll_s, out, selection = "fastest", nccl_env_s;
  bool force = false, allow_poor = false;
  Format fmt;
  ArgParser p("lgreco net calibrate", "Fit the network model's parameters for a topology to nccl-tests results (standard "
                                      "all_reduce_perf/all_gather_perf output or the TSV form) and save them as a fit JSON.");
  p.positional("FILE", &file, "nccl-tests output or TSV")
      .option("--topology", &topology, "T", "preset, cluster spec (4x8xA100-4x100G) or topology JSON", true)
      .option("--ranks", &ranks_s, "N", "rank count of the measurement (default: from the file)")
      .option("--collective", &coll_s, "C", "allreduce|allgather|reducescatter|broadcast (default: from the file)")
      .option("--selection", &selection, "S", "fastest (default) or nccl-tuning: pick the pair by NCCL's own uncalibrated model")
      .option("--nccl-env", &nccl_env_s, "VARS", "the NCCL restrictions the sweep ran under, e.g. 'NCCL_ALGO=Ring' (default: none)")
      .option("--output", &out, "FILE", "fit JSON to write", true, "-o")
      .flag("--force", &force, "overwrite an existing output")
      .flag("--allow-poor-fit", &allow_poor, "write the calibration even when it misses its own sweep by more than a typical factor 1.65")
      .format(&fmt);
  if (!p.parse(args)) return 0;
  const Overwrite policy = force ? Overwrite::kAllow : Overwrite::kRefuse;
  refuse_output_over_inputs(out, {file, topology});
  check_writable_destination(out, policy);
  const net::NcclTestsRun run = net::load_nccl_tests(file);
  const auto [ranks, c] = run_shape(file, run, ranks_s, coll_s);
  const net::Topology t = net::resolve_topology(topology);
  const net::NcclEnv env = nccl_env_option(nccl_env_s);
  const net::Selection sel = net::parse_selection(selection, "--selection");
  const net::FitResult fit = net::fit_model(t, ranks, c, run.points, sel, env);
  if (fit.rms_log_error > net::kPoorFitRmsLn && !allow_poor) {
    const net::FitPoint* w = &worst_point(fit.points);
    char what[200];
    std::snprintf(what, sizeof what, "the calibrated model misses the sweep by a typical factor %.3g (rms ln-error %.3g > %.2g; worst %+.1f %% at %.0f B)",
                  std::exp(fit.rms_log_error), fit.rms_log_error, net::kPoorFitRmsLn, 100 * (w->predicted_s / w->measured_s - 1), w->size_bytes);
    throw InputError(file + ": " + what + ": is it " + lgreco::to_string(c) + " on " + std::to_string(ranks) + " ranks of " + topology +
                     "? (--allow-poor-fit writes it anyway)");
  }
  std::vector<std::filesystem::path> inputs{file};
  if (std::error_code ec; std::filesystem::is_regular_file(topology, ec)) inputs.push_back(topology);
  const Json config{{"source", file}, {"topology", topology}, {"ranks", ranks}, {"collective", lgreco::to_string(c)}, {"selection", selection},
                    {"time_column", "out-of-place"}, {"loss", "soft-L1 on ln(predicted/measured), scale 0.05"},
                    {"optimizer", "Levenberg-Marquardt, " + std::to_string(fit.starts) + " seeded starts"},
                    {"nccl_env", env.restricted() ? Json(env.text) : Json(nullptr)}};
  std::optional<net::HoldoutCheck> holdout;
  if (run.points.size() >= 4) holdout = net::holdout_check(t, ranks, c, run.points, sel, env);
  const Json doc = net::fit_to_json(fit, config, provenance_json(inputs), holdout ? &*holdout : nullptr);
  write_json_file(out, doc, policy);
  if (fmt == Format::kJson) {
    std::cout << doc.dump(2) << "\n";
  } else {
    print_points(fit.points);
    std::printf("rms ln-error %.4f, max |error| %.1f %%, %zu points; wrote %s\n", fit.rms_log_error, 100 * fit.max_abs_rel_error,
                fit.points.size(), out.c_str());
    // How well the sweep determines each parameter: the value times or divided by the factor is one standard error.
    std::string se;
    for (const auto& [name, v] : fit.std_ln) {
      char part[96];
      std::snprintf(part, sizeof part, "%s%s x%.3g", se.empty() ? "" : ", ", name.c_str(), std::exp(v));
      se += part;
    }
    std::printf("standard errors (the value times or divided by): %s\n", se.c_str());
    if (holdout) {
      // Where the model is least certain: the worst held-out size of each direction.
      const auto &a = worst_point(holdout->even_to_odd), &b = worst_point(holdout->odd_to_even);
      std::printf("held-out check (fit on every other size, predict the rest): worst %+.1f %% at %.0f B (even→odd), "
                  "%+.1f %% at %.0f B (odd→even)\n",
                  100 * (a.predicted_s / a.measured_s - 1), a.size_bytes, 100 * (b.predicted_s / b.measured_s - 1), b.size_bytes);
    }
  }
  return 0;
}

int run_predict(const std::vector<std::string>& args) {
  std::string topology, fit, coll_s = "allreduce", sizes_s, ranks_s, nccl_env;
  Format fmt;
  ArgParser p("lgreco net predict", "Predict collective times like nccl-tests prints them (size, time, algbw, busbw) with the "
                                    "algorithm and protocol the model picks.");
  p.option("--topology", &topology, "T", "preset, cluster spec or topology JSON", true)
      .option("--network-fit", &fit, "FILE", "calibration from `lgreco net calibrate`")
      .option("--nccl-env", &nccl_env, "VARS", kNcclEnvHelp)
      .option("--collective", &coll_s, "C", "allreduce|allgather|reducescatter|broadcast (default allreduce)")
      .option("--sizes", &sizes_s, "SIZES", "MIN:MAX doubling (32K:16G) or a comma list of byte counts", true)
      .option("--ranks", &ranks_s, "N", "ranks (default: every GPU of the topology)")
      .format(&fmt);
  if (!p.parse(args)) return 0;
  const auto c = collective_option(coll_s);
  const auto sizes = parse_sizes(sizes_s);
  std::vector<std::filesystem::path> inputs;
  net::Topology topo;
  const net::CollectiveModel m = resolve_model(topology, parse_ranks(ranks_s), fit, &inputs, &topo, nccl_env);
  // With the presets, the error their held-out run showed for this class of system at these sizes; a calibration
  // is the user's own fit and carries its own held-out check (net calibrate).
  std::vector<net::PredictionClass> classes;
  if (fit.empty() && m.ranks() > 1) classes.push_back(net::prediction_class(topo, m.embedding()));
  std::vector<net::SizeBand> bands;
  for (double s : sizes) bands.push_back(net::size_band(s));
  Json rows = Json::array();
  // Every size first: a size nothing is available for (an --nccl-env that leaves none) fails before any output.
  std::vector<net::Choice> choices;
  for (double s : sizes) choices.push_back(m.best(c, s));
  if (fmt != Format::kJson) std::printf("%14s %12s %10s %10s %-12s %-7s\n", "size_bytes", "time_us", "algbw_GBps", "busbw_GBps", "algorithm", "proto");
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const double s = sizes[i];
    const auto& ch = choices[i];
    const double algbw = ch.time_s > 0 ? s / ch.time_s / 1e9 : 0;
    const double busbw = algbw * m.busbw_factor(c);
    rows.push_back({{"size_bytes", s}, {"time_us", ch.time_s * 1e6}, {"algbw_GBps", algbw}, {"busbw_GBps", busbw},
                    {"algorithm", net::to_string(ch.algorithm)}, {"protocol", net::to_string(ch.protocol)}});
    if (fmt != Format::kJson) {
      std::printf("%14.0f %12.2f %10.2f %10.2f %-12s %-7s\n", s, ch.time_s * 1e6, algbw, busbw, net::to_string(ch.algorithm), net::to_string(ch.protocol));
    }
  }
  if (fmt == Format::kJson) {
    const Json config{{"topology", topology}, {"network_fit", fit.empty() ? Json(nullptr) : Json(fit)}, {"collective", lgreco::to_string(c)},
                      {"ranks", m.ranks()}, {"hosts", m.embedding().hosts}, {"nccl_version", m.params().nccl_version},
                      {"nccl_env", m.params().nccl_env.restricted() ? Json(m.params().nccl_env.text) : Json(nullptr)}};
    std::cout << Json{{"schema_version", 1}, {"kind", "lgreco-net-predict"}, {"rows", rows}, {"config", config},
                      {"expected_error", classes.empty() ? Json(nullptr) : net::expected_error_json(classes, bands)},
                      {"provenance", provenance_json(inputs)}}.dump(2)
              << "\n";
  } else {
    for (const auto& line : net::expected_error_lines(classes, bands)) std::printf("%s\n", line.c_str());
  }
  return 0;
}

/// One measured row to validate.
struct MeasuredRow {
  Collective collective = Collective::kAllreduce;
  int ranks = 0;
  double size_bytes = 0, time_s = 0;
  std::string where;  ///< the file and, for a corpus row, its line: errors about the row name it
};

/// Systems printed in the evidence table: a share of at least this much.
constexpr double kEvidencePrintShare = 0.05;

/// What pins each constant (net::constant_evidence at `k`): JSON by constant name, and with `print` a table.
Json evidence_json(const std::vector<net::PreparedFile>& files, const net::CorpusConstants& k, bool print) {
  std::vector<const net::PreparedFile*> all;
  for (const auto& f : files) all.push_back(&f);
  const auto evidence = net::constant_evidence(all, k);
  if (print)
    std::printf("\nwhat pins each constant: the fit's standard error as a factor (se xF: the value times or divided by F, every\n"
                "constant fitted together), its prior's share of the objective's curvature in ln(constant) with the others held, then\n"
                "the systems with a share of %.0f %% or more, each with the size range and rank counts of the fewest rows that carry\n"
                "%.0f %% of it and the factor by which the standard error of ln(constant) grows without the system's rows\n",
                100 * kEvidencePrintShare, 100 * net::kEvidenceRowShare);
  Json out = Json::object();
  for (const auto& e : evidence) {
    Json systems = Json::array();
    std::string line;
    for (const auto& s : e.systems) {
      systems.push_back({{"system", s.system}, {"share", s.share}, {"rows", s.rows}, {"min_size_bytes", s.min_size_bytes},
                         {"max_size_bytes", s.max_size_bytes}, {"ranks", s.ranks}, {"std_ln_without", s.std_ln_without}});
      if (s.share < kEvidencePrintShare) continue;
      std::string ranks;
      for (int r : s.ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
      const std::string sizes = s.min_size_bytes == s.max_size_bytes ? units::format_bytes_exact(s.min_size_bytes)
                                                                     : units::format_bytes_exact(s.min_size_bytes) + "-" + units::format_bytes_exact(s.max_size_bytes);
      char part[200];
      std::snprintf(part, sizeof part, "%s%s %.0f %% (%s, %s ranks; x%.2f without)", line.empty() ? "" : "; ", s.system.c_str(), 100 * s.share,
                    sizes.c_str(), ranks.c_str(), s.std_ln_without / e.std_ln);
      line += part;
    }
    if (print)
      std::printf("  %-22s se x%-6.3g prior %3.0f %%  %s\n", e.name.c_str(), std::exp(e.std_ln), 100 * e.prior_share,
                  line.empty() ? "(no system at 5 %)" : line.c_str());
    out[e.name] = {{"prior_share", e.prior_share}, {"std_ln", e.std_ln}, {"prior_std_ln", e.prior_std_ln}, {"systems", systems}};
  }
  return out;
}

/// `net validate DIR`: every corpus file of DIR with the presets, each system held out (--holdout), or with
/// the constants refitted on the whole directory (--refit: what the presets would ship with this corpus).
/// --evidence prints what pins each constant (always in the JSON, except held out).
int validate_corpus_dir(const std::string& dir, bool holdout, bool refit, bool evidence, const std::string& bands_out, bool force,
                        Format fmt) {
  // The output is refused before the two minutes of fits when it exists and --force is not given.
  std::optional<AtomicFile> bands_file;
  if (!bands_out.empty()) {
    // Not over one of the corpus' own files (its measurements or topologies), --force or not.
    std::vector<std::filesystem::path> inputs;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
      if (e.is_regular_file(ec)) inputs.push_back(e.path());
    refuse_output_over_inputs(bands_out, inputs);
    bands_file.emplace(bands_out, force ? Overwrite::kAllow : Overwrite::kRefuse);
  }
  const auto files = net::prepare_corpus(net::load_corpus_dir(dir));
  Json rows = Json::array(), systems = Json::array(), constants = Json::object(), fit_json = nullptr;
  net::CorpusConstants k = net::corpus_constants();
  std::optional<net::CorpusFit> fit;
  // Per constant, the lowest and highest value among the fit's near optima (printed units).
  std::vector<std::pair<double, double>> range;
  if (refit) {
    std::vector<const net::PreparedFile*> all;
    for (const auto& f : files) all.push_back(&f);
    fit = net::fit_corpus(all);
    k = fit->constants;
    Json ranges = Json::object();
    for (const auto& d : net::corpus_constant_defs()) {
      std::pair<double, double> r{std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()};
      for (auto o : fit->near_optima) r = {std::min(r.first, d.ref(o.constants) * d.print_factor), std::max(r.second, d.ref(o.constants) * d.print_factor)};
      range.push_back(r);
      ranges[d.name] = {r.first, r.second};
    }
    Json objectives = Json::array();
    for (const auto& o : fit->near_optima) objectives.push_back(o.objective);
    fit_json = {{"objective", fit->objective}, {"chains", fit->search.chains}, {"hops", fit->search.hops}, {"near_optimum_pct", 100 * net::kNearOptimum},
                {"near_optima", fit->near_optima.size()}, {"near_optima_objectives", objectives}, {"constants_range", ranges}};
  }
  // Held out, every system has its own constants (not printed); otherwise the ones predicting every row.
  if (holdout)
    constants = nullptr;
  else
    for (const auto& d : net::corpus_constant_defs()) constants[d.name] = d.ref(k) * d.print_factor;
  const char* mode = holdout ? "leave-one-system-out" : refit ? "refit" : "presets";
  if (fmt != Format::kJson) {
    if (refit) {
      std::printf("constants fitted on the %zu files of %s: objective %.6g, best of %d chains of %d basin hops; shipped presets'\n"
                  "values in brackets, then the range among the %zu chains that end within %.0f %% of the best objective (a wide\n"
                  "range: the corpus hardly determines the constant)\n",
                  files.size(), dir.c_str(), fit->objective, fit->search.chains, fit->search.hops, fit->near_optima.size(),
                  100 * net::kNearOptimum);
      net::CorpusConstants shipped = net::corpus_constants();  // a copy: ConstantDef::ref needs a mutable object
      const auto& defs = net::corpus_constant_defs();
      for (std::size_t j = 0; j < defs.size(); ++j) {
        const auto& d = defs[j];
        std::printf("  %-22s %12.6g %-4s (%.6g)  %.4g-%.4g\n", d.name.c_str(), d.ref(k) * d.print_factor, d.unit.c_str(),
                    d.ref(shipped) * d.print_factor, range[j].first, range[j].second);
      }
    }
    std::printf("%s\n%-26s %9s %14s %5s %9s %14s %5s\n",
                holdout ? "leave-one-system-out (fit without the system, predict it)" : refit ? "refitted constants" : "presets",
                "system", ">=1MiB_%", "at_size", "ranks", "<1MiB_%", "at_size", "ranks");
  }
  const auto validated = net::validate_corpus(files, holdout, k);
  for (const auto& v : validated) {
    for (const auto& [f, p] : v.points) {
      rows.push_back({{"system", v.system}, {"file", std::filesystem::path(f->file.origin).filename().string()},
                      {"benchmark", f->file.benchmark == net::Benchmark::kPytorch ? "pytorch" : "nccl-tests"},
                      {"collective", lgreco::to_string(p.row.collective)}, {"ranks", p.row.ranks}, {"hosts", p.hosts},
                      {"size_bytes", p.row.size_bytes}, {"measured_us", p.row.time_s * 1e6}, {"predicted_us", p.predicted_s * 1e6},
                      {"error_pct", 100 * p.error()}, {"algorithm", net::to_string(p.algorithm)}, {"protocol", net::to_string(p.protocol)}});
    }
    const auto& s = v.errors;
    auto worst = [](const std::optional<net::ValidationPoint>& p) {
      return p ? Json{{"error_pct", 100 * p->error()}, {"size_bytes", p->row.size_bytes}, {"ranks", p->row.ranks}} : Json(nullptr);
    };
    systems.push_back({{"system", v.system}, {"at_least_1MiB", worst(s.worst_large)}, {"below_1MiB", worst(s.worst_small)}, {"meets_bars", v.meets_bars()}});
    if (fmt != Format::kJson) {
      std::printf("%-26s %+9.1f %14.0f %5d %+9.1f %14.0f %5d%s\n", v.system.c_str(), 100 * s.large_error(),
                  s.worst_large ? s.worst_large->row.size_bytes : 0.0, s.worst_large ? s.worst_large->row.ranks : 0, 100 * s.small_error(),
                  s.worst_small ? s.worst_small->row.size_bytes : 0.0, s.worst_small ? s.worst_small->row.ranks : 0, v.meets_bars() ? "" : "  (misses the bars)");
    }
  }
  const net::CorpusTotals t = net::corpus_totals(validated);
  const double nccl_median = net::nccl_constants_median(files);  // the baseline: NCCL's own constants
  if (fmt != Format::kJson)
    std::printf("systems within the bars: %d of %d; rows within their bar: %d of %d; median |ln(pred/meas)| %.3f (NCCL's own constants: %.3f)\n",
                t.systems_within, t.systems, t.rows_within, t.rows, t.median_abs_log, nccl_median);
  // Node-count trends of the multi-node systems, from the same predictions.
  const auto trends = net::node_count_trends(validated);
  Json trends_json = Json::array();
  int trends_within = 0;
  if (fmt != Format::kJson && !trends.empty())
    std::printf("\nnode-count trends: allreduce at the largest size of each host count (bar %.0f %%)\n%-26s %5s %14s %12s %12s %8s %9s %9s\n",
                100 * net::kTrendBar, "system", "hosts", "size_bytes", "meas_us", "pred_us", "error_%", "meas_t/t0", "pred_t/t0");
  for (const auto& tr : trends) {
    Json points = Json::array();
    for (const auto& q : tr.points) {
      const auto& p = q.point;
      points.push_back({{"hosts", q.hosts}, {"ranks", p.row.ranks}, {"size_bytes", p.row.size_bytes}, {"measured_us", p.row.time_s * 1e6},
                        {"predicted_us", p.predicted_s * 1e6}, {"error_pct", 100 * p.error()}, {"measured_ratio", q.measured_ratio},
                        {"predicted_ratio", q.predicted_ratio}});
      if (fmt != Format::kJson)
        std::printf("%-26s %5d %14.0f %12.1f %12.1f %+8.1f %9.2f %9.2f%s\n", tr.system.c_str(), q.hosts, p.row.size_bytes, p.row.time_s * 1e6,
                    p.predicted_s * 1e6, 100 * p.error(), q.measured_ratio, q.predicted_ratio,
                    q.within_bar() ? "" : "  (misses the bar)");
    }
    if (tr.meets_bar()) ++trends_within;
    trends_json.push_back({{"system", tr.system}, {"meets_bar", tr.meets_bar()}, {"points", points}});
  }
  if (fmt != Format::kJson && !trends.empty())
    std::printf("node-count trends within the bar: %d of %zu systems\n", trends_within, trends.size());
  // What pins each constant, at the constants that predicted the rows (none held out: each fit has its own).
  const Json evidence_doc = holdout ? Json(nullptr) : evidence_json(files, k, evidence && fmt != Format::kJson);
  // Held out: the error to expect of a prediction for a system outside the corpus, per class and size band.
  Json bands_json = nullptr;
  if (holdout) {
    const net::ErrorBands bands = net::error_bands(validated);
    bands_json = Json::object();
    if (fmt != Format::kJson) std::printf("\nerror bands: |ln(pred/meas)| held out, per prediction class and size band, as factors\n");
    for (int c = 0; c < net::kNumPredictionClasses; ++c) {
      const auto pc = static_cast<net::PredictionClass>(c);
      bands_json[net::to_string(pc)] = net::class_bands_json(bands, pc, net::all_size_bands());
      if (fmt != Format::kJson)
        for (auto sb : net::all_size_bands()) std::printf("  %s\n", net::describe_band(net::band_of(bands, pc, sb), pc, sb).c_str());
    }
    if (bands_file) {
      std::string corpus = std::filesystem::path(dir).lexically_normal().generic_string();
      while (corpus.size() > 1 && corpus.back() == '/') corpus.pop_back();
      bands_file->stream() << net::error_bands_source(bands, {corpus, t.systems, t.rows});
      bands_file->commit();
      if (fmt != Format::kJson) std::printf("error bands written to %s\n", bands_out.c_str());
    }
  }
  if (fmt == Format::kJson) {
    const Json totals{{"systems", t.systems}, {"systems_within_bars", t.systems_within}, {"rows", t.rows},
                      {"rows_within_bars", t.rows_within}, {"median_abs_log_error", t.median_abs_log},
                      {"median_abs_log_error_nccl_constants", nccl_median},
                      {"trends", trends.size()}, {"trends_within_bar", trends_within}};
    std::cout << Json{{"schema_version", 1}, {"kind", "lgreco-net-validate-corpus"}, {"mode", mode}, {"constants", constants}, {"fit", fit_json},
                      {"evidence", evidence_doc}, {"error_bands", bands_json},
                      {"bars_pct", {{"at_least_1MiB", 100 * net::kLargeBar}, {"below_1MiB", 100 * net::kSmallBar}, {"node_trend", 100 * net::kTrendBar}}},
                      {"systems", systems}, {"trends", trends_json}, {"totals", totals}, {"rows", rows}, {"provenance", provenance_json({})}}
                     .dump(2)
              << "\n";
  }
  return 0;
}

int run_net_validate(const std::vector<std::string>& args) {
  std::string file, topology, ranks_s, coll_s, fit, bench_s, gpp_s, nccl_env_s;
  std::string bands_out;
  bool holdout = false, refit = false, evidence = false, force = false;
  Format fmt;
  ArgParser p("lgreco net validate", "Compare the model's predictions with measured collective times: a corpus file "
                                     "(tests/data/network/*.tsv) or nccl-tests output (standard table or TSV). Prints measured and "
                                     "predicted time, algbw and busbw per size with the error, and the worst error at >= 1 MiB and below.");
  p.positional("FILE", &file, "corpus file, nccl-tests output, or a corpus directory (every file, per system)")
      .option("--topology", &topology, "T", "preset, cluster spec or topology JSON (default: the corpus file's)")
      .option("--ranks", &ranks_s, "N", "rank count of an nccl-tests file (default: from the file)")
      .option("--collective", &coll_s, "C", "collective of an nccl-tests file (default: from the file)")
      .option("--network-fit", &fit, "FILE", "validate a calibration from `lgreco net calibrate` instead of the preset (no benchmark terms: the fit holds them)")
      .option("--benchmark", &bench_s, "B", "nccl-tests or pytorch: adds PyTorch's per-call host cost (default: the file's; nccl-tests)")
      .option("--gpus-per-process", &gpp_s, "G", "1 or node: one process drives all GPUs of a host, nccl-tests -g N (default: the file's; 1)")
      .option("--nccl-env", &nccl_env_s, "VARS", "the run's NCCL restrictions, e.g. 'NCCL_ALGO=Ring' (default: the corpus file's nccl_env; none)")
      .flag("--holdout", &holdout, "with a corpus directory: fit the presets' constants without each system and predict it")
      .flag("--refit", &refit, "with a corpus directory: fit the presets' constants on all its files, print them (each with its range among the near-optimal starts) and predict with them")
      .flag("--evidence", &evidence, "with a corpus directory: print what pins each constant: its standard error, its prior's share and the systems' rows that set it (always in --format json)")
      .option("--write-error-bands", &bands_out, "FILE", "with --holdout: write the held-out error bands as the source of network_models/error_bands_table.cpp (what the tools print as the expected error of the presets)")
      .flag("--force", &force, "overwrite an existing --write-error-bands file")
      .format(&fmt);
  if (!p.parse(args)) return 0;
  if (std::error_code ec; std::filesystem::is_directory(file, ec)) {
    if (!topology.empty() || !fit.empty() || !bench_s.empty() || !gpp_s.empty() || !ranks_s.empty() || !coll_s.empty() || !nccl_env_s.empty())
      throw UsageError("a corpus directory takes only --holdout, --refit, --evidence, --write-error-bands and --format (each file names its topology and benchmark)");
    if (holdout && refit) throw UsageError("--holdout and --refit exclude each other (--holdout refits without each system)");
    if (holdout && evidence) throw UsageError("--evidence goes with the presets or --refit, not --holdout (each held-out fit has constants of its own)");
    if (!bands_out.empty() && !holdout) throw UsageError("--write-error-bands needs --holdout (the bands are held-out errors)");
    if (force && bands_out.empty()) throw UsageError("--force goes with --write-error-bands");
    return validate_corpus_dir(file, holdout, refit, evidence, bands_out, force, fmt);
  }
  if (!bands_out.empty() || force) throw UsageError("--write-error-bands needs a corpus directory and --holdout, not the file " + file);
  if (holdout || refit || evidence)
    throw UsageError(std::string(holdout ? "--holdout" : refit ? "--refit" : "--evidence") + " needs a corpus directory, not the file " + file);
  // The size limit of nccl-tests logs (net::load_nccl_tests); devices and oversized files are refused.
  const std::string text = read_text_file(file, std::uint64_t{256} << 20);
  std::vector<MeasuredRow> rows;
  std::optional<net::Topology> corpus_topology;
  net::Benchmark bench = net::Benchmark::kNcclTests;
  bool per_host = false;
  std::string source, excluded;
  net::NcclEnv env;
  if (net::is_corpus_text(text)) {
    const net::CorpusFile f = net::parse_corpus(text, file);
    for (const auto& r : f.rows) rows.push_back({r.collective, r.ranks, r.size_bytes, r.time_s, file + ":" + std::to_string(r.line)});
    bench = f.benchmark;
    per_host = f.one_process_per_host;
    source = f.source;
    excluded = f.excluded;
    env = f.nccl_env;
    if (topology.empty()) corpus_topology = net::corpus_topology(f), topology = f.topology;
  } else {
    const net::NcclTestsRun run = net::parse_nccl_tests(text, printable(file));
    const auto [ranks, c] = run_shape(file, run, ranks_s, coll_s);
    for (const auto& pt : run.points) rows.push_back({c, ranks, pt.size_bytes, pt.time_s, file});
    // "nGpus N" or "-g N" (N > 1) in the header: one process drives N GPUs (nccl-tests -g N).
    per_host = run.gpus_per_process.value_or(1) > 1;
  }
  if (topology.empty()) throw UsageError(file + ": not a corpus file naming its topology; pass --topology");
  if (!bench_s.empty()) {
    if (bench_s != "nccl-tests" && bench_s != "pytorch") throw UsageError("--benchmark " + bench_s + ": expected nccl-tests or pytorch");
    bench = bench_s == "pytorch" ? net::Benchmark::kPytorch : net::Benchmark::kNcclTests;
  }
  if (!gpp_s.empty()) {
    if (gpp_s != "1" && gpp_s != "node") throw UsageError("--gpus-per-process " + gpp_s + ": expected 1 or node");
    per_host = gpp_s == "node";
  }
  if (!nccl_env_s.empty()) env = nccl_env_option(nccl_env_s);
  std::vector<std::filesystem::path> inputs{file};
  const net::Topology t = corpus_topology ? *corpus_topology : net::resolve_topology(topology);
  if (std::error_code ec; !corpus_topology && std::filesystem::is_regular_file(topology, ec)) inputs.push_back(topology);
  Json fit_doc;
  if (!fit.empty()) {
    fit_doc = read_json_file(fit);
    inputs.push_back(fit);
  }
  std::map<int, net::CollectiveModel> models;
  auto model = [&](int ranks) -> const net::CollectiveModel& {
    auto it = models.find(ranks);
    if (it != models.end()) return it->second;
    const net::Embedding e = net::embed(t, ranks);
    net::ModelParams params = fit.empty() ? net::default_params(t, e) : net::params_from_fit(fit_doc, fit, t, ranks);
    // A calibration was fitted on benchmark figures and so already holds their host cost.
    if (fit.empty()) params.host_overhead_s = net::benchmark_overhead_s(net::corpus_constants(), bench, per_host ? e.ranks_per_host : 1);
    params.nccl_env = env;
    return models.emplace(ranks, net::CollectiveModel(e, t, params)).first->second;
  };
  // Every row's model first: a rank count the topology cannot hold is refused before any row is printed.
  for (const auto& r : rows) {
    try {
      model(r.ranks);
    } catch (const ConfigError& e) {
      throw InputError(r.where + ": " + e.what());
    }
  }
  Json out_rows = Json::array();
  const double mib = 1048576.0;
  std::optional<std::pair<double, double>> worst_large, worst_small;  // (error, size)
  if (fmt != Format::kJson) {
    std::printf("%14s %5s %12s %9s %9s %12s %9s %9s %8s %-9s %-6s\n", "size_bytes", "ranks", "meas_us", "algbw", "busbw", "pred_us", "algbw",
                "busbw", "err_%", "algorithm", "proto");
  }
  for (const auto& r : rows) {
    const net::CollectiveModel& m = model(r.ranks);
    const net::Choice ch = m.best(r.collective, r.size_bytes);
    const double err = ch.time_s / r.time_s - 1, factor = net::busbw_factor(r.collective, r.ranks);
    auto& worst = r.size_bytes >= mib ? worst_large : worst_small;
    if (!worst || std::abs(err) > std::abs(worst->first)) worst = std::make_pair(err, r.size_bytes);
    const double mab = r.size_bytes / r.time_s / 1e9, pab = r.size_bytes / ch.time_s / 1e9;
    out_rows.push_back({{"collective", lgreco::to_string(r.collective)}, {"ranks", r.ranks}, {"hosts", m.embedding().hosts},
                        {"size_bytes", r.size_bytes}, {"measured_us", r.time_s * 1e6}, {"predicted_us", ch.time_s * 1e6},
                        {"measured_busbw_GBps", mab * factor}, {"predicted_busbw_GBps", pab * factor}, {"error_pct", 100 * err},
                        {"algorithm", net::to_string(ch.algorithm)}, {"protocol", net::to_string(ch.protocol)}});
    if (fmt != Format::kJson) {
      std::printf("%14.0f %5d %12.2f %9.2f %9.2f %12.2f %9.2f %9.2f %+8.1f %-9s %-6s\n", r.size_bytes, r.ranks, r.time_s * 1e6, mab, mab * factor,
                  ch.time_s * 1e6, pab, pab * factor, 100 * err, net::to_string(ch.algorithm), net::to_string(ch.protocol));
    }
  }
  auto worst_json = [](const std::optional<std::pair<double, double>>& w) {
    return w ? Json{{"error_pct", 100 * w->first}, {"size_bytes", w->second}} : Json(nullptr);
  };
  if (fmt == Format::kJson) {
    const Json config{{"file", file}, {"topology", topology}, {"network_fit", fit.empty() ? Json(nullptr) : Json(fit)},
                      {"benchmark", bench == net::Benchmark::kPytorch ? "pytorch" : "nccl-tests"}, {"gpus_per_process", per_host ? "node" : "1"},
                      {"source", source}, {"excluded", excluded.empty() ? Json(nullptr) : Json(excluded)},
                      {"nccl_env", env.restricted() ? Json(env.text) : Json(nullptr)}};
    std::cout << Json{{"schema_version", 1},
                      {"kind", "lgreco-net-validate"},
                      {"rows", out_rows},
                      {"worst", {{"at_least_1MiB", worst_json(worst_large)}, {"below_1MiB", worst_json(worst_small)}}},
                      {"config", config},
                      {"provenance", provenance_json(inputs)}}
                     .dump(2)
              << "\n";
  } else {
    auto line = [](const char* what, const std::optional<std::pair<double, double>>& w) {
      if (w) std::printf("worst error %s: %+.1f %% at %.0f B\n", what, 100 * w->first, w->second);
      else std::printf("worst error %s: no rows\n", what);
    };
    line(">= 1 MiB", worst_large);
    line("< 1 MiB", worst_small);
    if (!excluded.empty()) std::printf("kept out of the presets' fit: %s\n", excluded.c_str());
  }
  return 0;
}

double finite_or_null(double v) { return std::isfinite(v) ? v / 1e9 : -1; }

int run_topology(const std::vector<std::string>& args) {
  std::string topology, ranks_s;
  Format fmt;
  ArgParser p("lgreco net topology", "Describe a topology: nodes, links, ring bottlenecks and which GPUs share each NIC.");
  p.positional("T", &topology, "preset, cluster spec or topology JSON").option("--ranks", &ranks_s, "N", "ranks (default: every GPU)").format(&fmt);
  if (!p.parse(args)) return 0;
  const net::Topology t = net::resolve_topology(topology);
  const int ranks = ranks_on(t, parse_ranks(ranks_s));
  const net::Embedding e = net::embed(t, ranks);
  const auto nics = net::nic_sharing(t);
  Json nic_json = Json::array();
  for (const auto& n : nics) nic_json.push_back({{"nic", n.nic}, {"gpus", n.gpus}, {"path_bandwidth_GBps", n.path_Bps / 1e9}});
  auto bw = [](double v) { return std::isfinite(v) ? Json(v / 1e9) : Json(nullptr); };
  const Json bottlenecks{{"ranks", e.ranks}, {"hosts", e.hosts}, {"ranks_per_host", e.ranks_per_host}, {"channels", e.channels},
                         {"intra_class", net::to_string(e.intra_class)}, {"ring_busbw_GBps", bw(e.ring_Bps)},
                         {"ring_bottleneck", e.ring_bottleneck}, {"intra_ring_busbw_GBps", bw(e.intra_ring_Bps)},
                         {"rail_bandwidth_GBps", bw(e.rail_Bps)}, {"rail_bottleneck", e.rail_bottleneck}};
  if (fmt == Format::kJson) {
    std::vector<std::filesystem::path> inputs;
    if (std::error_code ec; std::filesystem::is_regular_file(topology, ec)) inputs.push_back(topology);
    Json doc = net::topology_to_json(t);
    doc["kind"] = "lgreco-net-topology";
    doc["bottlenecks"] = bottlenecks;
    doc["nic_sharing"] = nic_json;
    doc["provenance"] = provenance_json(inputs);
    std::cout << doc.dump(2) << "\n";
    return 0;
  }
  const std::string transport = std::string(net::to_string(t.transport)) +
                                (t.transport == net::Transport::kEfa ? " v" + std::to_string(t.efa_generation) : "") +
                                (t.gpudirect ? "" : " without GPUDirect RDMA");
  std::printf("%s: %d hosts x %d %s, %zu nodes, %zu links, transport %s, nvls %s, p2p %s\n", t.name.c_str(), t.hosts(), t.gpus_per_host(),
              t.gpu.name.c_str(), t.nodes.size(), t.links.size(), transport.c_str(), t.nvls ? "yes" : "no", t.p2p ? "yes" : "no");
  std::printf("ring over %d ranks (%d hosts, %d channels, intra %s): busbw %.1f GB/s, bottleneck %s\n", e.ranks, e.hosts, e.channels,
              net::to_string(e.intra_class), finite_or_null(e.ring_Bps), e.ring_bottleneck.c_str());
  if (e.hosts > 1) std::printf("rails (one ring per local rank): %.1f GB/s per GPU, bottleneck %s\n", finite_or_null(e.rail_Bps), e.rail_bottleneck.c_str());
  for (const auto& n : nics) {
    std::printf("  %-12s shared by %zu GPU(s):", n.nic.c_str(), n.gpus.size());
    for (const auto& g : n.gpus) std::printf(" %s", g.c_str());
    std::printf("\n");
  }
  return 0;
}

LGRECO_COMMAND("net calibrate", "fit the network model to nccl-tests results", run_calibrate);
LGRECO_COMMAND("net predict", "predict collective times for a topology", run_predict);
LGRECO_COMMAND("net validate", "compare predicted with measured collective times (corpus or nccl-tests)", run_net_validate);
LGRECO_COMMAND("net topology", "describe a topology graph and its bottlenecks", run_topology);

}  // namespace
}  // namespace lgreco::cli
