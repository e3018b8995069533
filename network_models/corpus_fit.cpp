// Corpus validation and the shared-constant fit (stated in corpus_fit.hpp).
#include "network_models/corpus_fit.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <system_error>
#include <thread>

#include "network_models/levenberg.hpp"

namespace lgreco::net {
namespace {

constexpr std::uint64_t kCorpusFitSeed = 20261313;

// Runs body(0) .. body(n − 1), each index once, on up to `max_threads` threads (0: the machine's cores); the
// calls are independent, so the results do not depend on the count. The first exception stops the others
// from taking new indices and is rethrown here.
void parallel_for(std::size_t n, std::size_t max_threads, const std::function<void(std::size_t)>& body) {
  std::atomic<std::size_t> next{0};
  std::mutex failed_mutex;
  std::exception_ptr failed;
  auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < n;) {
      try {
        body(i);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(failed_mutex);
        if (!failed) failed = std::current_exception();
        next.store(n);
      }
    }
  };
  const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t threads = std::min<std::size_t>(max_threads == 0 ? cores : max_threads, n);
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no more threads to be had: the ones started and this one share the work
    }
  }
  work();
  for (auto& t : pool) t.join();
  if (failed) std::rethrow_exception(failed);
}

// The model of a row of `f`: NCCL's parameters with the corpus constants `k` (nullptr: NCCL's own), under the
// run's nccl_env, plus the benchmark's host cost when asked (the shipped presets' terms when `k` is null).
ModelParams row_params(const PreparedFile& f, const Embedding& e, const CorpusConstants* k, bool benchmark_terms) {
  ModelParams p = f.nccl.at(e.ranks);
  if (k) apply_corpus_constants(p, f.topology, e, *k);
  p.nccl_env = f.file.nccl_env;
  if (benchmark_terms)
    p.host_overhead_s = benchmark_overhead_s(k ? *k : corpus_constants(), f.file.benchmark, f.file.gpus_per_process(e.ranks_per_host));
  return p;
}

// Calls each(row, embedding, choice) for every row of `f`, in file order, predicted by row_params(f, e, k,
// benchmark_terms), one model per rank count.
template <class Each>
void for_each_prediction(const PreparedFile& f, const CorpusConstants* k, bool benchmark_terms, Each&& each) {
  std::map<int, CollectiveModel> models;
  for (const auto& r : f.file.rows) {
    const Embedding& e = f.embeddings.at(r.ranks);
    auto it = models.find(r.ranks);
    if (it == models.end())
      it = models.emplace(r.ranks, CollectiveModel(e, f.topology, row_params(f, e, k, benchmark_terms), f.nccl.at(r.ranks))).first;
    each(r, e, it->second.best(r.collective, r.size_bytes));
  }
}

std::vector<ValidationPoint> predict_rows(const PreparedFile& f, const CorpusConstants* k, bool benchmark_terms) {
  std::vector<ValidationPoint> out;
  for_each_prediction(f, k, benchmark_terms, [&out](const CorpusRow& r, const Embedding& e, const Choice& ch) {
    out.push_back({r, e.hosts, ch.time_s, ch.algorithm, ch.protocol});
  });
  return out;
}

// The fit's residuals of `f`'s rows with constants `k` (ln(predicted / measured), times each row's system
// weight), written to r[at], r[at + 1], ...
void fit_residuals(const PreparedFile& f, const CorpusConstants& k, const std::vector<double>& scale, std::size_t at, std::vector<double>& r) {
  for_each_prediction(f, &k, true, [&](const CorpusRow& row, const Embedding&, const Choice& ch) {
    r[at] = std::log(ch.time_s / row.time_s) * scale[at];
    ++at;
  });
}

CorpusConstants from_x(const std::vector<double>& x) {
  CorpusConstants k = corpus_constants();
  const auto& defs = corpus_constant_defs();
  for (std::size_t j = 0; j < defs.size(); ++j) defs[j].ref(k) = std::exp(x[j]);
  return k;
}

}  // namespace

std::vector<PreparedFile> prepare_corpus(const std::vector<CorpusFile>& files) {
  std::vector<PreparedFile> out;
  for (const auto& f : files) {
    PreparedFile p{f, corpus_topology(f), {}, {}};
    for (const auto& r : f.rows) {
      if (p.embeddings.count(r.ranks)) continue;
      try {
        const Embedding& e = p.embeddings.emplace(r.ranks, embed(p.topology, r.ranks)).first->second;
        p.nccl.emplace(r.ranks, nccl_params(p.topology, e));
      } catch (const ConfigError& e) {
        throw ConfigError(f.origin + ":" + std::to_string(r.line) + ": " + e.what());
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<ValidationPoint> predict_file(const PreparedFile& f, const CorpusConstants& k, bool benchmark_terms) {
  return predict_rows(f, &k, benchmark_terms);
}

std::vector<ValidationPoint> predict_file_nccl(const PreparedFile& f) { return predict_rows(f, nullptr, true); }

double nccl_constants_median(const std::vector<PreparedFile>& files) {
  std::vector<double> abs_log;
  for (const auto& f : files)
    for (const auto& p : predict_file_nccl(f)) abs_log.push_back(std::abs(std::log(p.predicted_s / p.row.time_s)));
  return upper_median(std::move(abs_log));
}

ErrorSummary summarize(const std::vector<ValidationPoint>& points) {
  ErrorSummary s;
  for (const auto& p : points) {
    auto& worst = p.row.size_bytes >= kMiB ? s.worst_large : s.worst_small;
    ++(p.row.size_bytes >= kMiB ? s.large : s.small);
    if (!worst || std::abs(p.error()) > std::abs(worst->error())) worst = p;
  }
  return s;
}

bool within_bar(const ValidationPoint& p) { return std::abs(p.error()) <= (p.row.size_bytes >= kMiB ? kLargeBar : kSmallBar); }

bool ErrorSummary::meets_bars() const { return (!worst_large || within_bar(*worst_large)) && (!worst_small || within_bar(*worst_small)); }

double upper_median(std::vector<double> values) {
  if (values.empty()) return 0;
  const auto mid = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), mid, values.end());
  return *mid;
}

ErrorBands error_bands(const std::vector<SystemValidation>& validated) {
  struct Acc {
    std::vector<double> abs_log;
    std::set<std::string> systems;
  };
  std::array<std::array<Acc, kNumSizeBands>, kNumPredictionClasses> acc;
  for (const auto& v : validated) {
    for (const auto& [f, p] : v.points) {
      const auto e = f->embeddings.find(p.row.ranks);
      if (e == f->embeddings.end()) throw Error("error bands: " + f->file.origin + " has no embedding for " + std::to_string(p.row.ranks) + " ranks");
      Acc& a = acc[static_cast<int>(prediction_class(f->topology, e->second))][static_cast<int>(size_band(p.row.size_bytes))];
      a.abs_log.push_back(std::abs(std::log(p.predicted_s / p.row.time_s)));
      a.systems.insert(v.system);
    }
  }
  ErrorBands bands;
  for (int c = 0; c < kNumPredictionClasses; ++c) {
    for (int k = 0; k < kNumSizeBands; ++k) {
      Acc& a = acc[c][k];
      ErrorBand& b = bands[c][k];
      std::sort(a.abs_log.begin(), a.abs_log.end());
      const std::size_t n = a.abs_log.size();
      if (n == 0) continue;
      // The value with floor(q·n) of the rows below it (q = 0.5: the upper median, as corpus_totals).
      auto quantile = [&](double q) { return a.abs_log[std::min(n - 1, static_cast<std::size_t>(std::floor(q * static_cast<double>(n))))]; };
      b.systems = static_cast<int>(a.systems.size());
      b.rows = static_cast<int>(n);
      b.median = quantile(0.5);
      b.p80 = quantile(0.8);
      b.p90 = quantile(0.9);
      b.max = a.abs_log.back();
    }
  }
  return bands;
}

CorpusTotals corpus_totals(const std::vector<SystemValidation>& validated) {
  CorpusTotals t;
  std::vector<double> abs_log;
  for (const auto& v : validated) {
    ++t.systems;
    if (v.meets_bars()) ++t.systems_within;
    for (const auto& [f, p] : v.points) {
      ++t.rows;
      if (within_bar(p)) ++t.rows_within;
      abs_log.push_back(std::abs(std::log(p.predicted_s / p.row.time_s)));
    }
  }
  t.median_abs_log = upper_median(std::move(abs_log));
  return t;
}

bool NodeTrend::meets_bar() const {
  return std::all_of(points.begin(), points.end(), [](const Point& p) { return p.within_bar(); });
}

std::vector<NodeTrend> node_count_trends(const std::vector<SystemValidation>& validated) {
  std::vector<NodeTrend> out;
  for (const auto& v : validated) {
    std::map<int, ValidationPoint> largest;  // host count -> row at the largest size
    for (const auto& [f, p] : v.points) {
      if (p.row.collective != Collective::kAllreduce) continue;
      auto it = largest.find(p.hosts);
      if (it == largest.end() || p.row.size_bytes > it->second.row.size_bytes) largest.insert_or_assign(p.hosts, p);
    }
    if (largest.size() < 2) continue;
    NodeTrend t{v.system, {}};
    const ValidationPoint& base = largest.begin()->second;
    for (const auto& [hosts, p] : largest)
      t.points.push_back({hosts, p, p.row.time_s / base.row.time_s, p.predicted_s / base.predicted_s});
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<std::string> corpus_systems(const std::vector<PreparedFile>& files) {
  std::set<std::string> s;
  for (const auto& f : files) s.insert(f.file.system);
  return {s.begin(), s.end()};
}

LmProblem corpus_fit_problem(const std::vector<const PreparedFile*>& files) {
  if (files.empty()) throw InputError("corpus fit: no files");
  // What the residual functions share, owned by them (the problem outlives this call).
  struct State {
    std::vector<const PreparedFile*> files;
    std::vector<double> scale;                     // √ω_s of each row
    std::vector<std::size_t> offset;               // first residual of each file
    std::vector<std::vector<std::size_t>> reach;  // reach[j]: the files constant j reaches
  };
  auto st = std::make_shared<State>();
  st->files = files;
  // System balance ω_s = √(R̄ / R_s) (corpus_fit.hpp); residuals carry √ω_s.
  std::map<std::string, double> rows_of;
  for (const auto* f : files) rows_of[f->file.system] += static_cast<double>(f->file.rows.size());
  double mean_rows = 0;
  for (const auto& [s, n] : rows_of) mean_rows += n / static_cast<double>(rows_of.size());
  for (const auto* f : files) {
    st->offset.push_back(st->scale.size());
    for (std::size_t i = 0; i < f->file.rows.size(); ++i) st->scale.push_back(std::pow(mean_rows / rows_of[f->file.system], 0.25));
  }
  const auto& defs = corpus_constant_defs();
  LmProblem pb;
  for (const auto& d : defs) {
    pb.centre.push_back(std::log(d.centre));
    pb.sigma.push_back(d.sigma);
    pb.lo.push_back(std::log(d.lo));
    pb.hi.push_back(std::log(d.hi));
  }
  // The Jacobian's column j recomputes only the files constant j reaches (the rest of the column is exactly 0):
  // a file whose row parameters, at every rank count, are the same with x_j moved a factor e either way from the
  // prior centre cannot depend on it (its predictions are a function of those parameters and its k-free NCCL
  // ones, and apply_corpus_constants maps each constant without a branch on the constants), so the numbers are
  // those of recomputing every file (tests/network_models/test_corpus.cpp checks it at random points).
  st->reach.resize(defs.size());
  const CorpusConstants k0 = from_x(pb.centre);
  for (std::size_t j = 0; j < defs.size(); ++j) {
    auto up = pb.centre, down = pb.centre;
    up[j] += 1;
    down[j] -= 1;
    const CorpusConstants ku = from_x(up), kd = from_x(down);
    for (std::size_t i = 0; i < files.size(); ++i) {
      const PreparedFile& f = *files[i];
      const bool reached = std::any_of(f.embeddings.begin(), f.embeddings.end(), [&](const auto& re) {
        const ModelParams p0 = row_params(f, re.second, &k0, true);
        return !(row_params(f, re.second, &ku, true) == p0) || !(row_params(f, re.second, &kd, true) == p0);
      });
      if (reached) st->reach[j].push_back(i);
    }
  }
  pb.residuals = [st](const std::vector<double>& x) {
    const CorpusConstants k = from_x(x);
    std::vector<double> r(st->scale.size());
    for (std::size_t i = 0; i < st->files.size(); ++i) fit_residuals(*st->files[i], k, st->scale, st->offset[i], r);
    return r;
  };
  pb.residuals_after_change = [st](const std::vector<double>& x, std::size_t j, const std::vector<double>& r) {
    const CorpusConstants k = from_x(x);
    std::vector<double> out = r;
    for (std::size_t i : st->reach.at(j)) fit_residuals(*st->files[i], k, st->scale, st->offset[i], out);
    return out;
  };
  return pb;
}

std::vector<ConstantEvidence> constant_evidence(const std::vector<const PreparedFile*>& files, const CorpusConstants& k) {
  const LmProblem pb = corpus_fit_problem(files);
  const auto& defs = corpus_constant_defs();
  std::vector<double> x;
  CorpusConstants kc = k;
  for (const auto& d : defs) x.push_back(std::log(d.ref(kc)));
  const LmCurvature c = lm_curvature(pb, x);
  // The residuals' rows in file and row order (corpus_fit_problem's).
  std::vector<std::pair<const PreparedFile*, const CorpusRow*>> rows;
  for (const auto* f : files)
    for (const auto& r : f->file.rows) rows.emplace_back(f, &r);
  // Standard errors from every row, and with each system's rows left out (same s²).
  const double s2 = lm_residual_variance(c);
  const auto gram_all = lm_gram(c);
  const std::vector<double> se = lm_standard_errors(c, gram_all, s2);
  std::map<std::string, std::vector<double>> se_without;
  for (const auto* f : files) {
    const std::string& system = f->file.system;
    if (se_without.count(system)) continue;
    se_without[system] = lm_standard_errors(c, lm_gram(c, [&](std::size_t i) { return rows[i].first->file.system != system; }), s2);
  }
  std::vector<ConstantEvidence> out;
  for (std::size_t j = 0; j < defs.size(); ++j) {
    std::map<std::string, std::vector<std::size_t>> by_system;  // rows reaching x_j
    double total = c.prior[j];
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (!(c.data[j][i] > 0)) continue;
      by_system[rows[i].first->file.system].push_back(i);
      total += c.data[j][i];
    }
    ConstantEvidence e{defs[j].name, c.prior[j] / total, se[j], std::sqrt(s2 / c.prior[j]), {}};
    for (auto& [system, idx] : by_system) {
      double part = 0;
      for (std::size_t i : idx) part += c.data[j][i];
      std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return c.data[j][a] > c.data[j][b]; });
      ConstantEvidence::System sys{system, part / total, 0, 0, {}, 0, se_without.at(system)[j]};
      std::set<int> ranks;
      double carried = 0;
      for (std::size_t i : idx) {
        const CorpusRow& r = *rows[i].second;
        sys.min_size_bytes = sys.rows == 0 ? r.size_bytes : std::min(sys.min_size_bytes, r.size_bytes);
        sys.max_size_bytes = std::max(sys.max_size_bytes, r.size_bytes);
        ranks.insert(r.ranks);
        ++sys.rows;
        carried += c.data[j][i];
        if (carried >= kEvidenceRowShare * part) break;
      }
      sys.ranks.assign(ranks.begin(), ranks.end());
      e.systems.push_back(std::move(sys));
    }
    std::stable_sort(e.systems.begin(), e.systems.end(), [](const auto& a, const auto& b) { return a.share > b.share; });
    out.push_back(std::move(e));
  }
  return out;
}

CorpusFit fit_corpus(const std::vector<const PreparedFile*>& files, const FitSearch& search, int threads) {
  const LmProblem pb = corpus_fit_problem(files);
  std::vector<double> x = pb.centre;
  lm_clamp(pb, x);
  x = levenberg_marquardt(pb, x);
  const LmEnd first{x, lm_end_objective(pb, x)};
  // The chains are independent (each its own generator), so running them on `threads` gives the result of one
  // after the other.
  std::vector<LmEnd> ends(static_cast<std::size_t>(std::max(search.chains, 1)), first);
  parallel_for(ends.size(), static_cast<std::size_t>(std::max(threads, 0)), [&](std::size_t c) {
    std::mt19937_64 gen(kCorpusFitSeed + c);
    ends[c] = lm_basin_hopping(pb, first, search.hops, search.hop_scale, gen);
  });
  std::vector<std::size_t> order(ends.size());
  for (std::size_t c = 0; c < order.size(); ++c) order[c] = c;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return ends[a].objective < ends[b].objective; });
  CorpusFit best;
  best.objective = ends[order.front()].objective;
  best.constants = from_x(ends[order.front()].x);
  best.search = search;
  for (std::size_t c : order)
    if (ends[c].objective <= best.objective * (1 + kNearOptimum)) best.near_optima.push_back({ends[c].objective, from_x(ends[c].x)});
  return best;
}

std::vector<HeldOutSystem> leave_one_system_out(const std::vector<PreparedFile>& files, const FitSearch& search) {
  // One fit per system, independent of the others: they run on the machine's cores (each fit on one), each
  // result in its system's slot, so the output is the same as one after the other.
  const std::vector<std::string> systems = corpus_systems(files);
  std::vector<HeldOutSystem> out(systems.size());
  parallel_for(systems.size(), 0, [&](std::size_t i) {
    std::vector<const PreparedFile*> train;
    for (const auto& f : files)
      if (f.file.system != systems[i]) train.push_back(&f);
    HeldOutSystem& h = out[i];
    h.system = systems[i];
    h.constants = fit_corpus(train, search, 1).constants;
    for (const auto& f : files) {
      if (f.file.system != systems[i]) continue;
      const auto pts = predict_file(f, h.constants);
      h.points.insert(h.points.end(), pts.begin(), pts.end());
    }
    h.errors = summarize(h.points);
  });
  return out;
}

std::vector<SystemValidation> validate_corpus(const std::vector<PreparedFile>& files, bool holdout, const CorpusConstants& k) {
  std::map<std::string, CorpusConstants> constants;
  if (holdout) {
    for (auto& h : leave_one_system_out(files)) constants.emplace(h.system, h.constants);
  }
  std::vector<SystemValidation> out;
  for (const auto& system : corpus_systems(files)) {
    SystemValidation v{system, {}, {}};
    std::vector<ValidationPoint> all;
    for (const auto& f : files) {
      if (f.file.system != system) continue;
      for (const auto& p : predict_file(f, holdout ? constants.at(system) : k)) {
        v.points.emplace_back(&f, p);
        all.push_back(p);
      }
    }
    v.errors = summarize(all);
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace lgreco::net
