#include "core/json_util.hpp"

#include <fstream>
#include <sstream>

namespace lgreco {

Json parse_json_text(const std::string& text, const std::string& origin) {
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw ConfigError(origin + ": malformed JSON: " + e.what());
  }
}

Json read_json_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path.string() + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_json_text(ss.str(), path.string());
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
      throw ConfigError(where_ + ": unknown key '" + it.key() + "' (known: " + known + ")");
    }
  }
}

}  // namespace lgreco
