// NCCL's algorithm and protocol restrictions (stated in nccl_env.hpp).
#include "network_models/nccl_env.hpp"

#include <cctype>
#include <charconv>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include "core/error.hpp"

namespace lgreco::net {
namespace {

/// User text as errors show it: at most 60 characters (a pasted list can be long).
std::string clip(const std::string& s) { return s.size() <= 60 ? s : s.substr(0, 57) + "..."; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

std::vector<std::string> split_nonempty(std::string_view s, char sep) {
  // strtok semantics, as NCCL parses: empty pieces are skipped.
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    const std::size_t end = s.find(sep, start);
    const std::string_view piece = s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (!piece.empty()) out.emplace_back(piece);
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

/// NCCL's functions in its order, with the model's collective (nullopt: Reduce, not modelled).
struct Function {
  const char* name;
  std::optional<Collective> collective;
};
constexpr Function kFunctions[] = {{"broadcast", Collective::kBroadcast},
                                   {"reduce", std::nullopt},
                                   {"allgather", Collective::kAllgather},
                                   {"reducescatter", Collective::kReduceScatter},
                                   {"allreduce", Collective::kAllreduce}};

/// NCCL's names of one list (algorithms or protocols) with the model's index (-1: not modelled).
struct Element {
  const char* name;
  int index;
};

/// NCCL's parseList over the five functions: `enabled[f][e]` for NCCL's elements.
std::vector<std::vector<bool>> parse_list(const std::string& var, const std::string& value, const std::vector<Element>& elems,
                                          const std::string& where) {
  std::vector<std::vector<bool>> enabled(std::size(kFunctions), std::vector<bool>(elems.size(), true));
  const auto entries = split_nonempty(value, ';');
  if (entries.empty()) throw ConfigError(where + ": " + var + "=\"" + clip(value) + "\" names nothing");
  std::string known;
  for (const auto& e : elems) known += std::string(known.empty() ? "" : ", ") + e.name;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string& entry = entries[i];
    const auto colon = entry.find(':');
    std::optional<std::string> prefix;
    std::string list = entry;
    if (colon != std::string::npos) {
      prefix = lower(entry.substr(0, colon));
      list = entry.substr(colon + 1);
      if (list.find(':') != std::string::npos) throw ConfigError(where + ": " + var + " entry \"" + clip(entry) + "\" has more than one ':'");
    } else if (i > 0) {
      throw ConfigError(where + ": " + var + "=\"" + clip(value) + "\": every entry after the first needs a function prefix (\"allreduce:...\"), \"" +
                        clip(entry) + "\" has none");
    }
    const bool exclude = !list.empty() && list[0] == '^';
    if (exclude) list.erase(0, 1);
    const auto names = split_nonempty(list, ',');
    if (names.empty()) throw ConfigError(where + ": " + var + " entry \"" + clip(entry) + "\" names nothing");
    std::vector<bool> listed(elems.size(), false);
    for (const auto& n : names) {
      std::size_t e = 0;
      while (e < elems.size() && lower(n) != lower(elems[e].name)) ++e;
      if (e == elems.size()) throw ConfigError(where + ": " + var + " names \"" + clip(n) + "\", which NCCL does not know (expected " + known + ")");
      listed[e] = true;
    }
    bool found = false;
    for (std::size_t f = 0; f < std::size(kFunctions); ++f) {
      if (prefix && *prefix != kFunctions[f].name) continue;
      found = true;
      for (std::size_t e = 0; e < elems.size(); ++e) enabled[f][e] = exclude ? !listed[e] : listed[e];
    }
    if (!found) {
      throw ConfigError(where + ": " + var + " function \"" + clip(entry.substr(0, colon)) +
                        "\" is not one of NCCL's (Broadcast, Reduce, AllGather, ReduceScatter, AllReduce)");
    }
  }
  return enabled;
}

long long parse_integer(const std::string& var, const std::string& value, const std::string& where) {
  long long v = 0;
  const auto* end = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(value.data(), end, v);
  if (ec != std::errc() || ptr != end) throw ConfigError(where + ": " + var + "=\"" + clip(value) + "\" is not an integer");
  return v;
}

}  // namespace

NcclEnv::NcclEnv() {
  for (auto& row : algorithm) row.fill(true);
  for (auto& row : protocol) row.fill(true);
}

bool NcclEnv::allows(Collective c, Algorithm a, Protocol p, double size_bytes) const {
  const auto ci = static_cast<std::size_t>(c);
  if (!protocol[ci][static_cast<std::size_t>(p)]) return false;
  if (a == Algorithm::kHierarchical) return true;  // not NCCL's
  if (!algorithm[ci][static_cast<std::size_t>(a)]) return false;
  return a != Algorithm::kTree || size_bytes <= tree_threshold_bytes;
}

NcclEnv parse_nccl_env(std::string_view assignments, const std::string& where) {
  static const std::vector<Element> kAlgorithms{{"Tree", static_cast<int>(Algorithm::kTree)},     {"Ring", static_cast<int>(Algorithm::kRing)},
                                                {"CollNetDirect", -1},                             {"CollNetChain", -1},
                                                {"NVLS", static_cast<int>(Algorithm::kNvls)},     {"NVLSTree", static_cast<int>(Algorithm::kNvlsTree)},
                                                {"PAT", -1}};
  static const std::vector<Element> kProtocols{{"LL", static_cast<int>(Protocol::kLL)},
                                               {"LL128", static_cast<int>(Protocol::kLL128)},
                                               {"Simple", static_cast<int>(Protocol::kSimple)}};
  NcclEnv env;
  std::map<std::string, bool> seen;
  std::istringstream in{std::string(assignments)};
  std::vector<std::string> given;
  for (std::string item; in >> item;) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) throw ConfigError(where + ": \"" + clip(item) + "\" is not NAME=VALUE");
    const std::string var = item.substr(0, eq), value = item.substr(eq + 1);
    if (seen[var]) throw ConfigError(where + ": " + clip(var) + " given twice");
    seen[var] = true;
    if (value.empty()) throw ConfigError(where + ": " + clip(var) + " has no value");
    if (var == "NCCL_ALGO" || var == "NCCL_PROTO") {
      const bool algo = var == "NCCL_ALGO";
      const auto enabled = parse_list(var, value, algo ? kAlgorithms : kProtocols, where);
      const auto& elems = algo ? kAlgorithms : kProtocols;
      for (std::size_t f = 0; f < std::size(kFunctions); ++f) {
        if (!kFunctions[f].collective) continue;
        const auto ci = static_cast<std::size_t>(*kFunctions[f].collective);
        for (std::size_t e = 0; e < elems.size(); ++e) {
          if (elems[e].index < 0) continue;
          (algo ? env.algorithm[ci][static_cast<std::size_t>(elems[e].index)] : env.protocol[ci][static_cast<std::size_t>(elems[e].index)]) = enabled[f][e];
        }
      }
    } else if (var == "NCCL_NVLS_ENABLE") {
      const long long v = parse_integer(var, value, where);
      if (v < 0 || v > 2) throw ConfigError(where + ": NCCL_NVLS_ENABLE=" + clip(value) + " (expected 0, 1 or 2)");
      if (v == 0) {
        for (auto& row : env.algorithm) row[static_cast<std::size_t>(Algorithm::kNvls)] = row[static_cast<std::size_t>(Algorithm::kNvlsTree)] = false;
      }
    } else if (var == "NCCL_TREE_THRESHOLD") {
      const long long v = parse_integer(var, value, where);
      if (v < 0) throw ConfigError(where + ": NCCL_TREE_THRESHOLD=" + clip(value) + " (expected a byte count >= 0)");
      env.tree_threshold_bytes = static_cast<double>(v);
    } else {
      throw ConfigError(where + ": " + clip(var) + " is not a variable the model follows (NCCL_ALGO, NCCL_PROTO, NCCL_NVLS_ENABLE, NCCL_TREE_THRESHOLD)");
    }
    given.push_back(item);
  }
  for (const auto& g : given) env.text += (env.text.empty() ? "" : " ") + g;
  return env;
}

}  // namespace lgreco::net
