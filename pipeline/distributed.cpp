// Scale-out over MPI ranks (pipeline/distributed.hpp). Message layouts (pipeline/distributed_wire.hpp):
//   rank 0 → all (broadcast): u8 command, then
//     open:   u64 generation, path, u64 layers, u64 fingerprint, options, u8 measured, [sets], i32 rank_of[]
//     window: u64 generation, window, u8 continues, MethodSpec in_force[] (every layer)
//     stop:   u8 ok, then i32 exit code, or a failure
//   all → rank 0 (gather), after open and window: u8 ok, then the payload or a failure;
//     window payload: u64 n, n × (u64 layer, LayerWindow), f64 grad_bytes, f64 peak_task_bytes,
//                     u32 peak_tasks, f64 busy_s, f64 max_rss_bytes
#include "pipeline/distributed.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <numeric>
#include <optional>

#include <sys/resource.h>

#include "core/error.hpp"
#include "pipeline/distributed_wire.hpp"
#include "sim/replay_trace_source.hpp"

namespace lgreco::pipeline {
namespace {

enum class Cmd : std::uint8_t { kOpen = 1, kWindow = 2, kStop = 3 };

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Peak resident memory of this process so far (Linux reports ru_maxrss in KiB).
double max_rss_bytes() {
  struct rusage u {};
  getrusage(RUSAGE_SELF, &u);
  return 1024.0 * static_cast<double>(u.ru_maxrss);
}

// FNV-1a over the layers' names and sizes: every rank must see the same layers.
std::uint64_t fingerprint(const std::vector<sim::SourceLayer>& layers) {
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&](const void* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 1099511628211ull;
  };
  for (const auto& l : layers) {
    mix(l.name.data(), l.name.size() + 1);
    mix(&l.numel, sizeof l.numel);
  }
  return h;
}

std::string ok_reply(const std::string& payload = {}) { return std::string(1, '\1') + payload; }

std::string failure_reply(const std::exception_ptr& e) {
  wire::Writer w;
  w.pod<std::uint8_t>(0);
  wire::put(w, wire::capture(e));
  return w.bytes();
}

// Rank 0: throws the first failure in rank order (its own exception as it was thrown); otherwise
// returns the replies' payloads.
std::vector<std::string> payloads_or_throw(const std::vector<std::string>& replies, const std::exception_ptr& own) {
  std::vector<std::string> out;
  for (std::size_t r = 0; r < replies.size(); ++r) {
    if (r == 0 && own) std::rethrow_exception(own);
    wire::Reader rd(replies[r]);
    if (rd.pod<std::uint8_t>() == 0) {
      const wire::Failure f = wire::get_failure(rd);
      wire::rethrow(f);
    }
    out.push_back(replies[r].substr(1));
  }
  return out;
}

// What a rank keeps of an open replay: its layers and a sim::Replay over a view of them.
struct OpenRequest {
  std::uint64_t generation = 0;
  std::filesystem::path path;
  std::uint64_t layers = 0, fingerprint = 0;
  sim::ReplayOptions options;
  bool measured = false;
  std::vector<sim::CandidateSet> sets;
  std::vector<std::int32_t> rank_of;
};

std::string encode_open(const OpenRequest& q) {
  wire::Writer w;
  w.pod(Cmd::kOpen);
  w.pod(q.generation);
  w.str(q.path.string());
  w.pod(q.layers);
  w.pod(q.fingerprint);
  wire::put(w, q.options);
  w.pod(q.measured);
  for (const auto& s : q.sets) wire::put(w, s);
  w.pods(q.rank_of);
  return w.bytes();
}

OpenRequest decode_open(wire::Reader& r) {
  OpenRequest q;
  q.generation = r.pod<std::uint64_t>();
  q.path = r.str();
  q.layers = r.pod<std::uint64_t>();
  q.fingerprint = r.pod<std::uint64_t>();
  q.options = wire::get_replay_options(r);
  q.measured = r.pod<bool>();
  if (q.measured) {
    for (std::uint64_t l = 0; l < q.layers; ++l) q.sets.push_back(wire::get_candidate_set(r));
  }
  q.rank_of = r.pods<std::int32_t>();
  r.done();
  if (q.rank_of.size() != q.layers) throw Error("distributed replay: malformed message (split of the wrong length)");
  return q;
}

class LocalPart {
 public:
  LocalPart(const OpenRequest& q, const sim::GradientSource& source, int rank, std::function<void(const sim::ReplayProgress&)> progress)
      : generation_(q.generation), total_(static_cast<std::size_t>(q.layers)) {
    if (source.layers().size() != q.layers || fingerprint(source.layers()) != q.fingerprint) {
      throw TraceError("trace " + q.path.string() + ": rank " + std::to_string(rank) + " sees " + std::to_string(source.layers().size()) +
                       " layers that differ from rank 0's " + std::to_string(q.layers) +
                       " (every rank must read the same file: a shared file system)");
    }
    std::vector<sim::CandidateSet> sets;
    for (std::size_t l = 0; l < q.rank_of.size(); ++l) {
      if (q.rank_of[l] != rank) continue;
      mine_.push_back(l);
      if (q.measured) sets.push_back(q.sets[l]);
    }
    view_ = std::make_unique<sim::LayerSubset>(source, mine_);
    sim::ReplayOptions opt = q.options;
    opt.progress = std::move(progress);
    replay_ = std::make_unique<sim::Replay>(*view_, std::move(sets), opt);
  }

  std::uint64_t generation() const { return generation_; }
  const std::vector<std::size_t>& mine() const { return mine_; }

  // Replays this rank's layers of the window; the window reply's payload.
  std::string run_window(const sim::Window& w, const std::vector<kernels::MethodSpec>& in_force, bool continues) {
    if (in_force.size() != total_) {
      throw Error("distributed replay: " + std::to_string(in_force.size()) + " settings for " + std::to_string(total_) + " layers");
    }
    std::vector<kernels::MethodSpec> own;
    for (std::size_t l : mine_) own.push_back(in_force[l]);
    const double t0 = now_s();
    const sim::WindowMeasure wm = mine_.empty() ? sim::WindowMeasure{w, {}} : replay_->run_window(w, own, continues);
    busy_s_ += now_s() - t0;
    wire::Writer out;
    out.pod<std::uint64_t>(mine_.size());
    for (std::size_t i = 0; i < mine_.size(); ++i) {
      out.pod<std::uint64_t>(mine_[i]);
      wire::put(out, wm.layers[i]);
    }
    out.pod(replay_->grad_bytes());
    out.pod(replay_->peak_task_bytes());
    out.pod(replay_->peak_tasks());
    out.pod(busy_s_);
    out.pod(max_rss_bytes());
    return out.bytes();
  }

 private:
  std::uint64_t generation_;
  std::size_t total_;
  std::vector<std::size_t> mine_;
  std::unique_ptr<sim::LayerSubset> view_;
  std::unique_ptr<sim::Replay> replay_;
  double busy_s_ = 0;
};

struct RankStats {
  double grad_bytes = 0, peak_task_bytes = 0, busy_s = 0, max_rss_bytes = 0;
  unsigned peak_tasks = 0;
};

// Rank 0's replayer: broadcasts, replays its own share, gathers.
class DistributedReplayer : public WindowReplayer {
 public:
  DistributedReplayer(Communicator& comm, const sim::GradientSource& source, std::vector<sim::CandidateSet> sets,
                      const sim::ReplayOptions& options, std::uint64_t generation, const std::uint64_t& current)
      : comm_(comm), layers_(source.layers().size()), current_(current), start_s_(now_s()) {
    if (source.path().empty()) {
      throw ConfigError("distributed replay: the gradients are not read from a file; every rank must open the same trace file");
    }
    OpenRequest q;
    q.generation = generation;
    // As given: ranks start in the launcher's working directory (mpirun, srun), and messages then
    // name the file as one process does.
    q.path = source.path();
    q.layers = layers_;
    q.fingerprint = fingerprint(source.layers());
    q.options = options;
    q.measured = !sets.empty();
    q.sets = std::move(sets);
    split_ = split_layers(layer_costs(source.layers(), source.steps().size(), q.sets, options), comm_.size());
    q.rank_of.assign(split_.rank_of.begin(), split_.rank_of.end());
    threads_ = options.threads;
    std::string msg = encode_open(q);
    comm_.broadcast(msg, 0);
    std::exception_ptr own;
    try {
      part_.emplace(q, source, 0, options.progress);
    } catch (...) {
      own = std::current_exception();
    }
    payloads_or_throw(comm_.gather(own ? std::string() : ok_reply(), 0), own);
    stats_.assign(static_cast<std::size_t>(comm_.size()), RankStats{});
  }

  sim::WindowMeasure run_window(const sim::Window& w, const std::vector<kernels::MethodSpec>& in_force, bool continues) override {
    if (current_ != part_->generation()) throw Error("distributed replay: a replayer was used after a newer one was opened");
    if (in_force.size() != layers_) {
      throw Error("replay: " + std::to_string(in_force.size()) + " settings for " + std::to_string(layers_) + " layers");
    }
    wire::Writer cmd;
    cmd.pod(Cmd::kWindow);
    cmd.pod(part_->generation());
    wire::put(cmd, w);
    cmd.pod(continues);
    cmd.pods(in_force);
    comm_.broadcast(cmd.bytes(), 0);
    std::exception_ptr own;
    std::string mine;
    try {
      mine = part_->run_window(w, in_force, continues);
    } catch (...) {
      own = std::current_exception();
    }
    const auto payloads = payloads_or_throw(comm_.gather(own ? std::string() : ok_reply(mine), 0), own);
    sim::WindowMeasure out;
    out.window = w;
    out.layers.resize(layers_);
    std::vector<bool> filled(layers_, false);
    for (std::size_t r = 0; r < payloads.size(); ++r) {
      wire::Reader rd(payloads[r]);
      const auto n = rd.pod<std::uint64_t>();
      for (std::uint64_t i = 0; i < n; ++i) {
        const auto l = rd.pod<std::uint64_t>();
        if (l >= layers_ || filled[l] || split_.rank_of[l] != static_cast<int>(r)) {
          throw Error("distributed replay: rank " + std::to_string(r) + " answered for layer " + std::to_string(l) + ", not its own");
        }
        out.layers[l] = wire::get_layer_window(rd);
        filled[l] = true;
      }
      RankStats& s = stats_[r];
      s.grad_bytes = rd.pod<double>();
      s.peak_task_bytes = rd.pod<double>();
      s.peak_tasks = rd.pod<unsigned>();
      s.busy_s = rd.pod<double>();
      s.max_rss_bytes = rd.pod<double>();
      rd.done();
    }
    if (std::find(filled.begin(), filled.end(), false) != filled.end()) throw Error("distributed replay: a layer had no answer");
    return out;
  }

  ReplayStats stats() const override {
    ReplayStats s;
    s.elapsed_s = now_s() - start_s_;
    for (const auto& r : stats_) {
      s.grad_bytes += r.grad_bytes;
      s.peak_task_bytes = std::max(s.peak_task_bytes, r.peak_task_bytes);
      s.peak_tasks = std::max(s.peak_tasks, r.peak_tasks);
    }
    return s;
  }

  Json layout() const override {
    const double total = std::accumulate(split_.cost.begin(), split_.cost.end(), 0.0);
    double busy_max = 0, busy_sum = 0;
    Json per_rank = Json::array();
    for (std::size_t r = 0; r < split_.layers.size(); ++r) {
      busy_max = std::max(busy_max, stats_[r].busy_s);
      busy_sum += stats_[r].busy_s;
      per_rank.push_back(Json{{"rank", r},
                              {"layers", split_.layers[r]},
                              {"estimated_cost_share", total > 0 ? split_.cost[r] / total : 0.0},
                              {"busy_s", stats_[r].busy_s},
                              {"grad_bytes", stats_[r].grad_bytes},
                              {"peak_concurrent_layer_bytes", stats_[r].peak_task_bytes},
                              {"max_rss_bytes", stats_[r].max_rss_bytes}});
    }
    const double busy_mean = busy_sum / static_cast<double>(std::max<std::size_t>(1, split_.layers.size()));
    return Json{{"engine", "mpi"},
                {"ranks", comm_.size()},
                {"threads_per_rank", threads_},
                {"split", "layers by estimated cost, largest first to the least-loaded rank (pipeline/distributed.hpp)"},
                {"estimated_cost_max_over_mean", split_.max_over_mean()},
                {"busy_max_over_mean", busy_mean > 0 ? busy_max / busy_mean : 1.0},
                {"per_rank", per_rank}};
  }

 private:
  Communicator& comm_;
  std::size_t layers_;
  const std::uint64_t& current_;
  double start_s_;
  unsigned threads_ = 1;
  LayerSplit split_;
  std::optional<LocalPart> part_;
  std::vector<RankStats> stats_;
};

class DistributedEngine : public ReplayEngine {
 public:
  explicit DistributedEngine(Communicator& comm) : comm_(comm) {}
  std::unique_ptr<WindowReplayer> open(const sim::GradientSource& source, std::vector<sim::CandidateSet> candidates,
                                       const sim::ReplayOptions& options) const override {
    const std::uint64_t generation = ++generation_;
    return std::make_unique<DistributedReplayer>(comm_, source, std::move(candidates), options, generation, generation_);
  }

 private:
  Communicator& comm_;
  mutable std::uint64_t generation_ = 0;
};

// Every rank but 0: serve rank 0's commands until it stops.
int serve(Communicator& comm, const SourceOpener& open) {
  std::map<std::filesystem::path, std::unique_ptr<sim::GradientSource>> sources;
  std::optional<LocalPart> part;
  for (;;) {
    std::string msg;
    comm.broadcast(msg, 0);
    wire::Reader rd(msg);
    const auto cmd = rd.pod<Cmd>();
    if (cmd == Cmd::kStop) {
      if (rd.pod<bool>()) return rd.pod<std::int32_t>();
      wire::rethrow(wire::get_failure(rd));
    }
    std::string reply;
    try {
      if (cmd == Cmd::kOpen) {
        part.reset();
        const OpenRequest q = decode_open(rd);
        auto it = sources.find(q.path);
        if (it == sources.end()) it = sources.emplace(q.path, open ? open(q.path) : sim::open_trace_source(q.path)).first;
        part.emplace(q, *it->second, comm.rank(), nullptr);
        reply = ok_reply();
      } else if (cmd == Cmd::kWindow) {
        const auto generation = rd.pod<std::uint64_t>();
        const sim::Window w = wire::get_window(rd);
        const bool continues = rd.pod<bool>();
        const auto in_force = rd.pods<kernels::MethodSpec>();
        rd.done();
        if (!part || part->generation() != generation) throw Error("distributed replay: window for a replay this rank has not opened");
        reply = ok_reply(part->run_window(w, in_force, continues));
      } else {
        throw Error("distributed replay: malformed message (command " + std::to_string(static_cast<int>(cmd)) + ")");
      }
    } catch (...) {
      reply = failure_reply(std::current_exception());
    }
    comm.gather(reply, 0);
  }
}

}  // namespace

std::vector<double> layer_costs(const std::vector<sim::SourceLayer>& layers, std::size_t row_count,
                                const std::vector<sim::CandidateSet>& candidates, const sim::ReplayOptions& options) {
  const double rows = static_cast<double>(row_count);
  const double windows = static_cast<double>(std::max<std::size_t>(1, options.windows_total));
  const bool trajectory = options.mode == sim::ErrorMode::kTrajectory;
  std::vector<double> cost;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const double c = candidates.empty() ? 0.0 : static_cast<double>(candidates.at(l).candidates.size());
    cost.push_back(sim::layer_task_bytes(layers[l].numel) * (rows + c * (trajectory ? rows : windows)));
  }
  return cost;
}

double LayerSplit::max_over_mean() const {
  if (cost.empty()) return 1.0;
  const double mean = std::accumulate(cost.begin(), cost.end(), 0.0) / static_cast<double>(cost.size());
  return mean > 0 ? *std::max_element(cost.begin(), cost.end()) / mean : 1.0;
}

LayerSplit split_layers(const std::vector<double>& cost, int ranks) {
  if (ranks < 1) throw ConfigError("layer split: " + std::to_string(ranks) + " ranks; expected >= 1");
  std::vector<std::size_t> order(cost.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return cost[a] > cost[b]; });
  LayerSplit s;
  s.rank_of.assign(cost.size(), 0);
  s.layers.resize(static_cast<std::size_t>(ranks));
  s.cost.assign(static_cast<std::size_t>(ranks), 0.0);
  for (std::size_t l : order) {
    const auto r = static_cast<std::size_t>(std::min_element(s.cost.begin(), s.cost.end()) - s.cost.begin());
    s.rank_of[l] = static_cast<int>(r);
    s.cost[r] += cost[l];
    s.layers[r].push_back(l);
  }
  for (auto& v : s.layers) std::sort(v.begin(), v.end());
  return s;
}

int run_on_ranks(Communicator& comm, const std::function<int(const ReplayEngine&)>& body, const SourceOpener& open) {
  if (comm.rank() != 0) return serve(comm, open);
  DistributedEngine engine(comm);
  std::exception_ptr failure;
  int code = 0;
  try {
    code = body(engine);
  } catch (...) {
    failure = std::current_exception();
  }
  wire::Writer stop;
  stop.pod(Cmd::kStop);
  stop.pod<bool>(!failure);
  if (failure) {
    wire::put(stop, wire::capture(failure));
  } else {
    stop.pod<std::int32_t>(code);
  }
  comm.broadcast(stop.bytes(), 0);
  if (failure) std::rethrow_exception(failure);
  return code;
}

}  // namespace lgreco::pipeline
