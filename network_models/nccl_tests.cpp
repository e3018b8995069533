// nccl-tests output reader (format notes in nccl_tests.hpp).
#include "network_models/nccl_tests.hpp"

#include "core/json_util.hpp"
#include "core/text.hpp"
#include "core/units.hpp"

#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

namespace lgreco::net {
namespace {

std::vector<std::string> tokens(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> t;
  for (std::string w; in >> w;) t.push_back(w);
  return t;
}

// A count from a header line ("-g 8", "nThread 1 nGpus 8"): 1 to 2^20, else an error naming the line.
int to_count(const std::string& digits, const std::string& what, const std::string& where) {
  constexpr long long kMax = 1 << 20;
  long long v = 0;
  for (const char c : digits) {
    v = v * 10 + (c - '0');
    if (v > kMax) break;
  }
  if (digits.empty() || v < 1 || v > kMax) {
    throw InputError(where + ": " + what + " " + (digits.size() > 24 ? digits.substr(0, 24) + "..." : digits) +
                     " is out of range (expected 1 to " + std::to_string(kMax) + ")");
  }
  return static_cast<int>(v);
}

bool to_double(const std::string& s, double* out) {
  try {
    std::size_t pos = 0;
    const double v = std::stod(s, &pos);
    if (pos != s.size() || !std::isfinite(v)) return false;
    *out = v;
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

std::optional<Collective> collective_in(const std::string& s) {
  static const std::pair<const char*, Collective> names[] = {
      {"all_reduce_perf", Collective::kAllreduce}, {"all_gather_perf", Collective::kAllgather},
      {"reduce_scatter_perf", Collective::kReduceScatter}, {"broadcast_perf", Collective::kBroadcast}};
  for (const auto& [n, c] : names) {
    if (s.find(n) != std::string::npos) return c;
  }
  return std::nullopt;
}

}  // namespace

NcclTestsRun parse_nccl_tests(const std::string& text, const std::string& origin) {
  NcclTestsRun run;
  run.origin = origin;
  std::istringstream in(text);
  std::string line;
  int lineno = 0, rank_lines = 0;
  bool tsv = false;
  std::optional<int> gpus_flag, threads = 1, ngpus;
  static const std::regex g_flag(R"((?:^|\s)-g\s+(\d+))"), nthread(R"(nThread\s+(\d+)\s+nGpus\s+(\d+))"), rank(R"(^#\s*Rank\s+\d+\s)");
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string where = origin + ":" + std::to_string(lineno);
    // Real lines are under 200 bytes; std::regex recurses per character, so a huge line is refused
    // before any pattern sees it.
    if (line.size() > 4096) {
      throw InputError(where + ": line of " + std::to_string(line.size()) + " bytes (nccl-tests lines are far shorter)");
    }
    const auto t = tokens(line);
    if (t.empty()) continue;
    if (t[0][0] == '#') {
      if (!run.collective) run.collective = collective_in(line);
      std::smatch m;
      if (line.find("command:") != std::string::npos && std::regex_search(line, m, g_flag)) gpus_flag = to_count(m[1], "-g", where);
      if (std::regex_search(line, m, nthread)) {
        threads = to_count(m[1], "nThread", where);
        ngpus = to_count(m[2], "nGpus", where);
      }
      if (std::regex_search(line, rank)) ++rank_lines;
      continue;
    }
    if (t[0] == "size_bytes") {
      if (t.size() < 2 || t[1] != "time_us") throw InputError(where + ": TSV header must start with size_bytes, time_us; got \"" + printable(line) + "\"");
      tsv = true;
      continue;
    }
    double size = 0, time_us = 0;
    if (tsv) {
      if (t.size() < 2 || !to_double(t[0], &size) || !to_double(t[1], &time_us)) {
        throw InputError(where + ": cannot parse TSV row \"" + printable(line.substr(0, 200)) + "\" (expected size_bytes, time_us, ...)");
      }
    } else {
      // Standard table: size count type [redop root] time algbw busbw #wrong time algbw busbw #wrong.
      if (t.size() < 11 || !to_double(t[0], &size) || !to_double(t[t.size() - 8], &time_us)) {
        throw InputError(where + ": cannot parse nccl-tests row \"" + printable(line.substr(0, 200)) +
                         "\" (expected size, count, type, [redop, root,] then time, algbw, busbw, #wrong out-of-place and in-place)");
      }
    }
    if (size < 0 || std::floor(size) != size) throw InputError(where + ": size " + printable(t[0]) + " is not a whole number of bytes");
    if (size > units::kMaxBytes) throw InputError(where + ": size " + printable(t[0]) + " is larger than " + units::format_max_bytes() + " bytes");
    if (!(time_us > 0)) throw InputError(where + ": time " + std::to_string(time_us) + " us must be > 0");
    if (size == 0) continue;
    run.points.push_back({size, time_us * 1e-6});
  }
  if (run.points.empty()) throw InputError(origin + ": no nccl-tests result rows found (is this the output of all_reduce_perf or a size_bytes/time_us TSV?)");
  run.gpus_per_process = gpus_flag ? gpus_flag : ngpus;
  if (rank_lines > 0) {
    run.ranks = rank_lines;
  } else if (gpus_flag) {
    run.ranks = *gpus_flag;
  } else if (ngpus) {
    run.ranks = *threads * *ngpus;
  }
  return run;
}

NcclTestsRun load_nccl_tests(const std::filesystem::path& path) {
  // nccl-tests logs are a few kB to a few MB; 256 MiB is far beyond any real one.
  return parse_nccl_tests(read_text_file(path, std::uint64_t{256} << 20), printable(path.string()));
}

}  // namespace lgreco::net
