// Measurement corpus reader (format in corpus.hpp).
#include "network_models/corpus.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <sstream>

#include "core/json_util.hpp"
#include "core/units.hpp"
#include "network_models/presets.hpp"

namespace lgreco::net {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  if (!s.empty() && s.back() == sep) out.emplace_back();
  return out;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

double number(const std::string& s, const std::string& where, const std::string& field) {
  try {
    std::size_t pos = 0;
    const double v = std::stod(s, &pos);
    if (pos == s.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  throw InputError(where + ": " + field + " \"" + s + "\" is not a number");
}

}  // namespace

double busbw_factor(Collective c, int ranks) {
  const double n = ranks;
  if (ranks <= 1) return 1;
  if (c == Collective::kAllreduce) return 2 * (n - 1) / n;
  if (c == Collective::kBroadcast) return 1;
  return (n - 1) / n;
}

bool is_corpus_text(const std::string& text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# ", 0) != 0) return false;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    return trim(line.substr(2, colon - 2)) == "system";
  }
  return false;
}

CorpusFile parse_corpus(const std::string& text, const std::string& origin) {
  CorpusFile f;
  f.origin = origin;
  std::map<std::string, std::string*> keys{{"system", &f.system},       {"machine", &f.machine}, {"topology", &f.topology},
                                           {"nccl", &f.nccl},           {"source", &f.source},   {"derived", &f.derived},
                                           {"command", &f.command},     {"partial", &f.partial}, {"not used", &f.not_used},
                                           {"excluded", &f.excluded}};
  std::string benchmark, layout;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  bool header = false;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string where = origin + ":" + std::to_string(lineno);
    if (trim(line).empty()) continue;
    if (line[0] == '#') {
      if (header) throw InputError(where + ": comment after the header line");
      const auto colon = line.find(':');
      if (line.rfind("# ", 0) != 0 || colon == std::string::npos) {
        if (lineno == 1) continue;  // a title line
        throw InputError(where + ": expected \"# key: value\", got \"" + line + "\"");
      }
      const std::string key = trim(line.substr(2, colon - 2)), value = trim(line.substr(colon + 1));
      if (key == "benchmark") {
        benchmark = value;
      } else if (key == "nccl_env") {
        if (f.nccl_env.restricted()) throw InputError(where + ": key \"nccl_env\" given twice");
        f.nccl_env = parse_nccl_env(value, where + ": nccl_env");
        if (!f.nccl_env.restricted()) throw InputError(where + ": key \"nccl_env\" is empty");
      } else if (key == "gpus_per_process") {
        layout = value;
      } else if (auto it = keys.find(key); it != keys.end()) {
        if (!it->second->empty()) throw InputError(where + ": key \"" + key + "\" given twice");
        *it->second = value;
      } else {
        std::string expected = "benchmark, gpus_per_process, nccl_env";
        for (const auto& [name, field] : keys) expected += ", " + name;
        throw InputError(where + ": unknown key \"" + key + "\" (expected " + expected + ")");
      }
      continue;
    }
    const auto cols = split(line, '\t');
    if (!header) {
      if (cols != std::vector<std::string>{"collective", "ranks", "size_bytes", "time_us", "published"}) {
        throw InputError(where + ": expected the header \"collective<TAB>ranks<TAB>size_bytes<TAB>time_us<TAB>published\", got \"" + line + "\"");
      }
      header = true;
      continue;
    }
    if (cols.size() != 5) throw InputError(where + ": expected 5 tab-separated columns, got " + std::to_string(cols.size()));
    CorpusRow r;
    r.line = lineno;
    r.collective = parse_collective(cols[0], where + ": collective");
    const double ranks = number(cols[1], where, "ranks");
    // 2^20 ranks: far beyond any published run, and within int before the conversion below.
    if (ranks < 2 || ranks > (1 << 20) || ranks != std::floor(ranks)) {
      throw InputError(where + ": ranks " + cols[1] + " must be a whole number from 2 to " + std::to_string(1 << 20));
    }
    r.ranks = static_cast<int>(ranks);
    r.size_bytes = number(cols[2], where, "size_bytes");
    if (r.size_bytes <= 0 || r.size_bytes > units::kMaxBytes || r.size_bytes != std::floor(r.size_bytes)) {
      throw InputError(where + ": size_bytes " + cols[2] + " must be a whole number from 1 to " + units::format_max_bytes());
    }
    r.time_s = number(cols[3], where, "time_us") * 1e-6;
    if (!(r.time_s > 0)) throw InputError(where + ": time_us " + cols[3] + " must be > 0");
    r.published = cols[4];
    for (const auto& item : split(cols[4], ';')) {
      const auto eq = item.find('=');
      if (eq == std::string::npos) throw InputError(where + ": published item \"" + item + "\" is not key=value");
      const std::string k = item.substr(0, eq), v = item.substr(eq + 1);
      if (k == "time_us") r.published_time_s = number(v, where, k) * 1e-6;
      if (k == "busbw_GBps") r.busbw_Bps = number(v, where, k) * 1e9;
      if (k == "algbw_GBps") r.algbw_Bps = number(v, where, k) * 1e9;
    }
    if (!r.published_time_s && !r.busbw_Bps && !r.algbw_Bps) {
      throw InputError(where + ": published \"" + cols[4] + "\" has no time_us, busbw_GBps or algbw_GBps");
    }
    f.rows.push_back(r);
  }
  for (const auto& [key, value] : std::map<std::string, std::string>{{"system", f.system}, {"machine", f.machine}, {"topology", f.topology},
                                                                     {"nccl", f.nccl}, {"source", f.source}, {"derived", f.derived},
                                                                     {"benchmark", benchmark}, {"gpus_per_process", layout}}) {
    if (value.empty()) throw InputError(origin + ": missing \"# " + key + ": ...\"");
  }
  if (benchmark == "nccl-tests") {
    f.benchmark = Benchmark::kNcclTests;
  } else if (benchmark == "pytorch") {
    f.benchmark = Benchmark::kPytorch;
  } else {
    throw InputError(origin + ": benchmark \"" + benchmark + "\" (expected nccl-tests or pytorch)");
  }
  if (layout != "1" && layout != "node" && layout != "unknown") throw InputError(origin + ": gpus_per_process \"" + layout + "\" (expected 1, node or unknown)");
  f.one_process_per_host = layout == "node";
  if (f.rows.empty()) throw InputError(origin + ": no measurement rows");
  return f;
}

CorpusFile load_corpus_file(const std::filesystem::path& path) {
  // Corpus files are a few kB; the nccl-tests limit (256 MiB) refuses devices and runaway files.
  return parse_corpus(read_text_file(path, std::uint64_t{256} << 20), path.string());
}

std::vector<CorpusFile> load_corpus_dir(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> paths;
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) {
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.is_regular_file() && e.path().extension() == ".tsv") paths.push_back(e.path());
  }
  if (paths.empty()) throw InputError("corpus directory " + dir.string() + " has no .tsv files");
  std::sort(paths.begin(), paths.end());
  std::vector<CorpusFile> out;
  for (const auto& p : paths) out.push_back(load_corpus_file(p));
  return out;
}

Topology corpus_topology(const CorpusFile& f) {
  // Errors name the corpus file first: "FILE: topology: unknown topology ...".
  const std::string where = f.origin + ": topology";
  try {
    const auto local = std::filesystem::path(f.origin).parent_path() / f.topology;
    if (f.topology.size() > 5 && f.topology.substr(f.topology.size() - 5) == ".json") return load_topology_file(local);
    return preset_topology(f.topology);
  } catch (const ConfigError& e) {
    throw ConfigError(where + ": " + e.what());
  } catch (const InputError& e) {
    throw InputError(where + ": " + e.what());
  }
}

}  // namespace lgreco::net
