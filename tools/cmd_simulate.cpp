// `lgreco simulate`: one training step's timeline on a network model.
#include <cstdio>
#include <iostream>
#include <optional>

#include "core/provenance.hpp"
#include "kernels/method_json.hpp"
#include "sim/step_builder.hpp"
#include "tools/args.hpp"
#include "tools/command.hpp"
#include "tools/net_common.hpp"
#include "tools/simulate_inputs.hpp"

namespace lgreco::cli {
namespace {

/// {"batch_per_gpu": B, "tensors": [{"name", "shape", "uses_per_sample"}]} in model.parameters() order.
std::vector<sim::LayerSpec> read_layers(const std::string& path, std::int64_t* batch) {
  const Json doc = read_json_file(path);
  JsonObject o(doc, path);
  *batch = o.get<std::int64_t>("batch_per_gpu");
  std::vector<sim::LayerSpec> out;
  const Json& ts = o.require("tensors");
  if (!ts.is_array() || ts.empty()) throw ConfigError(path + ".tensors: expected a non-empty array");
  for (std::size_t i = 0; i < ts.size(); ++i) {
    JsonObject t(ts[i], path + ".tensors[" + std::to_string(i) + "]");
    sim::LayerSpec l;
    l.name = t.get<std::string>("name");
    l.shape = t.get<std::vector<std::int64_t>>("shape");
    l.uses_per_sample = t.get_or<std::int64_t>("uses_per_sample", 1);
    for (auto d : l.shape) if (d < 1) throw ConfigError(t.child("shape") + ": dimension " + std::to_string(d) + " must be >= 1");
    t.finish();
    out.push_back(l);
  }
  o.finish();
  return out;
}

Json comm_bytes(const sim::StepModel& model, const std::vector<sim::LayerComm>& comm, int bucket) {
  double r0 = 0, r1 = 0, ag = 0;
  for (int l : model.buckets[bucket]) r0 += comm[l].allreduce_bytes[0], r1 += comm[l].allreduce_bytes[1], ag += comm[l].allgather_bytes;
  return {{"allreduce_round0_bytes", r0}, {"allreduce_round1_bytes", r1}, {"allgather_bytes", ag}};
}

int run_simulate(const std::vector<std::string>& args) {
  std::string layers_path, preset, trace, topology, fit, method, schedule, phase_s, ranks_s, frac_s = "0.4", profile_path;
  Format fmt;
  ArgParser p("lgreco simulate", "Simulate one data-parallel step (DDP buckets, one communication stream) on a network model and "
                                 "report step time, compute, exposed communication, per-bucket Gantt and speedup against uncompressed.");
  p.option("--model", &preset, "M", "model preset (lgreco models): FLOP compute estimate, DDP buckets")
      .option("--trace", &trace, "FILE", "trace: its compute_time_s (else the FLOP estimate of its model), buckets and backward order")
      .option("--layers", &layers_path, "FILE", "model tensors JSON {batch_per_gpu, tensors: [{name, shape, uses_per_sample}]}")
      .option("--topology", &topology, "T", "preset, cluster spec or topology JSON", true)
      .option("--network-fit", &fit, "FILE", "calibration from `lgreco net calibrate`")
      .option("--schedule", &schedule, "FILE", "schedule from `lgreco plan` (its methods and bucket plan)")
      .option("--phase", &phase_s, "K", "schedule phase index (default: the last phase)")
      .option("--method", &method, "M", "uniform method for every tensor, e.g. powersgd:rank=4 (default none)")
      .option("--ranks", &ranks_s, "N", "ranks (default: every GPU)")
      .option("--achieved-fraction", &frac_s, "F", "achieved fraction of the GPU's dense peak (default 0.4)")
      .option("--kernel-profile", &profile_path, "FILE", "device cost profile (kernels/profiles/<gpu>.json) for compression time")
      .format(&fmt);
  if (!p.parse(args)) return 0;
  if ((!preset.empty()) + (!trace.empty()) + (!layers_path.empty()) != 1) throw UsageError("give exactly one of --model, --trace, --layers");
  if (!schedule.empty() && !method.empty()) throw UsageError("--schedule and --method exclude each other");
  if (!phase_s.empty() && schedule.empty()) throw UsageError("--phase needs --schedule");
  std::vector<std::filesystem::path> inputs;
  SimModel sm;
  if (!preset.empty()) {
    sm = model_from_preset(preset);
  } else if (!trace.empty()) {
    sm = model_from_trace(trace);
    inputs.push_back(trace);
  } else {
    sm.name = layers_path;
    sm.layers = read_layers(layers_path, &sm.batch);
    inputs.push_back(layers_path);
  }
  net::Topology t;
  const int ranks = ranks_s.empty() ? 0 : static_cast<int>(parse_int("--ranks", ranks_s));
  net::NetworkCost cost(resolve_model(topology, ranks, fit, &inputs, &t));
  sim::DeviceModel dev;
  dev.dense_peak_flops = t.gpu.dense_peak_flops;
  if (t.gpu.memory_Bps > 0) dev.memory_Bps = t.gpu.memory_Bps;
  dev.achieved_fraction = parse_double("--achieved-fraction", frac_s);
  if (!(dev.achieved_fraction > 0 && dev.achieved_fraction <= 1)) throw UsageError("--achieved-fraction " + frac_s + ": expected 0 < F <= 1");
  std::optional<kernels::DeviceProfile> profile;
  if (!profile_path.empty()) {
    profile = kernels::load_profile(profile_path);
    inputs.push_back(profile_path);
  }
  const auto backward = sm.measured_backward_s.empty() ? sim::flop_backward_s(sm.layers, sm.batch, dev) : sm.measured_backward_s;
  sim::StepModel model = sim::ddp_step_model(sm.layers, backward);
  if (!sm.backward_order.empty()) model.backward_order = sm.backward_order;
  if (!sm.buckets.empty()) model.buckets = sm.buckets;
  std::vector<sim::MethodSpec> methods(sm.layers.size(), sim::parse_method(method.empty() ? "none" : method));
  Json sched_cfg = nullptr;
  if (!schedule.empty()) {
    const int k = phase_s.empty() ? -1 : static_cast<int>(parse_int("--phase", phase_s));
    if (k < -1) throw UsageError("--phase " + phase_s + ": expected an index >= 0");
    const SimSchedule ss = read_sim_schedule(schedule, k, sm);
    inputs.push_back(schedule);
    methods = ss.methods;
    if (!ss.buckets.empty()) {
      model.buckets = ss.buckets;
      sm.bucket_source = "schedule";
    }
    sched_cfg = {{"path", schedule}, {"phase", ss.phase}, {"label", ss.label}};
  }
  const int n = cost.model().ranks();
  std::vector<sim::LayerComm> comm, base;
  for (std::size_t i = 0; i < sm.layers.size(); ++i) {
    comm.push_back(sim::layer_comm(sm.layers[i], methods[i], n, dev, profile ? &*profile : nullptr));
    base.push_back(sim::layer_comm(sm.layers[i], sim::parse_method("none"), n, dev));
  }
  const sim::StepResult r = sim::simulate_step(model, comm, cost);
  const sim::StepResult u = sim::simulate_step(model, base, cost);
  double bytes = 0, ubytes = 0;
  for (std::size_t i = 0; i < comm.size(); ++i) {
    bytes += comm[i].allreduce_bytes[0] + comm[i].allreduce_bytes[1] + comm[i].allgather_bytes;
    ubytes += base[i].allreduce_bytes[0];
  }
  if (fmt == Format::kJson) {
    Json gantt = Json::array();
    for (const auto& b : r.buckets) {
      Json g{{"bucket", b.bucket}, {"layers", model.buckets[b.bucket].size()}, {"ready_s", b.ready_s}, {"start_s", b.start_s},
             {"end_s", b.end_s}, {"comm_s", b.comm_s}};
      g.update(comm_bytes(model, comm, b.bucket));
      gantt.push_back(g);
    }
    const Json config{{"model", sm.name}, {"trace", trace.empty() ? Json(nullptr) : Json(trace)},
                      {"layers", layers_path.empty() ? Json(nullptr) : Json(layers_path)}, {"topology", topology},
                      {"network_fit", fit.empty() ? Json(nullptr) : Json(fit)}, {"schedule", sched_cfg},
                      {"method", schedule.empty() ? Json(method.empty() ? "none" : method) : Json(nullptr)}, {"ranks", n},
                      {"batch_per_gpu", sm.batch}, {"compute_source", sm.compute_source}, {"bucket_source", sm.bucket_source},
                      {"achieved_fraction", dev.achieved_fraction}, {"dense_peak_tflops", dev.dense_peak_flops / 1e12},
                      {"kernel_time_source", profile ? "profile" : "memory-traffic estimate"},
                      {"kernel_profile", profile_path.empty() ? Json(nullptr) : Json(profile_path)},
                      {"bucket_cap_bytes", 25 * 1048576}, {"first_bucket_cap_bytes", 1048576}};
    std::cout << Json{{"schema_version", 1}, {"kind", "lgreco-simulate"}, {"step_s", r.step_s}, {"compute_s", r.compute_s},
                      {"exposed_comm_s", r.exposed_comm_s}, {"bytes_per_step", bytes}, {"uncompressed_step_s", u.step_s},
                      {"uncompressed_exposed_comm_s", u.exposed_comm_s}, {"uncompressed_bytes_per_step", ubytes},
                      {"speedup", u.step_s / r.step_s}, {"buckets", gantt}, {"config", config}, {"provenance", provenance_json(inputs)}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::printf("step %.3f ms, compute %.3f ms, exposed communication %.3f ms, %.0f bytes/step; uncompressed step %.3f ms, speedup %.3fx\n",
              r.step_s * 1e3, r.compute_s * 1e3, r.exposed_comm_s * 1e3, bytes, u.step_s * 1e3, u.step_s / r.step_s);
  std::printf("%6s %7s %10s %10s %10s %10s\n", "bucket", "layers", "ready_ms", "start_ms", "end_ms", "comm_ms");
  for (const auto& b : r.buckets) {
    std::printf("%6d %7zu %10.3f %10.3f %10.3f %10.3f\n", b.bucket, model.buckets[b.bucket].size(), b.ready_s * 1e3, b.start_s * 1e3,
                b.end_s * 1e3, b.comm_s * 1e3);
  }
  return 0;
}

LGRECO_COMMAND("simulate", "simulate one training step's timeline on a network model", run_simulate);

}  // namespace
}  // namespace lgreco::cli
