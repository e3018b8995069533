#include "planner/tables.hpp"

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <string_view>

#include "core/error.hpp"
#include "core/int_math.hpp"
#include "kernels/method_json.hpp"
#include "kernels/wire.hpp"

namespace lgreco::planner {
namespace {

// Replaces bare NaN / Infinity / -Infinity tokens outside strings with marker strings, so that a
// table written by Python's json module parses and the reader can say which field is not finite.
// Copies runs of ordinary characters at once (tables of large models are hundreds of MB).
std::string quote_non_finite(const std::string& text) {
  static constexpr std::string_view kTokens[] = {"-Infinity", "Infinity", "NaN"};
  const std::string_view src(text);
  std::string out;
  out.reserve(text.size() + 64);
  bool in_string = false;
  std::size_t copied = 0;  // text[copied, i) is still to be appended
  for (std::size_t i = 0; i < src.size(); ++i) {
    const char c = src[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
      continue;
    }
    if (c != '-' && c != 'I' && c != 'N') continue;
    for (std::string_view tok : kTokens) {
      if (src.substr(i, tok.size()) == tok) {
        out.append(src.substr(copied, i - copied));
        out += '"';
        out.append(tok);
        out += '"';
        i += tok.size() - 1;
        copied = i + 1;
        break;
      }
    }
  }
  out.append(src.substr(copied));
  return out;
}

// `what` builds the candidate's description, only when there is an error to report.
template <class What>
double finite_number(JsonObject& o, const std::string& key, const What& what) {
  const Json& v = o.require(key);
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "NaN" || s == "Infinity" || s == "-Infinity") {
      throw InputError(what() + ": " + key + " is " + s + "; expected a finite number >= 0");
    }
  }
  if (!v.is_number()) throw ConfigError(what() + ": " + key + " = " + v.dump() + "; expected a number");
  return v.get<double>();
}

LayerTable read_layer(const Json& j, const std::string& where, const std::string& window_desc) {
  JsonObject o(j, where);
  LayerTable l;
  l.name = o.get<std::string>("name");
  l.shape = o.get<std::vector<std::int64_t>>("shape");
  l.numel = o.get<std::int64_t>("numel");
  if (const auto numel = shape_numel(l.shape); !numel || *numel != l.numel) {
    throw ConfigError(where + ": numel " + std::to_string(l.numel) + " is not the product of shape " + Json(l.shape).dump());
  }
  l.kind = o.get<std::string>("kind");
  l.bucket = o.get<int>("bucket");
  l.backward_order = o.get<int>("backward_order");
  if (const Json* c = o.find("compute_time_s"); c && !c->is_null()) {
    if (!c->is_number() || !std::isfinite(c->get<double>()) || c->get<double>() < 0) {
      throw InputError(where + ": compute_time_s = " + c->dump() + "; expected a finite number >= 0");
    }
    l.compute_time_s = c->get<double>();
  }
  l.default_index = o.get<int>("default");
  const Json& cands = o.require("candidates");
  if (!cands.is_array()) throw ConfigError(where + ".candidates: expected an array");
  for (std::size_t k = 0; k < cands.size(); ++k) {
    const std::string cw = where + ".candidates[" + std::to_string(k) + "]";
    JsonObject c(cands[k], cw);
    Candidate cand;
    Json method = Json::object();
    method["method"] = c.get<std::string>("method");
    if (const Json* params = c.find("params")) method["params"] = *params;
    cand.spec = kernels::method_from_json(method, cw);
    const auto what = [&] {
      return window_desc + ", layer '" + l.name + "', candidate " + std::to_string(k) + " (" + kernels::describe(cand.spec) + ")";
    };
    cand.error = finite_number(c, "error", what);
    // Bytes and collective are the registry's; a file may state them (validate_tables checks them).
    const Candidate ref = make_candidate(cand.spec, l.shape, cand.error);
    cand.bytes = c.has("bytes") ? finite_number(c, "bytes", what) : ref.bytes;
    cand.collective = ref.collective;
    if (const Json* coll = c.find("collective")) {
      if (!coll->is_string()) throw ConfigError(cw + ".collective: expected a string, got " + coll->dump());
      cand.collective = parse_collective(coll->get<std::string>(), cw + ".collective");
    }
    if (const Json* kt = c.find("kernel_time_s"); kt && !kt->is_null()) {
      if (!kt->is_number()) throw ConfigError(cw + ": kernel_time_s = " + kt->dump() + "; expected a number");
      cand.kernel_time_s = kt->get<double>();
    }
    c.finish();
    l.candidates.push_back(std::move(cand));
  }
  o.finish();
  return l;
}

}  // namespace

Candidate make_candidate(const kernels::MethodSpec& spec, std::span<const std::int64_t> shape, double error) {
  Candidate c;
  c.spec = spec;
  c.error = error;
  const kernels::WireSize w = kernels::wire_size(spec, shape);
  c.bytes = static_cast<double>(w.bytes);
  c.collective = w.collective;
  return c;
}

Tables tables_from_json(const Json& doc, const std::string& origin) {
  JsonObject o(doc, origin);
  const int version = o.get<int>("schema_version");
  if (version != 1) throw ConfigError(origin + ": schema_version " + std::to_string(version) + " is not supported (expected 1)");
  const std::string kind = o.get<std::string>("kind");
  if (kind != "lgreco-tables") throw ConfigError(origin + ": kind '" + kind + "'; expected 'lgreco-tables'");
  Tables t;
  t.model = o.get<std::string>("model");
  t.world_size = o.get<int>("world_size");
  t.error_mode = o.get<std::string>("error_mode");
  t.acc_steps = o.get<int>("acc_steps");
  if (const Json* p = o.find("provenance")) t.provenance = *p;
  const Json& windows = o.require("windows");
  if (!windows.is_array()) throw ConfigError(origin + ".windows: expected an array");
  for (std::size_t w = 0; w < windows.size(); ++w) {
    const std::string where = origin + ": windows[" + std::to_string(w) + "]";
    JsonObject wo(windows[w], where);
    Window win;
    win.start_step = wo.get<std::int64_t>("start_step");
    win.end_step = wo.get<std::int64_t>("end_step");
    const Json& layers = wo.require("layers");
    if (!layers.is_array()) throw ConfigError(where + ".layers: expected an array");
    const std::string desc = origin + ": window " + std::to_string(w) + " (steps " + std::to_string(win.start_step) + "-" +
                             std::to_string(win.end_step) + ")";
    for (std::size_t i = 0; i < layers.size(); ++i) {
      win.layers.push_back(read_layer(layers[i], where + ".layers[" + std::to_string(i) + "]", desc));
    }
    wo.finish();
    t.windows.push_back(std::move(win));
  }
  o.finish();
  validate_tables(t, origin);
  return t;
}

Tables tables_from_text(const std::string& text, const std::string& origin) {
  return tables_from_json(parse_json_text(quote_non_finite(text), origin), origin);
}

Tables read_tables_json(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path.string() + ": cannot open tables file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return tables_from_text(ss.str(), path.string());
}

void validate_tables(const Tables& t, const std::string& origin) {
  if (t.world_size < 1) throw ConfigError(origin + ": world_size = " + std::to_string(t.world_size) + "; expected >= 1");
  if (t.error_mode != "power" && t.error_mode != "exact" && t.error_mode != "trajectory") {
    throw ConfigError(origin + ": error_mode '" + t.error_mode + "'; expected power, exact or trajectory");
  }
  if (t.acc_steps < 1) throw ConfigError(origin + ": acc_steps = " + std::to_string(t.acc_steps) + "; expected >= 1");
  if (t.windows.empty()) throw ConfigError(origin + ": no windows");
  for (std::size_t w = 0; w < t.windows.size(); ++w) {
    const Window& win = t.windows[w];
    const std::string wd = origin + ": window " + std::to_string(w);
    if (win.start_step < 0 || win.end_step <= win.start_step) {
      throw ConfigError(wd + ": steps [" + std::to_string(win.start_step) + ", " + std::to_string(win.end_step) + ") are empty or negative");
    }
    if (w > 0 && win.start_step < t.windows[w - 1].end_step) {
      throw ConfigError(wd + ": starts at step " + std::to_string(win.start_step) + " before window " + std::to_string(w - 1) +
                        " ends (" + std::to_string(t.windows[w - 1].end_step) + "); windows must be ordered and not overlap");
    }
    if (win.layers.empty()) throw ConfigError(wd + ": no layers");
    std::set<std::string> names;
    for (std::size_t i = 0; i < win.layers.size(); ++i) {
      const LayerTable& l = win.layers[i];
      const std::string ld = wd + ", layer '" + l.name + "'";
      if (!names.insert(l.name).second) throw ConfigError(ld + ": listed twice");
      if (w > 0 && (i >= t.windows[0].layers.size() || t.windows[0].layers[i].name != l.name)) {
        throw ConfigError(ld + ": windows must list the same layers in the same order as window 0");
      }
      if (shape_numel(l.shape) != l.numel) {
        throw ConfigError(ld + ": numel " + std::to_string(l.numel) + " is not the product of its shape " + Json(l.shape).dump());
      }
      if (w > 0 && t.windows[0].layers[i].shape != l.shape) {
        throw ConfigError(ld + ": shape " + Json(l.shape).dump() + " differs from window 0's " + Json(t.windows[0].layers[i].shape).dump());
      }
      if (l.kind != "weight" && l.kind != "bias" && l.kind != "norm" && l.kind != "embedding") {
        throw ConfigError(ld + ": kind '" + l.kind + "'; expected weight, bias, norm or embedding");
      }
      if (l.bucket < 0) throw ConfigError(ld + ": bucket " + std::to_string(l.bucket) + " is negative");
      if (l.candidates.empty()) throw ConfigError(ld + ": no candidates (list at least the uncompressed one)");
      if (l.default_index < 0 || static_cast<std::size_t>(l.default_index) >= l.candidates.size()) {
        throw ConfigError(ld + ": default " + std::to_string(l.default_index) + " is not a candidate index (0.." +
                          std::to_string(l.candidates.size() - 1) + ")");
      }
      for (std::size_t k = 0; k < l.candidates.size(); ++k) {
        const Candidate& c = l.candidates[k];
        const auto cd = [&] {
          return origin + ": window " + std::to_string(w) + ", layer '" + l.name + "', candidate " + std::to_string(k) +
                 " (" + kernels::describe(c.spec) + ")";
        };
        if (!std::isfinite(c.error)) {
          const std::string v = std::isnan(c.error) ? "NaN" : (c.error > 0 ? "Infinity" : "-Infinity");
          throw InputError(cd() + ": error is " + v + " (not finite); expected a finite number >= 0");
        }
        if (c.error < 0) throw InputError(cd() + ": error " + Json(c.error).dump() + " is negative");
        if (!std::isfinite(c.bytes) || c.bytes < 0) throw InputError(cd() + ": bytes " + std::to_string(c.bytes) + "; expected a finite number >= 0");
        const Candidate ref = make_candidate(c.spec, l.shape, c.error);
        if (c.bytes != ref.bytes)
          throw InputError(cd() + ": bytes " + Json(c.bytes).dump() + " disagree with the method's wire size " + Json(ref.bytes).dump() +
                           " for shape " + Json(l.shape).dump() + " (kernels/wire.hpp; a file may omit bytes)");
        if (c.collective != ref.collective)
          throw InputError(cd() + ": collective " + to_string(c.collective) + " is not the method's (" + to_string(ref.collective) + ")");
        if (c.kernel_time_s && (!std::isfinite(*c.kernel_time_s) || *c.kernel_time_s < 0)) {
          throw InputError(cd() + ": kernel_time_s " + std::to_string(*c.kernel_time_s) + "; expected a finite number >= 0");
        }
      }
    }
  }
}

Json candidate_to_json(const Candidate& c) {
  Json cj = kernels::method_to_json(c.spec);
  cj["error"] = c.error;
  cj["bytes"] = c.bytes;
  cj["collective"] = to_string(c.collective);
  if (c.kernel_time_s) cj["kernel_time_s"] = *c.kernel_time_s;
  return cj;
}

Json tables_to_json(const Tables& t) {
  Json windows = Json::array();
  for (const Window& w : t.windows) {
    Json layers = Json::array();
    for (const LayerTable& l : w.layers) {
      Json cands = Json::array();
      for (const Candidate& c : l.candidates) cands.push_back(candidate_to_json(c));
      Json lj = {{"name", l.name}, {"shape", l.shape}, {"numel", l.numel}, {"kind", l.kind}, {"bucket", l.bucket},
                 {"backward_order", l.backward_order}, {"default", l.default_index}, {"candidates", std::move(cands)}};
      if (l.compute_time_s) lj["compute_time_s"] = *l.compute_time_s;
      layers.push_back(std::move(lj));
    }
    windows.push_back({{"start_step", w.start_step}, {"end_step", w.end_step}, {"layers", std::move(layers)}});
  }
  return {{"schema_version", 1}, {"kind", "lgreco-tables"}, {"model", t.model}, {"world_size", t.world_size},
          {"error_mode", t.error_mode}, {"acc_steps", t.acc_steps}, {"windows", std::move(windows)}, {"provenance", t.provenance}};
}

}  // namespace lgreco::planner
