#include "planner/export.hpp"

#include <map>
#include <sstream>

#include "core/error.hpp"

namespace lgreco::planner {
namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

Json export_torch_hook(const Schedule& s) { return schedule_to_json(s); }

Json export_cgx(const Schedule& s, Json provenance) {
  // Position of every parameter in its bucket.
  struct Where {
    int bucket, layer;
    std::int64_t numel;
  };
  std::map<std::string, Where> where;
  for (const auto& b : s.buckets) {
    if (b.numel.empty()) throw ConfigError("cgx export: bucket " + std::to_string(b.index) + " lists no numel (re-plan with this version)");
    for (std::size_t i = 0; i < b.params.size(); ++i) where[b.params[i]] = {b.index, static_cast<int>(i), b.numel[i]};
  }
  Json phases = Json::array();
  for (const auto& p : s.phases) {
    Json layers = Json::array();
    for (const auto& [name, m] : p.layers) {
      int bits = 32;
      std::int64_t bucket_size = 1024;
      if (m.method == kernels::Method::kMaxMin) {
        bits = m.maxmin.bits;
        bucket_size = m.maxmin.bucket_size;
      } else if (m.method != kernels::Method::kNone) {
        throw ConfigError("cgx export: phase '" + p.label + "', parameter '" + name + "' uses " + kernels::describe(m) +
                          "; CGX runs only maxmin and none");
      }
      auto it = where.find(name);
      if (it == where.end()) throw ConfigError("cgx export: parameter '" + name + "' is in no bucket");
      layers.push_back({{"name", name}, {"bucket", it->second.bucket}, {"layer", it->second.layer},
                        {"numel", it->second.numel}, {"bits", bits}, {"bucket_size", bucket_size}});
    }
    phases.push_back({{"start_step", p.start_step}, {"end_step", p.end_step ? Json(*p.end_step) : Json(nullptr)},
                      {"label", p.label}, {"layers", layers}});
  }
  return {{"schema_version", 1}, {"kind", "lgreco-cgx"}, {"model", s.model}, {"world_size", s.world_size},
          {"phases", phases}, {"config", {{"source_engine", s.engine}, {"uncompressed_bits", 32}}}, {"provenance", provenance}};
}

std::string export_csv(const Schedule& s) {
  std::ostringstream out;
  out << "label,start_step,end_step,parameter,method,params\n";
  for (const auto& p : s.phases) {
    for (const auto& [name, m] : p.layers) {
      out << p.label << "," << p.start_step << "," << (p.end_step ? std::to_string(*p.end_step) : "") << "," << csv_field(name) << ","
          << kernels::method_name(m.method) << "," << csv_field(params_text(m)) << "\n";
    }
  }
  return out.str();
}

}  // namespace lgreco::planner
