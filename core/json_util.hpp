#pragma once
/// JSON helpers: strict reading (unknown keys are errors, messages name the file and the path of
/// the field) and atomic writing. Every JSON document lgreco reads goes through parse_json_text
/// (read_json_file reads the file, then calls it) and every one it writes through write_json_file.
///
/// Limits of what is read (each refusal is a ConfigError naming the file and the value):
/// - nesting depth ≤ kMaxJsonDepth: checked on the text before parsing, so no deeper tree is ever
///   built (copying, dumping or destroying a tree recurses once per level);
/// - file size ≤ kMaxJsonFileBytes, and only regular files or pipes (not devices such as /dev/zero);
/// - numbers within the range of a double (1e400 is refused, not read as infinity);
/// - an HDF5 file or another binary file (a NUL byte) is named as such, not parsed.
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/atomic_file.hpp"
#include "core/error.hpp"

namespace lgreco {

using Json = nlohmann::json;

/// Deepest nesting of arrays and objects that lgreco reads. Every lgreco document is below 10; 512
/// leaves room for any real document and keeps every recursive walk of the tree far from the stack's end.
inline constexpr int kMaxJsonDepth = 512;
/// Largest JSON file lgreco reads (1 GiB; the biggest real one, a 1M-candidate tables file, is
/// 157 MB, and the parsed tree needs several times the text's size in memory).
inline constexpr std::uint64_t kMaxJsonFileBytes = std::uint64_t{1} << 30;

/// Reads a whole input file as bytes. Refuses (ConfigError naming the file) a missing file, a
/// folder, a device (/dev/zero) and anything larger than `max_bytes`; pipes are read up to the limit.
std::string read_text_file(const std::filesystem::path& path, std::uint64_t max_bytes = kMaxJsonFileBytes);
/// Parses a JSON file; errors name the file and the parser's position.
Json read_json_file(const std::filesystem::path& path);
/// Parses JSON text; `origin` names it in errors. Checks the limits above before parsing.
Json parse_json_text(const std::string& text, const std::string& origin);
/// Depth of the deepest array or object in `text` (0 for a scalar), counted on the text without
/// parsing; stops counting at `stop_at` and returns the byte offset where that depth was reached.
std::pair<int, std::size_t> json_nesting_depth(const std::string& text, int stop_at = kMaxJsonDepth + 1);
/// `v` as compact JSON for a message: at most `max_chars` characters (then "..."), invalid UTF-8 replaced.
std::string json_snippet(const Json& v, std::size_t max_chars = 60);
/// Writes pretty JSON (2-space indent, trailing newline) atomically.
void write_json_file(const std::filesystem::path& path, const Json& doc, Overwrite policy);

/// Reads one JSON object field by field and rejects keys it was not asked for.
/// `where` is the path shown in messages, e.g. "schedule.json: phases[2]".
class JsonObject {
 public:
  JsonObject(const Json& j, std::string where);

  /// Required field of type T; error names the field, the value and the expected type.
  template <class T>
  T get(const std::string& key) {
    return convert<T>(require(key), key);
  }
  /// Optional field; std::nullopt when absent or null.
  template <class T>
  std::optional<T> get_optional(const std::string& key) {
    seen_.insert(key);
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return std::nullopt;
    return convert<T>(*it, key);
  }
  /// Optional field with a default.
  template <class T>
  T get_or(const std::string& key, T fallback) {
    auto v = get_optional<T>(key);
    return v ? *v : fallback;
  }
  /// Required field as raw JSON (for nested objects and arrays).
  const Json& require(const std::string& key);
  /// Optional raw field (nullptr when absent).
  const Json* find(const std::string& key);
  /// True when the key is present (does not mark it as read).
  bool has(const std::string& key) const { return j_.contains(key); }
  /// Marks keys as known without reading them.
  void allow(std::initializer_list<const char*> keys);
  /// Throws ConfigError naming the first key that was never read or allowed.
  void finish() const;
  /// Path of a child, for nested readers: where() + "." + key.
  std::string child(const std::string& key) const { return where_ + "." + key; }
  const std::string& where() const { return where_; }

 private:
  // Why `v` is not a T (empty when it is one); integers are range-checked, also inside arrays.
  template <class T>
  static std::string mismatch(const Json& v) {
    if constexpr (std::is_same_v<T, bool>) {
      return v.is_boolean() ? "" : "not a boolean";
    } else if constexpr (std::is_integral_v<T>) {
      if (!v.is_number_integer()) return "not an integer";
      using Lim = std::numeric_limits<T>;
      const bool fits = v.is_number_unsigned() ? std::in_range<T>(v.get<std::uint64_t>())
                                               : std::in_range<T>(v.get<std::int64_t>());
      if (fits) return "";
      return "out of range: expected an integer from " + std::to_string(Lim::min()) + " to " + std::to_string(Lim::max());
    } else if constexpr (std::is_floating_point_v<T>) {
      return v.is_number() ? "" : "not a number";
    } else if constexpr (std::is_same_v<T, std::string>) {
      return v.is_string() ? "" : "not a string";
    } else if constexpr (requires { typename T::value_type; } && !std::is_same_v<T, Json>) {
      if (!v.is_array()) return "not an array";
      for (std::size_t i = 0; i < v.size(); ++i) {
        const std::string e = mismatch<typename T::value_type>(v[i]);
        if (!e.empty()) return "element " + std::to_string(i) + " " + json_snippet(v[i]) + ": " + e;
      }
      return "";
    } else {
      return "";
    }
  }

  template <class T>
  T convert(const Json& v, const std::string& key) const {
    std::string why = mismatch<T>(v);
    if (why.empty()) {
      try {
        return v.get<T>();
      } catch (const std::exception& e) {
        why = e.what();
      }
    }
    throw ConfigError(where_ + "." + key + ": invalid value " + json_snippet(v) + " (" + why + ")");
  }

  const Json& j_;
  std::string where_;
  std::set<std::string> seen_;
};

}  // namespace lgreco
