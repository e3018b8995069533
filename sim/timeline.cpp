#include "sim/timeline.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"

namespace lgreco::sim {

StepResult simulate_step(const StepModel& model, const std::vector<LayerComm>& comm, const CollectiveCost& cost) {
  const std::size_t n = model.backward_s.size();
  if (comm.size() != n) {
    throw InputError("timeline: " + std::to_string(comm.size()) + " layer loads for " + std::to_string(n) + " layers");
  }
  if (model.backward_order.size() != n) throw InputError("timeline: backward_order does not list every layer once");
  // Ready time of each layer's gradient on the compute stream.
  std::vector<double> ready(n, -1.0);
  double t = model.forward_s;
  for (int id : model.backward_order) {
    if (id < 0 || static_cast<std::size_t>(id) >= n || ready[id] >= 0) {
      throw InputError("timeline: backward_order has invalid or repeated layer " + std::to_string(id));
    }
    if (model.backward_s[id] < 0) throw InputError("timeline: negative backward time for layer " + std::to_string(id));
    t += model.backward_s[id];
    ready[id] = t;
  }
  std::vector<int> owner(n, -1);
  for (std::size_t b = 0; b < model.buckets.size(); ++b) {
    for (int id : model.buckets[b]) {
      if (id < 0 || static_cast<std::size_t>(id) >= n) throw InputError("timeline: bucket " + std::to_string(b) + " has invalid layer " + std::to_string(id));
      if (owner[id] >= 0) throw InputError("timeline: layer " + std::to_string(id) + " is in buckets " + std::to_string(owner[id]) + " and " + std::to_string(b));
      owner[id] = static_cast<int>(b);
    }
  }
  for (std::size_t id = 0; id < n; ++id) {
    if (owner[id] < 0) throw InputError("timeline: layer " + std::to_string(id) + " is in no bucket");
  }

  // Compression kernels run on the compute stream when their bucket becomes ready, so they shift
  // everything computed after them. Process buckets in order of readiness of their last layer.
  StepResult r;
  double compute_shift = 0;  // compression time inserted so far on the compute stream
  double comm_end = 0;
  std::vector<double> bucket_ready(model.buckets.size(), model.forward_s);
  for (std::size_t b = 0; b < model.buckets.size(); ++b) {
    for (int id : model.buckets[b]) bucket_ready[b] = std::max(bucket_ready[b], ready[id]);
  }
  // Buckets communicate in their given order; compression of bucket b is charged when b becomes
  // ready (in readiness order the shift accumulates).
  std::vector<std::size_t> by_ready(model.buckets.size());
  for (std::size_t b = 0; b < by_ready.size(); ++b) by_ready[b] = b;
  std::stable_sort(by_ready.begin(), by_ready.end(), [&](std::size_t a, std::size_t b) { return bucket_ready[a] < bucket_ready[b]; });
  std::vector<double> shifted_ready(model.buckets.size());
  for (std::size_t b : by_ready) {
    double compress = 0;
    for (int id : model.buckets[b]) compress += comm[id].compress_s;
    compute_shift += compress;
    shifted_ready[b] = bucket_ready[b] + compute_shift;
  }
  const double compute_end = t + compute_shift;

  for (std::size_t b = 0; b < model.buckets.size(); ++b) {
    double ar0 = 0, ar1 = 0, ag = 0, decompress = 0;
    for (int id : model.buckets[b]) {
      ar0 += comm[id].allreduce_bytes[0];
      ar1 += comm[id].allreduce_bytes[1];
      ag += comm[id].allgather_bytes;
      decompress += comm[id].decompress_s;
    }
    double c = 0;
    if (ar0 > 0) c += cost.time_s(Collective::kAllreduce, ar0);
    if (ar1 > 0) c += cost.time_s(Collective::kAllreduce, ar1);
    if (ag > 0) c += cost.time_s(Collective::kAllgather, ag);
    c += decompress;
    BucketTiming bt;
    bt.bucket = static_cast<int>(b);
    bt.ready_s = shifted_ready[b];
    bt.start_s = std::max(shifted_ready[b], comm_end);
    bt.comm_s = c;
    bt.end_s = bt.start_s + c;
    comm_end = bt.end_s;
    r.buckets.push_back(bt);
  }
  r.compute_s = compute_end;
  r.step_s = std::max(compute_end, comm_end) + model.optimizer_s;
  r.exposed_comm_s = r.step_s - r.compute_s - model.optimizer_s;
  return r;
}

}  // namespace lgreco::sim
