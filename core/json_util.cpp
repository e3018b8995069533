#include "core/json_util.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/text.hpp"
#include "core/units.hpp"

namespace lgreco {
namespace {

// nlohmann's messages start with "[json.exception.parse_error.101] "; the id means nothing to a user.
std::string without_exception_id(const std::string& what) {
  if (what.rfind("[json.exception.", 0) == 0) {
    const auto end = what.find("] ");
    if (end != std::string::npos) return what.substr(end + 2);
  }
  return what;
}

// Line (1-based) of byte `offset`.
std::size_t line_of(const std::string& text, std::size_t offset) {
  return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(std::min(offset, text.size())), '\n'));
}

// HDF5's signature, at offset 0 or after a user block (512, 1024, 2048, ... bytes).
bool has_hdf5_signature(const std::string& text) {
  static constexpr char kSig[] = "\x89HDF\r\n\x1a\n";
  for (std::size_t at = 0; at + 8 <= text.size(); at = at == 0 ? 512 : 2 * at) {
    if (text.compare(at, 8, kSig, 8) == 0) return true;
  }
  return false;
}

}  // namespace

std::pair<int, std::size_t> json_nesting_depth(const std::string& text, int stop_at) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;  // the escaped character cannot end the string
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest >= stop_at) return {deepest, i};
    } else if (c == ']' || c == '}') {
      --depth;  // unbalanced text is the parser's to report
    }
  }
  return {deepest, text.size()};
}

std::string json_snippet(const Json& v, std::size_t max_chars) {
  std::string s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > max_chars) s = s.substr(0, max_chars) + "...";
  return printable(s);
}

std::string read_text_file(const std::filesystem::path& path, std::uint64_t max_bytes) {
  const std::string name = printable(path.string());
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw ConfigError(name + ": cannot open (" + std::strerror(errno) + ")");
  }
  if (S_ISDIR(st.st_mode)) throw ConfigError(name + ": is a directory, expected a file");
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode)) {
    throw ConfigError(name + ": is not a regular file (a device or socket), expected a file");
  }
  const auto too_big = [&](std::uint64_t size) {
    return ConfigError(name + ": " + units::format_bytes(static_cast<double>(size)) + " is larger than the " + units::format_bytes(static_cast<double>(max_bytes)) +
                       " lgreco reads from such a file");
  };
  if (S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    throw too_big(static_cast<std::uint64_t>(st.st_size));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(name + ": cannot open (" + std::strerror(errno) + ")");
  std::string text;
  if (S_ISREG(st.st_mode)) text.reserve(static_cast<std::size_t>(st.st_size));
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(in.gcount()));
    if (text.size() > max_bytes) throw too_big(text.size());  // a growing file or a pipe
  }
  if (in.bad()) throw ConfigError(name + ": read error");
  return text;
}

Json parse_json_text(const std::string& text, const std::string& origin) {
  const std::string name = printable(origin);
  if (has_hdf5_signature(text)) throw ConfigError(name + " is an HDF5 file, not JSON");
  if (const auto nul = text.find('\0'); nul != std::string::npos) {
    throw ConfigError(name + " is a binary file, not JSON (byte 0x00 at offset " + std::to_string(nul) + ")");
  }
  const auto [depth, at] = json_nesting_depth(text);
  if (depth > kMaxJsonDepth) {
    throw ConfigError(name + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels (line " +
                      std::to_string(line_of(text, at)) + "); lgreco reads at most " + std::to_string(kMaxJsonDepth));
  }
  try {
    return Json::parse(text);
  } catch (const Json::out_of_range& e) {
    // 406: a number beyond the range of a double (1e400).
    throw ConfigError(name + ": malformed JSON: " + printable(without_exception_id(e.what())) +
                      " (beyond the range of a double)");
  } catch (const Json::exception& e) {
    throw ConfigError(name + ": malformed JSON: " + printable(without_exception_id(e.what())));
  }
}

Json read_json_file(const std::filesystem::path& path) {
  return parse_json_text(read_text_file(path), path.string());
}

void write_json_file(const std::filesystem::path& path, const Json& doc, Overwrite policy) {
  write_file_atomic(path, doc.dump(2) + "\n", policy);
}

JsonObject::JsonObject(const Json& j, std::string where) : j_(j), where_(std::move(where)) {
  if (!j_.is_object()) throw ConfigError(where_ + ": expected a JSON object, got " + std::string(j_.type_name()));
}

const Json& JsonObject::require(const std::string& key) {
  seen_.insert(key);
  auto it = j_.find(key);
  if (it == j_.end()) throw ConfigError(where_ + ": missing required field '" + key + "'");
  return *it;
}

const Json* JsonObject::find(const std::string& key) {
  seen_.insert(key);
  auto it = j_.find(key);
  return it == j_.end() ? nullptr : &*it;
}

void JsonObject::allow(std::initializer_list<const char*> keys) {
  for (const char* k : keys) seen_.insert(k);
}

void JsonObject::finish() const {
  for (auto it = j_.begin(); it != j_.end(); ++it) {
    if (!seen_.count(it.key())) {
      std::string known;
      for (const auto& k : seen_) known += (known.empty() ? "" : ", ") + k;
      throw ConfigError(where_ + ": unknown key " + quote_name(it.key()) + " (known: " + known + ")");
    }
  }
}

}  // namespace lgreco
