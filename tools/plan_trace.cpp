// `lgreco plan --trace ...`: the closed loop from a trace to a phased schedule (cmd_plan.cpp
// dispatches here when --trace is given).
#include "tools/plan_trace.hpp"

#include <iostream>

#include "core/atomic_file.hpp"
#include "core/cancel.hpp"
#include "core/units.hpp"
#include "core/error.hpp"
#include "core/provenance.hpp"
#include "kernels/method_json.hpp"
#include "planner/tables.hpp"
#include "tools/trace_cluster.hpp"

namespace lgreco::cli {

Json trace_job_config(const TraceJob& job, const ClosedLoopResult& r, const Cluster* cluster) {
  Json defaults = Json::object();
  for (const auto& [k, v] : job.default_kv) defaults[k] = v;
  Json windows = Json::array();
  for (const auto& w : r.windows.windows) {
    windows.push_back(Json{{"start_step", w.start_step}, {"end_step", w.end_step}, {"acc_steps", w.acc_steps},
                           {"resets_state", w.starts_burst}});
  }
  Json c{{"trace", job.trace.string()},
         {"family", sim::to_string(job.family)},
         {"default", defaults},
         {"engine", planner::engine_name(job.plan.engine)},
         {"error_mode", sim::to_string(job.error_mode)},
         {"alpha", job.plan.budget.value},
         {"rank_low", job.ranges.rank_low},
         {"rank_high", job.ranges.rank_high},
         {"min_numel", job.ranges.min_numel},
         {"warmup_steps", job.schedule_warmup ? Json(*job.schedule_warmup) : Json(nullptr)},
         {"period_steps", job.windows.period_steps},
         {"acc_steps", job.windows.acc_steps},
         {"seed", job.seed},
         {"backend", r.backend},
         {"threads", job.threads},
         {"memory_limit_bytes", job.memory_limit_bytes},
         {"replay_peak_concurrent_layers", r.peak_tasks},
         {"replay_peak_concurrent_layer_bytes", r.peak_task_bytes},
         {"forward_s", r.plan.forward_s},
         {"optimizer_s", r.plan.optimizer_s},
         {"replayed_windows", windows},
         {"window_notes", r.windows.notes}};
  if (cluster) {
    c["topology"] = cluster->description;
    c["ranks"] = cluster->ranks();
  }
  return c;
}

int run_plan_trace(const std::vector<std::string>& args) {
  TraceJobArgs a;
  std::string topology, out, tables_out, network_fit;
  bool force = false;
  Format fmt = Format::kTable;
  ArgParser p("lgreco plan",
              "Replay a trace window by window through the compression kernels, plan each window from the "
              "previous one's candidate tables, apply that plan in the next window, and write the phased "
              "schedule (warm-up, uniform, one phase per plan). The summary goes to stdout.");
  add_trace_job_options(p, a);
  p.option("--topology", &topology, "NAME|FILE", "cluster to predict step times on, e.g. 4x8xA100-1x25G");
  p.option("--network-fit", &network_fit, "FILE", "calibration of that topology from `lgreco net calibrate`");
  p.option("--output", &out, "FILE", "schedule to write (JSON)", true, "-o");
  p.option("--tables-out", &tables_out, "FILE", "also write the candidate tables (reusable by plan --tables; HDF5 when FILE ends in .h5)");
  p.flag("--force", &force, "overwrite existing outputs");
  KernelTimeArgs kt;
  add_kernel_time_options(p, kt);
  p.format(&fmt);
  if (!p.parse(args)) return 0;
  const Overwrite policy = force ? Overwrite::kAllow : Overwrite::kRefuse;
  check_writable_destination(out, policy);
  if (!tables_out.empty()) check_writable_destination(tables_out, policy);

  TraceJob job = resolve_trace_job(a);
  std::optional<Cluster> cluster;
  if (!network_fit.empty() && topology.empty()) throw UsageError("--network-fit needs --topology");
  std::optional<Json> fit_doc;
  if (!network_fit.empty()) fit_doc = read_json_file(network_fit);
  if (!topology.empty())
    cluster = make_cluster(topology, std::nullopt, std::nullopt, std::nullopt, fit_doc ? &*fit_doc : nullptr, network_fit);
  if (job.plan.engine == planner::Engine::kTime && !cluster) {
    throw UsageError("--engine time needs --topology (it minimises the predicted step time)");
  }
  if (!kt.profile.empty() && !cluster) throw UsageError("--kernel-profile needs --topology (kernel time only enters step predictions)");
  if (cluster) {
    std::shared_ptr<const kernels::DeviceProfile> profile;
    if (!kt.profile.empty()) profile = std::make_shared<const kernels::DeviceProfile>(kernels::load_profile(kt.profile));
    job.plan.kernel_time = kernel_time_fn(kt, *cluster, profile);
  }
  const ClosedLoopResult r = run_closed_loop(job, cluster ? cluster->cost.get() : nullptr, stderr_progress());
  Json config = trace_job_config(job, r, cluster ? &*cluster : nullptr);
  config["kernel_time"] = kernel_time_json(kt, cluster ? &*cluster : nullptr);
  const Json schedule = schedule_json(job, r, config);

  // Both outputs go to temporary files first and are renamed only when both are complete.
  AtomicFile sched_file(out, policy);
  sched_file.stream() << schedule.dump(2) << "\n";
  std::optional<planner::PendingTables> tables_file;
  if (!tables_out.empty()) tables_file.emplace(r.tables, tables_out, policy);
  throw_if_cancelled();
  sched_file.commit();
  if (tables_file) tables_file->commit();

  if (fmt == Format::kJson) {
    std::cout << Json{{"schema_version", 1}, {"kind", "lgreco-plan-summary"}, {"schedule", out},
                      {"predicted", schedule["predicted"]}, {"config", config},
                      {"replay", Json{{"seconds", r.replay_s}, {"grad_bytes", r.grad_bytes}}},
                      {"provenance", schedule["provenance"]}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << summary_text(job, r, cluster ? cluster->name : "") << "schedule written to " << out;
    if (!tables_out.empty()) std::cout << ", tables to " << tables_out;
    std::cout << " (replayed " << units::format_bytes(r.grad_bytes) << " of gradients in "
              << units::format_seconds(r.replay_s) << ")\n";
  }
  return 0;
}

}  // namespace lgreco::cli
