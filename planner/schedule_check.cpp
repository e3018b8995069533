#include <map>
#include <regex>
#include <set>

#include "core/error.hpp"
#include "core/text.hpp"
#include "planner/schedule.hpp"

namespace lgreco::planner {

std::vector<std::string> check_schedule(const Schedule& s) {
  std::vector<std::string> issues;
  if (s.world_size < 1) issues.push_back("world_size " + std::to_string(s.world_size) + " < 1");
  if (s.phases.empty()) issues.push_back("no phases");
  static const std::regex label_re("^(warmup|uniform|plan-[0-9]+)$");
  std::set<std::string> all;
  for (const auto& p : s.phases) {
    for (const auto& [name, m] : p.layers) all.insert(name);
  }
  std::set<std::string> declared;
  for (const auto& [name, shape] : s.parameters) {
    if (!declared.insert(name).second) issues.push_back("parameter '" + name + "' listed twice in parameters");
    all.insert(name);
  }
  for (const auto& p : s.phases)
    for (const auto& [name, m] : p.layers)
      if (!s.parameters.empty() && !declared.count(name))
        issues.push_back("phase '" + p.label + "': parameter '" + name + "' is not among the schedule's parameters");
  std::map<std::string, int> owner;
  for (const auto& b : s.buckets) {
    for (const auto& name : b.params) {
      all.insert(name);
      auto [it, fresh] = owner.emplace(name, b.index);
      if (!fresh) issues.push_back("parameter '" + name + "' is in buckets " + std::to_string(it->second) + " and " + std::to_string(b.index));
    }
  }
  std::set<std::string> labels;
  for (std::size_t i = 0; i < s.phases.size(); ++i) {
    const Phase& p = s.phases[i];
    const std::string pd = "phase " + std::to_string(i) + " ('" + p.label + "')";
    if (!std::regex_match(p.label, label_re)) issues.push_back(pd + ": label must be warmup, uniform or plan-<k>");
    if (!labels.insert(p.label).second) issues.push_back(pd + ": label used twice");
    if (p.start_step < 0) issues.push_back(pd + ": start_step " + std::to_string(p.start_step) + " < 0");
    if (p.end_step && *p.end_step <= p.start_step) {
      issues.push_back(pd + ": end_step " + std::to_string(*p.end_step) + " <= start_step " + std::to_string(p.start_step));
    }
    if (!p.end_step && i + 1 < s.phases.size()) issues.push_back(pd + ": open-ended (end_step null) but not the last phase");
    if (i > 0) {
      const Phase& q = s.phases[i - 1];
      if (q.end_step && p.start_step < *q.end_step) {
        issues.push_back(pd + ": starts at step " + std::to_string(p.start_step) + " before the previous phase ends (" +
                         std::to_string(*q.end_step) + ")");
      }
      if (p.start_step < q.start_step) issues.push_back(pd + ": phases are not ordered by start_step");
    }
    std::set<std::string> here;
    for (const auto& [name, m] : p.layers) here.insert(name);
    for (const auto& name : all) {
      if (!here.count(name)) issues.push_back(pd + ": parameter '" + name + "' missing (every parameter must appear in every phase)");
    }
    const Json& bytes = p.predicted.at("bytes_per_step");
    if (!(bytes.get<double>() >= 0)) issues.push_back(pd + ": predicted.bytes_per_step is negative");
  }
  return issues;
}

std::vector<PhaseChange> diff_phases(const Phase& a, const Phase& b) {
  std::map<std::string, kernels::MethodSpec> mb(b.layers.begin(), b.layers.end());
  std::set<std::string> seen;
  std::vector<PhaseChange> out;
  for (const auto& [name, m] : a.layers) {
    seen.insert(name);
    auto it = mb.find(name);
    if (it == mb.end()) out.push_back({name, m, std::nullopt});
    else if (!(it->second == m)) out.push_back({name, m, it->second});
  }
  for (const auto& [name, m] : b.layers) {
    if (!seen.count(name)) out.push_back({name, std::nullopt, m});
  }
  return out;
}

const Phase& find_phase(const Schedule& s, const std::string& label) {
  for (const auto& p : s.phases)
    if (p.label == label) return p;
  throw ConfigError("no phase labelled '" + printable(label) + "' (phases: " + phase_labels(s) + ")");
}

std::string phase_labels(const Schedule& s) {
  std::string known;
  for (const auto& p : s.phases) known += (known.empty() ? "" : ", ") + printable(p.label);
  return known;
}

}  // namespace lgreco::planner
