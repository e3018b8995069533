// `lgreco simulate`: one training step's timeline on a network model.
#include <cstdio>
#include <iostream>

#include "core/provenance.hpp"
#include "sim/step_builder.hpp"
#include "tools/args.hpp"
#include "tools/command.hpp"
#include "tools/net_common.hpp"

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

int run_simulate(const std::vector<std::string>& args) {
  std::string layers_path, topology, fit, method = "none", ranks_s, frac_s = "0.4";
  Format fmt;
  ArgParser p("lgreco simulate", "Simulate one data-parallel step (DDP buckets, one communication stream) on a network model and "
                                 "report step time, exposed communication, per-bucket Gantt and speedup against uncompressed.");
  p.option("--layers", &layers_path, "FILE", "model tensors JSON {batch_per_gpu, tensors: [{name, shape, uses_per_sample}]}", true)
      .option("--topology", &topology, "T", "preset, cluster spec or topology JSON", true)
      .option("--network-fit", &fit, "FILE", "calibration from `lgreco net calibrate`")
      .option("--method", &method, "M", "uniform method for every tensor, e.g. powersgd:rank=4 (default none)")
      .option("--ranks", &ranks_s, "N", "ranks (default: every GPU)")
      .option("--achieved-fraction", &frac_s, "F", "achieved fraction of the GPU's dense peak (default 0.4)")
      .format(&fmt);
  if (!p.parse(args)) return 0;
  std::vector<std::filesystem::path> inputs{layers_path};
  std::int64_t batch = 0;
  const auto layers = read_layers(layers_path, &batch);
  net::Topology t;
  const int ranks = ranks_s.empty() ? 0 : static_cast<int>(parse_int("--ranks", ranks_s));
  net::NetworkCost cost(resolve_model(topology, ranks, fit, &inputs, &t));
  sim::DeviceModel dev;
  dev.dense_peak_flops = t.gpu.dense_peak_flops;
  dev.achieved_fraction = parse_double("--achieved-fraction", frac_s);
  if (!(dev.achieved_fraction > 0 && dev.achieved_fraction <= 1)) throw UsageError("--achieved-fraction " + frac_s + ": expected 0 < F <= 1");
  const auto backward = sim::flop_backward_s(layers, batch, dev);
  const sim::StepModel model = sim::ddp_step_model(layers, backward);
  const sim::MethodSpec m = sim::parse_method(method), none = sim::parse_method("none");
  std::vector<sim::LayerComm> comm, base;
  for (const auto& l : layers) {
    comm.push_back(sim::layer_comm(l, m, cost.model().ranks(), dev));
    base.push_back(sim::layer_comm(l, none, cost.model().ranks(), dev));
  }
  const sim::StepResult r = sim::simulate_step(model, comm, cost);
  const sim::StepResult u = sim::simulate_step(model, base, cost);
  if (fmt == Format::kJson) {
    Json gantt = Json::array();
    for (const auto& b : r.buckets) {
      gantt.push_back({{"bucket", b.bucket}, {"layers", model.buckets[b.bucket].size()}, {"ready_s", b.ready_s}, {"start_s", b.start_s},
                       {"end_s", b.end_s}, {"comm_s", b.comm_s}});
    }
    const Json config{{"layers", layers_path}, {"topology", topology}, {"network_fit", fit.empty() ? Json(nullptr) : Json(fit)},
                      {"method", method}, {"ranks", cost.model().ranks()}, {"batch_per_gpu", batch},
                      {"achieved_fraction", dev.achieved_fraction}, {"dense_peak_tflops", dev.dense_peak_flops / 1e12},
                      {"bucket_cap_bytes", 25 * 1048576}, {"first_bucket_cap_bytes", 1048576}};
    std::cout << Json{{"schema_version", 1}, {"kind", "lgreco-simulate"}, {"step_s", r.step_s}, {"compute_s", r.compute_s},
                      {"exposed_comm_s", r.exposed_comm_s}, {"uncompressed_step_s", u.step_s}, {"speedup", u.step_s / r.step_s},
                      {"buckets", gantt}, {"config", config}, {"provenance", provenance_json(inputs)}}.dump(2)
              << "\n";
    return 0;
  }
  std::printf("step %.3f ms, compute %.3f ms, exposed communication %.3f ms; uncompressed step %.3f ms, speedup %.3fx\n", r.step_s * 1e3,
              r.compute_s * 1e3, r.exposed_comm_s * 1e3, u.step_s * 1e3, u.step_s / r.step_s);
  std::printf("%6s %7s %10s %10s %10s\n", "bucket", "layers", "ready_ms", "start_ms", "end_ms");
  for (const auto& b : r.buckets) std::printf("%6d %7zu %10.3f %10.3f %10.3f\n", b.bucket, model.buckets[b.bucket].size(), b.ready_s * 1e3, b.start_s * 1e3, b.end_s * 1e3);
  return 0;
}

LGRECO_COMMAND("simulate", "simulate one training step's timeline on a network model", run_simulate);

}  // namespace
}  // namespace lgreco::cli
