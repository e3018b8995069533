// `lgreco schedule validate|show|diff`: check, display and compare schedules.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <set>

#include "core/error.hpp"
#include "core/units.hpp"
#include "kernels/method_json.hpp"
#include "planner/schedule.hpp"
#include "tools/args.hpp"
#include "tools/command.hpp"

namespace lgreco::cli {
namespace {

using namespace lgreco::planner;

Json method_json(const std::optional<kernels::MethodSpec>& m) { return m ? kernels::method_to_json(*m) : Json(nullptr); }

int run_schedule_validate(const std::vector<std::string>& args) {
  std::string path;
  Format fmt;
  ArgParser p("lgreco schedule validate",
              "Check a schedule: structure (known keys and types, known methods and parameters) and semantics (phases\n"
              "ordered and not overlapping, only the last open-ended, every parameter in every phase, buckets disjoint).\n"
              "Exit 0 when valid, 1 otherwise.");
  p.positional("SCHEDULE", &path, "schedule JSON").format(&fmt);
  if (!p.parse(args)) return 0;
  const Schedule s = read_schedule(path);
  const auto issues = check_schedule(s);
  std::set<std::string> params;
  for (const auto& ph : s.phases) {
    for (const auto& [n, m] : ph.layers) params.insert(n);
  }
  if (fmt == Format::kJson) {
    std::cout << Json{{"schema_version", 1}, {"kind", "lgreco-schedule-validation"}, {"file", path}, {"valid", issues.empty()},
                      {"issues", issues}, {"phases", s.phases.size()}, {"parameters", params.size()}}.dump(2) << "\n";
  } else if (issues.empty()) {
    std::cout << path << ": valid (" << s.phases.size() << " phases, " << params.size() << " parameters)\n";
  } else {
    for (const auto& i : issues) std::cout << path << ": " << i << "\n";
  }
  if (!issues.empty()) throw InputError(path + ": invalid schedule (" + std::to_string(issues.size()) + " problem(s), first: " + issues[0] + ")");
  return 0;
}

int run_show(const std::vector<std::string>& args) {
  std::string path, phase;
  Format fmt;
  ArgParser p("lgreco schedule show", "Show a schedule as a table: phases with their predictions, then each parameter's setting per phase.");
  p.positional("SCHEDULE", &path, "schedule JSON").option("--phase", &phase, "LABEL", "show only this phase").format(&fmt);
  if (!p.parse(args)) return 0;
  const Schedule s = read_schedule(path);
  std::vector<const Phase*> phases;
  if (!phase.empty()) phases.push_back(&find_phase(s, phase));
  else for (const auto& ph : s.phases) phases.push_back(&ph);
  if (fmt == Format::kJson) {
    Json out = Json::array();
    for (const Phase* ph : phases) {
      Json layers = Json::object();
      for (const auto& [n, m] : ph->layers) layers[n] = method_json(m);
      out.push_back({{"label", ph->label}, {"start_step", ph->start_step}, {"end_step", ph->end_step ? Json(*ph->end_step) : Json(nullptr)},
                     {"layers", layers}, {"predicted", ph->predicted}});
    }
    std::cout << Json{{"schema_version", 1}, {"kind", "lgreco-schedule-view"}, {"model", s.model}, {"phases", out}}.dump(2) << "\n";
    return 0;
  }
  std::cout << s.model << ": " << s.family << " schedule, engine " << s.engine << ", world size " << s.world_size << "\n\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-10s %10s %10s %14s %12s %12s\n", "phase", "start", "end", "bytes/step", "ratio", "error");
  std::cout << line;
  for (const Phase* ph : phases) {
    const Json& pr = ph->predicted;
    const std::string ratio = pr.contains("compression_ratio") && pr["compression_ratio"].is_number()
                                  ? std::to_string(pr["compression_ratio"].get<double>()).substr(0, 7) + "x" : "-";
    const std::string err = pr.contains("total_error") && pr["total_error"].is_number() ? std::to_string(pr["total_error"].get<double>()) : "-";
    std::snprintf(line, sizeof line, "%-10s %10lld %10s %14s %12s %12s\n", ph->label.c_str(), static_cast<long long>(ph->start_step),
                  ph->end_step ? std::to_string(*ph->end_step).c_str() : "open", units::format_bytes(pr["bytes_per_step"].get<double>()).c_str(),
                  ratio.c_str(), err.c_str());
    std::cout << line;
  }
  std::cout << "\n";
  std::snprintf(line, sizeof line, "%-36s", "parameter");
  std::cout << line;
  for (const Phase* ph : phases) std::cout << " | " << ph->label;
  std::cout << "\n";
  for (std::size_t i = 0; i < phases.front()->layers.size(); ++i) {
    const std::string& name = phases.front()->layers[i].first;
    std::snprintf(line, sizeof line, "%-36s", name.c_str());
    std::cout << line;
    for (const Phase* ph : phases) {
      std::string label = "-";
      for (const auto& [n, m] : ph->layers) {
        if (n == name) label = kernels::describe(m);
      }
      std::cout << " | " << label;
    }
    std::cout << "\n";
  }
  return 0;
}

int run_diff(const std::vector<std::string>& args) {
  std::string a_path, b_path, phases_text, phase;
  Format fmt;
  ArgParser p("lgreco schedule diff",
              "Per-parameter changes between two schedules (phases matched by label; --phase LABEL for one) or between two\n"
              "phases of one schedule (--phases A,B).");
  p.positional("A", &a_path, "schedule JSON").positional("B", &b_path, "second schedule JSON", false)
      .option("--phases", &phases_text, "A,B", "compare two phases of schedule A")
      .option("--phase", &phase, "LABEL", "compare only this phase of A and B").format(&fmt);
  if (!p.parse(args)) return 0;
  const Schedule a = read_schedule(a_path);
  struct Pair {
    const Phase *x, *y;
    std::string name;
  };
  std::vector<Pair> pairs;
  std::optional<Schedule> b;
  if (!phases_text.empty()) {
    if (!b_path.empty()) throw UsageError("lgreco schedule diff: --phases compares phases of ONE schedule; drop B");
    const auto labels = split_list(phases_text);
    if (labels.size() != 2) throw UsageError("--phases: expected two labels, e.g. plan-0,plan-1");
    pairs.push_back({&find_phase(a, labels[0]), &find_phase(a, labels[1]), labels[0] + " -> " + labels[1]});
  } else {
    if (b_path.empty()) throw UsageError("lgreco schedule diff: give two schedules, or one with --phases A,B");
    b = read_schedule(b_path);
    for (const auto& ph : a.phases) {
      if (!phase.empty() && ph.label != phase) continue;
      bool found = false;
      for (const auto& q : b->phases) {
        if (q.label == ph.label) pairs.push_back({&ph, &q, ph.label}), found = true;
      }
      if (!found) pairs.push_back({&ph, nullptr, ph.label + " (only in A)"});
    }
    for (const auto& q : b->phases) {
      if ((phase.empty() || q.label == phase) &&
          std::none_of(a.phases.begin(), a.phases.end(), [&](const Phase& x) { return x.label == q.label; })) {
        pairs.push_back({nullptr, &q, q.label + " (only in B)"});
      }
    }
    if (!phase.empty() && pairs.empty()) {
      throw ConfigError("no phase labelled '" + printable(phase) + "' in either schedule (" + a_path + ": " + phase_labels(a) + "; " + b_path +
                        ": " + phase_labels(*b) + ")");
    }
  }
  Json out = Json::array();
  std::size_t total = 0;
  for (const auto& pr : pairs) {
    Json changes = Json::array();
    if (pr.x && pr.y) {
      for (const auto& c : diff_phases(*pr.x, *pr.y)) {
        changes.push_back({{"parameter", c.param}, {"from", method_json(c.from)}, {"to", method_json(c.to)}});
        if (fmt == Format::kTable) {
          std::cout << pr.name << ": " << c.param << ": " << (c.from ? kernels::describe(*c.from) : "(absent)") << " -> "
                    << (c.to ? kernels::describe(*c.to) : "(absent)") << "\n";
        }
      }
    } else if (fmt == Format::kTable) {
      std::cout << pr.name << "\n";
    }
    total += changes.size();
    out.push_back({{"phases", pr.name}, {"changes", changes}});
  }
  if (fmt == Format::kJson) {
    std::cout << Json{{"schema_version", 1}, {"kind", "lgreco-schedule-diff"}, {"a", a_path}, {"b", b_path.empty() ? Json(nullptr) : Json(b_path)},
                      {"comparisons", out}, {"changed", total}}.dump(2) << "\n";
  } else {
    std::cout << total << " change(s)\n";
  }
  return 0;
}

LGRECO_COMMAND("schedule validate", "check a schedule's structure and semantics", run_schedule_validate);
LGRECO_COMMAND("schedule show", "show a schedule as a readable table", run_show);
LGRECO_COMMAND("schedule diff", "per-parameter changes between schedules or phases", run_diff);

}  // namespace
}  // namespace lgreco::cli
