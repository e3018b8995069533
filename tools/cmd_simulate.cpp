// `lgreco simulate`: one training step's timeline on a network model.
#include <cstdio>
#include <iostream>
#include <optional>

#include "core/provenance.hpp"
#include "kernels/method_json.hpp"
#include "sim/step_builder.hpp"
#include "sim/step_builder.hpp"
#include "tools/args.hpp"
#include "tools/command.hpp"
#include "tools/loop_args.hpp"
#include "tools/net_common.hpp"
#include "pipeline/cluster.hpp"
#include "pipeline/predict.hpp"
#include "pipeline/step_inputs.hpp"
#include "planner/schedule.hpp"

namespace lgreco::cli {
namespace {

Json comm_bytes(const planner::Window& w, const planner::PlanOptions& opt, const std::vector<int>& ids) {
  double r0 = 0, r1 = 0, ag = 0;
  for (int l : ids) {
    const sim::LayerComm c = planner::layer_comm_of(w.layers[static_cast<std::size_t>(l)], w.layers[static_cast<std::size_t>(l)].candidates[0], opt.kernel_time);
    r0 += c.allreduce_bytes[0], r1 += c.allreduce_bytes[1], ag += c.allgather_bytes;
  }
  return {{"allreduce_round0_bytes", r0}, {"allreduce_round1_bytes", r1}, {"allgather_bytes", ag}};
}

int run_simulate(const std::vector<std::string>& args) {
  std::string layers_path, preset, trace, topology, fit, method, schedule, phase_s, ranks_s, frac_s = "0.4", nccl_env;
  KernelTimeArgs kta;
  Format fmt;
  ArgParser p("lgreco simulate", "Simulate one data-parallel step (DDP buckets, one communication stream) on a network model and "
                                 "report step time, compute, exposed communication, per-bucket Gantt and speedup against uncompressed.");
  p.option("--model", &preset, "M", "model preset (lgreco models): FLOP compute estimate, DDP buckets")
      .option("--trace", &trace, "FILE", "trace: its compute_time_s (else the FLOP estimate of its model), buckets and backward order")
      .option("--layers", &layers_path, "FILE", "model tensors JSON {batch_per_gpu, tensors: [{name, shape, uses_per_sample}]}")
      .option("--topology", &topology, "T", "preset, cluster spec or topology JSON", true)
      .option("--network-fit", &fit, "FILE", "calibration from `lgreco net calibrate`")
      .option("--nccl-env", &nccl_env, "VARS", kNcclEnvHelp)
      .option("--schedule", &schedule, "FILE", "schedule from `lgreco plan` (its methods and bucket plan)")
      .option("--phase", &phase_s, "K", "schedule phase index (default: the last phase)")
      .option("--method", &method, "M", "uniform method for every tensor, e.g. powersgd:rank=4 (default none)")
      .option("--ranks", &ranks_s, "N", "ranks (default: every GPU)")
      .option("--achieved-fraction", &frac_s, "F", "achieved fraction of the GPU's dense peak (default 0.4)")
      .format(&fmt);
  add_kernel_time_options(p, kta);
  if (!p.parse(args)) return 0;
  if ((!preset.empty()) + (!trace.empty()) + (!layers_path.empty()) != 1) throw UsageError("give exactly one of --model, --trace, --layers");
  if (!schedule.empty() && !method.empty()) throw UsageError("--schedule and --method exclude each other");
  if (!phase_s.empty() && schedule.empty()) throw UsageError("--phase needs --schedule");
  std::vector<std::filesystem::path> inputs;
  pipeline::StepInputs in;
  // A flag's value the library refuses is that flag's usage error.
  const auto option = [](const char* flag, auto&& parse) {
    try {
      return parse();
    } catch (const ConfigError& e) {
      throw UsageError(std::string(flag) + ": " + e.what());
    }
  };
  if (!preset.empty()) {
    in = option("--model", [&] { return pipeline::inputs_from_preset(preset); });
  } else if (!trace.empty()) {
    in = pipeline::inputs_from_trace(trace);
    inputs.push_back(trace);
  } else {
    in = pipeline::inputs_from_layers(layers_path);
    inputs.push_back(layers_path);
  }
  net::Topology t;
  const int ranks = parse_ranks(ranks_s);
  net::NetworkCost cost(resolve_model(topology, ranks, fit, &inputs, &t, nccl_env));
  pipeline::ComputeOptions co;
  co.achieved_fraction = parse_double("--achieved-fraction", frac_s);
  if (!(co.achieved_fraction > 0 && co.achieved_fraction <= 1)) throw UsageError("--achieved-fraction " + frac_s + ": expected 0 < F <= 1");
  co.flops = in.flops;
  const pipeline::KernelTime kt = resolve_kernel_time(kta);
  if (!kta.profile.empty()) inputs.push_back(kta.profile);
  co.recorded_scale = resolve_compute_scale(kta);
  const int n = cost.model().ranks();
  pipeline::Cluster cluster;
  cluster.gpu = t.gpu;
  cluster.nodes = 1;
  cluster.gpus_per_node = n;
  planner::PlanOptions opt;
  opt.kernel_time = pipeline::kernel_time_fn(kt, cluster);
  Json sched_cfg = nullptr;
  if (!schedule.empty()) {
    const int k = phase_s.empty() ? -1 : static_cast<int>(parse_int("--phase", phase_s));
    if (k < -1) throw UsageError("--phase " + phase_s + ": expected an index >= 0");
    const planner::Schedule sched = planner::read_schedule(schedule);
    const int used = pipeline::set_phase(in, sched, k, schedule);
    inputs.push_back(schedule);
    sched_cfg = {{"path", schedule}, {"phase", used}, {"label", sched.phases[static_cast<std::size_t>(used)].label}};
  } else {
    pipeline::set_uniform(in, option("--method", [&] { return sim::parse_method(method.empty() ? "none" : method); }));
  }
  planner::Tables tables;
  tables.windows.push_back(in.window);
  const pipeline::ComputeModel compute = pipeline::compute_model(in.window, in.model, &t.gpu, co);
  pipeline::apply_compute(compute, tables, opt);
  if (!compute.note.empty()) std::cerr << "lgreco: note: " << compute.note << "\n";
  const planner::Window& w = tables.windows[0];
  std::vector<planner::Candidate> chosen;
  for (const auto& l : w.layers) chosen.push_back(l.candidates[0]);
  const sim::StepResult r = planner::predict_step(w, chosen, opt, cost);
  const sim::StepResult u = planner::predict_step(w, planner::uncompressed(w), opt, cost);
  double bytes = 0, ubytes = 0;
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    bytes += chosen[i].bytes;
    ubytes += 4.0 * static_cast<double>(w.layers[i].numel);
  }
  const sim::StepModel model = planner::step_model_of(w, opt.forward_s, opt.optimizer_s);
  // With the presets, how far off to expect the network times (every size band: buckets of every size).
  std::vector<net::PredictionClass> classes;
  if (fit.empty() && cost.model().ranks() > 1) classes.push_back(net::prediction_class(t, cost.model().embedding()));
  if (fmt == Format::kJson) {
    Json gantt = Json::array();
    for (const auto& b : r.buckets) {
      Json g{{"bucket", b.bucket}, {"layers", model.buckets[b.bucket].size()}, {"ready_s", b.ready_s}, {"start_s", b.start_s},
             {"end_s", b.end_s}, {"comm_s", b.comm_s}};
      g.update(comm_bytes(w, opt, model.buckets[b.bucket]));
      gantt.push_back(g);
    }
    const Json config{{"model", in.model}, {"trace", trace.empty() ? Json(nullptr) : Json(trace)},
                      {"layers", layers_path.empty() ? Json(nullptr) : Json(layers_path)}, {"topology", topology},
                      {"network_fit", fit.empty() ? Json(nullptr) : Json(fit)},
                      {"nccl_env", cost.model().params().nccl_env.restricted() ? Json(cost.model().params().nccl_env.text) : Json(nullptr)}, {"schedule", sched_cfg},
                      {"method", schedule.empty() ? Json(method.empty() ? "none" : method) : Json(nullptr)}, {"ranks", n},
                      {"compute", pipeline::compute_json(compute)}, {"bucket_source", in.bucket_source},
                      {"kernel_time", pipeline::kernel_time_json(kt, &cluster)},
                      {"kernel_profile", kta.profile.empty() ? Json(nullptr) : Json(kta.profile)},
                      {"bucket_cap_bytes", 25 * 1048576}, {"first_bucket_cap_bytes", 1048576}};
    std::cout << Json{{"schema_version", 1}, {"kind", "lgreco-simulate"}, {"step_s", r.step_s}, {"compute_s", r.compute_s},
                      {"exposed_comm_s", r.exposed_comm_s}, {"bytes_per_step", bytes}, {"uncompressed_step_s", u.step_s},
                      {"uncompressed_exposed_comm_s", u.exposed_comm_s}, {"uncompressed_bytes_per_step", ubytes},
                      {"speedup", u.step_s / r.step_s}, {"buckets", gantt},
                      {"expected_network_error", classes.empty() ? Json(nullptr) : net::expected_error_json(classes, net::all_size_bands())},
                      {"config", config}, {"provenance", provenance_json(inputs)}}
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
  for (const auto& line : net::expected_error_lines(classes, net::all_size_bands())) std::printf("%s\n", line.c_str());
  return 0;
}

LGRECO_COMMAND("simulate", "simulate one training step's timeline on a network model", run_simulate);

}  // namespace
}  // namespace lgreco::cli
