#include "sim/timeline.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.hpp"

namespace lgreco::sim {
namespace {

void check_time(double v, const std::string& what) {
  if (!std::isfinite(v) || v < 0) throw InputError("timeline: " + what + " is " + std::to_string(v) + " s, expected a finite time >= 0");
}

}  // namespace

StepSimulator::StepSimulator(const StepModel& model, const std::vector<LayerComm>& comm, const net::CollectiveCost& cost) : model_(model) {
  const std::size_t n = model.backward_s.size();
  if (comm.size() != n) throw InputError("timeline: " + std::to_string(comm.size()) + " layer loads for " + std::to_string(n) + " layers");
  if (model.backward_order.size() != n) throw InputError("timeline: backward_order does not list every layer once");
  check_time(model.forward_s, "forward_s");
  check_time(model.optimizer_s, "optimizer_s");
  std::vector<int> pos(n, -1);
  for (std::size_t k = 0; k < n; ++k) {
    const int id = model.backward_order[k];
    if (id < 0 || static_cast<std::size_t>(id) >= n || pos[id] >= 0) throw InputError("timeline: backward_order has invalid or repeated layer " + std::to_string(id));
    pos[id] = static_cast<int>(k);
    check_time(model.backward_s[id], "backward time of layer " + std::to_string(id));
  }
  std::vector<int> owner(n, -1);
  const std::size_t nb = model.buckets.size();
  std::vector<int> last(nb, -1);
  compress_s_.assign(nb, 0);
  comm_s_.assign(nb, 0);
  for (std::size_t b = 0; b < nb; ++b) {
    double ar0 = 0, ar1 = 0, ag = 0, decompress = 0;
    for (int id : model.buckets[b]) {
      if (id < 0 || static_cast<std::size_t>(id) >= n) throw InputError("timeline: bucket " + std::to_string(b) + " has invalid layer " + std::to_string(id));
      if (owner[id] >= 0) throw InputError("timeline: layer " + std::to_string(id) + " is in buckets " + std::to_string(owner[id]) + " and " + std::to_string(b));
      owner[id] = static_cast<int>(b);
      last[b] = std::max(last[b], pos[id]);
      const LayerComm& c = comm[id];
      for (double v : {c.allreduce_bytes[0], c.allreduce_bytes[1], c.allgather_bytes}) {
        if (!std::isfinite(v) || v < 0) throw InputError("timeline: layer " + std::to_string(id) + " has payload " + std::to_string(v) + " bytes");
      }
      check_time(c.compress_s, "compress time of layer " + std::to_string(id));
      check_time(c.decompress_s, "decompress time of layer " + std::to_string(id));
      ar0 += c.allreduce_bytes[0];
      ar1 += c.allreduce_bytes[1];
      ag += c.allgather_bytes;
      decompress += c.decompress_s;
      compress_s_[b] += c.compress_s;
    }
    // Round 0 and round 1 allreduces (fused per bucket, as the hook fuses them), then the allgather.
    double t = decompress;
    if (ar0 > 0) t += cost.time_s(Collective::kAllreduce, ar0);
    if (ar1 > 0) t += cost.time_s(Collective::kAllreduce, ar1);
    if (ag > 0) t += cost.time_s(Collective::kAllgather, ag);
    check_time(t, "communication time of bucket " + std::to_string(b));
    comm_s_[b] = t;
  }
  for (std::size_t id = 0; id < n; ++id) {
    if (owner[id] < 0) throw InputError("timeline: layer " + std::to_string(id) + " is in no bucket");
  }
  bucket_at_pos_.assign(n, -1);
  ready_order_.clear();
  for (std::size_t b = 0; b < nb; ++b) {
    if (last[b] < 0) ready_order_.push_back(static_cast<int>(b));  // empty: ready when backward starts
    else bucket_at_pos_[last[b]] = static_cast<int>(b);
  }
  // Non-empty buckets become ready in the backward position order of their last layer.
  for (std::size_t k = 0; k < n; ++k) {
    if (bucket_at_pos_[k] >= 0) ready_order_.push_back(bucket_at_pos_[k]);
  }
  ready_.assign(nb, 0);
}

double StepSimulator::fill(const std::vector<double>& backward_s, double* compute_end) const {
  if (backward_s.size() != model_.backward_s.size()) {
    throw InputError("timeline: " + std::to_string(backward_s.size()) + " backward times for " + std::to_string(model_.backward_s.size()) + " layers");
  }
  // Compression of a bucket runs on the compute stream as soon as the bucket is ready, delaying
  // everything computed after it: walk the backward order once, inserting compress times.
  double t = model_.forward_s;
  std::size_t next = 0;
  const std::size_t nb = ready_order_.size();
  while (next < nb && model_.buckets[ready_order_[next]].empty()) {
    t += compress_s_[ready_order_[next]];
    ready_[ready_order_[next++]] = t;
  }
  const std::size_t n = backward_s.size();
  for (std::size_t k = 0; k < n; ++k) {
    t += backward_s[model_.backward_order[k]];
    const int b = bucket_at_pos_[k];
    if (b >= 0) {
      t += compress_s_[b];
      ready_[b] = t;
    }
  }
  *compute_end = t;
  double comm_end = 0;
  for (std::size_t b = 0; b < nb; ++b) comm_end = std::max(ready_[b], comm_end) + comm_s_[b];
  return comm_end;
}

double StepSimulator::step_s(const std::vector<double>& backward_s) const {
  double compute_end = 0;
  const double comm_end = fill(backward_s, &compute_end);
  return std::max(compute_end, comm_end) + model_.optimizer_s;
}

StepResult StepSimulator::run(const std::vector<double>& backward_s) const {
  for (std::size_t i = 0; i < backward_s.size(); ++i) check_time(backward_s[i], "backward time of layer " + std::to_string(i));
  StepResult r;
  double compute_end = 0;
  fill(backward_s, &compute_end);
  double comm_end = 0;
  for (std::size_t b = 0; b < ready_.size(); ++b) {
    BucketTiming bt;
    bt.bucket = static_cast<int>(b);
    bt.ready_s = ready_[b];
    bt.start_s = std::max(ready_[b], comm_end);
    bt.comm_s = comm_s_[b];
    bt.end_s = bt.start_s + bt.comm_s;
    comm_end = bt.end_s;
    r.buckets.push_back(bt);
  }
  r.compute_s = compute_end;
  r.step_s = std::max(compute_end, comm_end) + model_.optimizer_s;
  r.exposed_comm_s = r.step_s - r.compute_s - model_.optimizer_s;
  return r;
}

StepResult simulate_step(const StepModel& model, const std::vector<LayerComm>& comm, const net::CollectiveCost& cost) {
  return StepSimulator(model, comm, cost).run();
}

std::vector<std::vector<int>> ddp_buckets(const std::vector<double>& param_bytes, double cap_bytes, double first_cap_bytes) {
  if (!(cap_bytes > 0) || !(first_cap_bytes > 0)) throw InputError("ddp_buckets: caps must be > 0 bytes");
  std::vector<std::vector<int>> buckets;
  std::vector<int> cur;
  double size = 0, cap = first_cap_bytes;
  for (std::size_t i = param_bytes.size(); i-- > 0;) {
    if (!std::isfinite(param_bytes[i]) || param_bytes[i] < 0) throw InputError("ddp_buckets: parameter " + std::to_string(i) + " has " + std::to_string(param_bytes[i]) + " bytes");
    cur.push_back(static_cast<int>(i));
    size += param_bytes[i];
    if (size >= cap) {
      buckets.push_back(std::move(cur));
      cur.clear();
      size = 0;
      cap = cap_bytes;
    }
  }
  if (!cur.empty()) buckets.push_back(std::move(cur));
  return buckets;
}

}  // namespace lgreco::sim
