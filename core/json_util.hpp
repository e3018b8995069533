#pragma once
/// JSON helpers: strict reading (unknown keys are errors, messages name the file and the path of
/// the field) and atomic writing. Every JSON document lgreco writes goes through write_json_file.
#include <filesystem>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "core/atomic_file.hpp"
#include "core/error.hpp"

namespace lgreco {

using Json = nlohmann::json;

/// Parses a JSON file; errors name the file and the parser's position.
Json read_json_file(const std::filesystem::path& path);
/// Parses JSON text; `origin` names it in errors.
Json parse_json_text(const std::string& text, const std::string& origin);
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
  template <class T>
  T convert(const Json& v, const std::string& key) const {
    try {
      if constexpr (std::is_same_v<T, double>) {
        if (!v.is_number()) throw std::runtime_error("not a number");
      } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        if (!v.is_number_integer()) throw std::runtime_error("not an integer");
      } else if constexpr (std::is_same_v<T, bool>) {
        if (!v.is_boolean()) throw std::runtime_error("not a boolean");
      } else if constexpr (std::is_same_v<T, std::string>) {
        if (!v.is_string()) throw std::runtime_error("not a string");
      }
      return v.get<T>();
    } catch (const std::exception& e) {
      throw ConfigError(where_ + "." + key + ": invalid value " + v.dump() + " (" + e.what() + ")");
    }
  }

  const Json& j_;
  std::string where_;
  std::set<std::string> seen_;
};

}  // namespace lgreco
