// Candidate tables in HDF5 (docs/tables-format.md, "HDF5 form"): the same document as the JSON
// form, stored column-wise, for tables of large models (millions of candidates). Settings (method
// + parameters) are stored once and referenced by index; every window is one group of 1-D arrays.
#include <hdf5.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <unordered_map>

#include "core/error.hpp"
#include "core/fault_context.hpp"
#include "core/text.hpp"
#include "planner/tables.hpp"
#include "kernels/method_json.hpp"
#include "traces/hdf5.hpp"

namespace lgreco::planner {
namespace h5 = lgreco::traces::h5;
namespace {

constexpr std::size_t kAny = std::numeric_limits<std::size_t>::max();
constexpr std::uint8_t kAllreduceCode = 0, kAllgatherCode = 1;

const std::set<std::string> kRootAttrs = {"schema_version", "kind", "model", "world_size", "error_mode", "acc_steps",
                                          "provenance"};
const std::set<std::string> kWindowArrays = {
    "layer_name",       "layer_kind",          "layer_ndim",           "layer_shape",
    "layer_numel",      "layer_bucket",        "layer_backward_order", "layer_compute_time_s",
    "layer_default",    "layer_candidates",    "candidate_setting",    "candidate_error",
    "candidate_bytes",  "candidate_collective", "candidate_kernel_time_s"};

template <class T>
hid_t memory_type() {
  if constexpr (std::is_same_v<T, double>) return H5T_NATIVE_DOUBLE;
  else if constexpr (std::is_same_v<T, std::int64_t>) return H5T_NATIVE_INT64;
  else return H5T_NATIVE_UINT8;
}
template <class T>
hid_t file_type() {
  if constexpr (std::is_same_v<T, double>) return H5T_IEEE_F64LE;
  else if constexpr (std::is_same_v<T, std::int64_t>) return H5T_STD_I64LE;
  else return H5T_STD_U8LE;
}

// ---- writing ------------------------------------------------------------------------------------

h5::Handle string_type(const std::string& ctx) {
  h5::Handle t = h5::checked(H5Tcopy(H5T_C_S1), ctx, "cannot create string type");
  h5::check(H5Tset_size(t.get(), H5T_VARIABLE), ctx, "cannot create string type");
  h5::check(H5Tset_cset(t.get(), H5T_CSET_UTF8), ctx, "cannot create string type");
  return t;
}

// Large arrays are chunked and compressed (shuffle + deflate); small ones are contiguous.
h5::Handle create_dataset(hid_t loc, const std::string& name, hid_t type, std::size_t n, const std::string& ctx) {
  const hsize_t dims[1] = {static_cast<hsize_t>(n)};
  h5::Handle space = h5::checked(H5Screate_simple(1, dims, nullptr), ctx, "cannot create dataspace");
  h5::Handle dcpl = h5::checked(H5Pcreate(H5P_DATASET_CREATE), ctx, "cannot create property list");
  if (n >= 4096) {
    const hsize_t chunk[1] = {static_cast<hsize_t>(std::min<std::size_t>(n, 1 << 16))};
    h5::check(H5Pset_chunk(dcpl.get(), 1, chunk), ctx, "cannot set chunking");
    h5::check(H5Pset_shuffle(dcpl.get()), ctx, "cannot set the shuffle filter");
    h5::check(H5Pset_deflate(dcpl.get(), 4), ctx, "cannot set deflate");
  }
  return h5::checked(H5Dcreate2(loc, name.c_str(), type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT), ctx,
                     "cannot create dataset '" + name + "'");
}

template <class T>
void write_array(hid_t loc, const std::string& name, const std::vector<T>& v, const std::string& ctx) {
  h5::Handle d = create_dataset(loc, name, file_type<T>(), v.size(), ctx);
  if (!v.empty())
    h5::check(H5Dwrite(d.get(), memory_type<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), ctx,
              "cannot write dataset '" + name + "'");
}

void write_strings(hid_t loc, const std::string& name, const std::vector<std::string>& v, const std::string& ctx) {
  h5::Handle type = string_type(ctx);
  h5::Handle d = create_dataset(loc, name, type.get(), v.size(), ctx);
  std::vector<const char*> ptr(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) ptr[i] = v[i].c_str();
  if (!v.empty())
    h5::check(H5Dwrite(d.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, ptr.data()), ctx,
              "cannot write dataset '" + name + "'");
}

h5::Handle create_group(hid_t loc, const std::string& name, const std::string& ctx) {
  return h5::checked(H5Gcreate2(loc, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), ctx,
                     "cannot create group '" + name + "'");
}

// ---- reading ------------------------------------------------------------------------------------

// Names by index, through an HDF5 call that returns a name's length when given no buffer.
template <class NameAt>
std::vector<std::string> names_by_index(hsize_t count, const NameAt& name_at, const std::string& where, const char* what) {
  std::vector<std::string> names;
  for (hsize_t i = 0; i < count; ++i) {
    const ssize_t len = name_at(i, nullptr, 0);
    if (len < 0) throw TraceError(where + ": cannot read " + what + " name");
    std::string name(static_cast<std::size_t>(len), '\0');
    name_at(i, name.data(), name.size() + 1);
    names.push_back(name);
  }
  return names;
}

// Names of the links in a group, in index order.
std::vector<std::string> member_names(hid_t group, const std::string& where) {
  H5G_info_t info;
  h5::check(H5Gget_info(group, &info), where, "cannot list the group");
  return names_by_index(
      info.nlinks,
      [&](hsize_t i, char* buf, std::size_t size) {
        return H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, buf, size, H5P_DEFAULT);
      },
      where, "a member's");
}

std::vector<std::string> attribute_names(hid_t obj, const std::string& where) {
  H5O_info_t info;
  h5::check(H5Oget_info2(obj, &info, H5O_INFO_NUM_ATTRS), where, "cannot read the object's attributes");
  return names_by_index(
      info.num_attrs,
      [&](hsize_t i, char* buf, std::size_t size) {
        return H5Aget_name_by_idx(obj, ".", H5_INDEX_NAME, H5_ITER_INC, i, buf, size, H5P_DEFAULT);
      },
      where, "an attribute's");
}

void reject_unknown(const std::vector<std::string>& names, const std::set<std::string>& known, const std::string& where,
                    const char* what) {
  for (const auto& n : names) {
    if (known.count(n)) continue;
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    throw ConfigError(where + ": unknown " + what + " '" + printable(n) + "' (known: " + list + ")");
  }
}

h5::Handle open_dataset(hid_t loc, const std::string& name, std::size_t expect, const std::string& where,
                        std::size_t& n_out) {
  if (H5Lexists(loc, name.c_str(), H5P_DEFAULT) <= 0) throw ConfigError(where + ": missing dataset '" + name + "'");
  h5::Handle d = h5::checked(H5Dopen2(loc, name.c_str(), H5P_DEFAULT), where, "cannot open dataset '" + name + "'");
  const std::vector<std::int64_t> dims = h5::dataset_dims(d.get(), where + "/" + name);
  if (dims.size() != 1)
    throw ConfigError(where + "/" + name + ": dims " + h5::format_dims(dims) + "; expected a 1-D array");
  n_out = static_cast<std::size_t>(dims[0]);
  if (expect != kAny && n_out != expect)
    throw ConfigError(where + "/" + name + ": " + std::to_string(n_out) + " elements; expected " + std::to_string(expect));
  return d;
}

template <class T>
std::vector<T> read_array(hid_t loc, const std::string& name, std::size_t expect, const std::string& where) {
  std::size_t n = 0;
  h5::Handle d = open_dataset(loc, name, expect, where, n);
  h5::Handle type = h5::checked(H5Dget_type(d.get()), where, "cannot read the type of '" + name + "'");
  const H5T_class_t c = H5Tget_class(type.get());
  const bool ok = std::is_same_v<T, double> ? (c == H5T_FLOAT || c == H5T_INTEGER) : c == H5T_INTEGER;
  if (!ok)
    throw ConfigError(where + "/" + name + ": stored as " + (c == H5T_STRING ? "strings" : "a non-numeric type") +
                      "; expected " + (std::is_same_v<T, double> ? "numbers" : "integers"));
  std::vector<T> v(n);
  if (n > 0)
    h5::check(H5Dread(d.get(), memory_type<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), where,
              "cannot read dataset '" + name + "' (truncated or corrupt file, or values out of range)");
  return v;
}

std::vector<std::string> read_strings(hid_t loc, const std::string& name, std::size_t expect, const std::string& where) {
  std::size_t n = 0;
  h5::Handle d = open_dataset(loc, name, expect, where, n);
  h5::Handle ftype = h5::checked(H5Dget_type(d.get()), where, "cannot read the type of '" + name + "'");
  if (H5Tget_class(ftype.get()) != H5T_STRING) throw ConfigError(where + "/" + name + ": expected strings");
  std::vector<std::string> out(n);
  if (n == 0) return out;
  const std::string err = "cannot read dataset '" + name + "' (truncated or corrupt file)";
  if (H5Tis_variable_str(ftype.get()) > 0) {
    h5::Handle mtype = string_type(where);
    std::vector<char*> ptr(n, nullptr);
    h5::check(H5Dread(d.get(), mtype.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, ptr.data()), where, err);
    for (std::size_t i = 0; i < n; ++i) out[i] = ptr[i] ? ptr[i] : "";
    h5::Handle space = h5::checked(H5Dget_space(d.get()), where, "cannot read the dataspace");
    H5Dvlen_reclaim(mtype.get(), space.get(), H5P_DEFAULT, ptr.data());
  } else {
    const std::size_t size = H5Tget_size(ftype.get());
    h5::Handle mtype = h5::checked(H5Tcopy(H5T_C_S1), where, "cannot create string type");
    h5::check(H5Tset_size(mtype.get(), size), where, "cannot create string type");
    std::vector<char> buf(n * size);
    h5::check(H5Dread(d.get(), mtype.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()), where, err);
    for (std::size_t i = 0; i < n; ++i) {
      const char* s = buf.data() + i * size;
      out[i].assign(s, strnlen(s, size));
      while (!out[i].empty() && out[i].back() == ' ') out[i].pop_back();  // space-padded strings
    }
  }
  return out;
}

int to_int(std::int64_t v, const std::string& where) {
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    throw ConfigError(where + " = " + std::to_string(v) + ": out of range");
  return static_cast<int>(v);
}

Window read_window(hid_t g, const std::string& where, const std::vector<kernels::MethodSpec>& settings) {
  reject_unknown(attribute_names(g, where), {"start_step", "end_step"}, where, "attribute");
  reject_unknown(member_names(g, where), kWindowArrays, where, "dataset");
  Window win;
  win.start_step = h5::read_attr_int(g, "start_step", where);
  win.end_step = h5::read_attr_int(g, "end_step", where);
  const auto names = read_strings(g, "layer_name", kAny, where);
  const std::size_t L = names.size();
  const auto kinds = read_strings(g, "layer_kind", L, where);
  const auto ndim = read_array<std::int64_t>(g, "layer_ndim", L, where);
  std::size_t dims_total = 0;
  for (std::size_t i = 0; i < L; ++i) {
    if (ndim[i] < 0 || ndim[i] > 32)
      throw ConfigError(where + "/layer_ndim[" + std::to_string(i) + "] = " + std::to_string(ndim[i]) + "; expected 0..32");
    dims_total += static_cast<std::size_t>(ndim[i]);
  }
  const auto shape = read_array<std::int64_t>(g, "layer_shape", dims_total, where);
  const auto numel = read_array<std::int64_t>(g, "layer_numel", L, where);
  const auto bucket = read_array<std::int64_t>(g, "layer_bucket", L, where);
  const auto order = read_array<std::int64_t>(g, "layer_backward_order", L, where);
  const auto compute = read_array<double>(g, "layer_compute_time_s", L, where);
  const auto deflt = read_array<std::int64_t>(g, "layer_default", L, where);
  const auto count = read_array<std::int64_t>(g, "layer_candidates", L, where);
  // The counts must add up to the candidate arrays' length; a sum past int64 (a corrupt count
  // that would wrap it round to a small number) is refused before it is used as a size.
  std::int64_t C = 0;
  for (std::size_t i = 0; i < L; ++i) {
    if (count[i] < 0 || count[i] > std::numeric_limits<std::int64_t>::max() - C)
      throw ConfigError(where + "/layer_candidates[" + std::to_string(i) + "] = " + std::to_string(count[i]) + "; expected >= 0" +
                        (count[i] < 0 ? "" : ", and counts whose sum fits in 64 bits"));
    C += count[i];
  }
  const auto Cn = static_cast<std::size_t>(C);
  const auto setting = read_array<std::int64_t>(g, "candidate_setting", Cn, where);
  const auto error = read_array<double>(g, "candidate_error", Cn, where);
  const auto bytes = read_array<double>(g, "candidate_bytes", Cn, where);
  const auto coll = read_array<std::int64_t>(g, "candidate_collective", Cn, where);
  const auto ktime = read_array<double>(g, "candidate_kernel_time_s", Cn, where);

  win.layers.resize(L);
  std::size_t s = 0, c = 0;
  for (std::size_t i = 0; i < L; ++i) {
    LayerTable& l = win.layers[i];
    const std::string lw = where + ", layer " + std::to_string(i) + " ('" + names[i] + "')";
    l.name = names[i];
    l.kind = kinds[i];
    l.shape.assign(shape.begin() + static_cast<std::ptrdiff_t>(s), shape.begin() + static_cast<std::ptrdiff_t>(s + ndim[i]));
    s += static_cast<std::size_t>(ndim[i]);
    l.numel = numel[i];
    l.bucket = to_int(bucket[i], lw + ": layer_bucket");
    l.backward_order = to_int(order[i], lw + ": layer_backward_order");
    if (!std::isnan(compute[i])) {
      if (!std::isfinite(compute[i]) || compute[i] < 0)
        throw InputError(lw + ": layer_compute_time_s = " + std::to_string(compute[i]) + "; expected a finite number >= 0 (NaN: absent)");
      l.compute_time_s = compute[i];
    }
    l.default_index = to_int(deflt[i], lw + ": layer_default");
    l.candidates.resize(static_cast<std::size_t>(count[i]));
    for (Candidate& cand : l.candidates) {
      const std::string cw = lw + ", candidate " + std::to_string(&cand - l.candidates.data());
      if (setting[c] < 0 || static_cast<std::size_t>(setting[c]) >= settings.size())
        throw ConfigError(cw + ": candidate_setting = " + std::to_string(setting[c]) + " is not a row of settings (0.." +
                          std::to_string(settings.size()) + ")");
      cand.spec = settings[static_cast<std::size_t>(setting[c])];
      cand.error = error[c];
      cand.bytes = bytes[c];
      if (coll[c] == kAllreduceCode) cand.collective = Collective::kAllreduce;
      else if (coll[c] == kAllgatherCode) cand.collective = Collective::kAllgather;
      else
        throw ConfigError(cw + ": candidate_collective = " + std::to_string(coll[c]) + "; expected 0 (allreduce) or 1 (allgather)");
      if (!std::isnan(ktime[c])) cand.kernel_time_s = ktime[c];
      ++c;
    }
  }
  return win;
}

}  // namespace

bool is_hdf5_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  h5::init();
  return H5Fis_hdf5(path.string().c_str()) > 0;  // finds the signature after a user block, too
}

bool wants_hdf5(const std::filesystem::path& path) {
  const std::string ext = path.extension().string();
  return ext == ".h5" || ext == ".hdf5" || ext == ".H5" || ext == ".HDF5";
}

Tables read_tables_h5(const std::filesystem::path& path) {
  h5::init();
  const std::string origin = path.string();
  const FaultContext reading(origin);
  if (H5Fis_hdf5(origin.c_str()) <= 0) throw ConfigError(origin + ": not an HDF5 file (no HDF5 signature)");
  h5::Handle file(H5Fopen(origin.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!file.valid()) throw ConfigError(origin + ": cannot open the HDF5 file (truncated or corrupt)");
  const hid_t root = file.get();
  reject_unknown(attribute_names(root, origin), kRootAttrs, origin, "root attribute");
  reject_unknown(member_names(root, origin), {"settings", "windows"}, origin, "member");
  if (!h5::has_attr(root, "kind")) throw ConfigError(origin + ": root attribute 'kind' is missing (not lgreco tables)");
  const std::string kind = h5::read_attr_string(root, "kind", origin);
  if (kind != "lgreco-tables") throw ConfigError(origin + ": kind '" + printable(kind) + "'; expected 'lgreco-tables'");
  const std::int64_t version = h5::read_attr_int(root, "schema_version", origin);
  if (version != 1)
    throw ConfigError(origin + ": schema_version " + std::to_string(version) + " is not supported (expected 1)");
  Tables t;
  t.model = h5::read_attr_string(root, "model", origin);
  t.world_size = to_int(h5::read_attr_int(root, "world_size", origin), origin + ": world_size");
  t.error_mode = h5::read_attr_string(root, "error_mode", origin);
  t.acc_steps = to_int(h5::read_attr_int(root, "acc_steps", origin), origin + ": acc_steps");
  if (h5::has_attr(root, "provenance"))
    t.provenance = parse_json_text(h5::read_attr_string(root, "provenance", origin), origin + ": provenance");

  for (const char* g : {"settings", "windows"})
    if (H5Lexists(root, g, H5P_DEFAULT) <= 0) throw ConfigError(origin + ": missing group '" + g + "'");
  std::vector<kernels::MethodSpec> settings;
  {
    const std::string where = origin + ": settings";
    h5::Handle g = h5::checked(H5Gopen2(root, "settings", H5P_DEFAULT), where, "cannot open the group");
    reject_unknown(member_names(g.get(), where), {"method", "params"}, where, "dataset");
    const auto method = read_strings(g.get(), "method", kAny, where);
    const auto params = read_strings(g.get(), "params", method.size(), where);
    for (std::size_t i = 0; i < method.size(); ++i) {
      const std::string sw = where + "[" + std::to_string(i) + "]";
      settings.push_back(kernels::method_from_json(Json{{"method", method[i]}, {"params", parse_json_text(params[i], sw + ".params")}}, sw));
    }
  }
  h5::Handle wg = h5::checked(H5Gopen2(root, "windows", H5P_DEFAULT), origin, "cannot open group 'windows'");
  const auto members = member_names(wg.get(), origin + ": windows");
  for (std::size_t w = 0; w < members.size(); ++w) {
    const std::string name = std::to_string(w);
    if (H5Lexists(wg.get(), name.c_str(), H5P_DEFAULT) <= 0)
      throw ConfigError(origin + ": windows: " + std::to_string(members.size()) + " members but no window '" + name +
                        "' (windows are named 0, 1, ... in order)");
    const std::string where = origin + ": windows/" + name;
    h5::Handle g = h5::checked(H5Gopen2(wg.get(), name.c_str(), H5P_DEFAULT), where, "cannot open the group");
    t.windows.push_back(read_window(g.get(), where, settings));
  }
  validate_tables(t, origin);
  return t;
}

void write_tables_h5(const Tables& t, const std::filesystem::path& file_path, const std::string& ctx) {
  h5::init();
  h5::Handle fapl = h5::checked(H5Pcreate(H5P_FILE_ACCESS), ctx, "cannot create property list");
  h5::check(H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG), ctx, "cannot set close degree");
  h5::Handle file = h5::checked(H5Fcreate(file_path.string().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), ctx,
                                "cannot create '" + file_path.string() + "'");
  const hid_t root = file.get();
  h5::write_attr(root, "schema_version", std::int64_t{1}, ctx);
  h5::write_attr(root, "kind", std::string("lgreco-tables"), ctx);
  h5::write_attr(root, "model", t.model, ctx);
  h5::write_attr(root, "world_size", std::int64_t{t.world_size}, ctx);
  h5::write_attr(root, "error_mode", t.error_mode, ctx);
  h5::write_attr(root, "acc_steps", std::int64_t{t.acc_steps}, ctx);
  h5::write_attr(root, "provenance", t.provenance.dump(), ctx);

  // Distinct settings, in order of first use.
  std::unordered_map<std::string, std::int64_t> index;
  std::vector<std::string> methods, params;
  const auto setting_of = [&](const kernels::MethodSpec& s) {
    const Json j = kernels::method_to_json(s);
    const std::string m = j["method"].get<std::string>(), p = j["params"].dump();
    const auto [it, fresh] = index.try_emplace(m + '\n' + p, static_cast<std::int64_t>(methods.size()));
    if (fresh) {
      methods.push_back(m);
      params.push_back(p);
    }
    return it->second;
  };
  h5::Handle wg = create_group(root, "windows", ctx);
  for (std::size_t w = 0; w < t.windows.size(); ++w) {
    const Window& win = t.windows[w];
    h5::Handle g = create_group(wg.get(), std::to_string(w), ctx);
    h5::write_attr(g.get(), "start_step", win.start_step, ctx);
    h5::write_attr(g.get(), "end_step", win.end_step, ctx);
    std::vector<std::string> name, kind;
    std::vector<std::int64_t> ndim, shape, numel, bucket, order, deflt, count, setting;
    std::vector<std::uint8_t> coll;
    std::vector<double> compute, error, bytes, ktime;
    const double absent = std::numeric_limits<double>::quiet_NaN();
    for (const LayerTable& l : win.layers) {
      name.push_back(l.name);
      kind.push_back(l.kind);
      ndim.push_back(static_cast<std::int64_t>(l.shape.size()));
      shape.insert(shape.end(), l.shape.begin(), l.shape.end());
      numel.push_back(l.numel);
      bucket.push_back(l.bucket);
      order.push_back(l.backward_order);
      compute.push_back(l.compute_time_s.value_or(absent));
      deflt.push_back(l.default_index);
      count.push_back(static_cast<std::int64_t>(l.candidates.size()));
      for (const Candidate& c : l.candidates) {
        setting.push_back(setting_of(c.spec));
        error.push_back(c.error);
        bytes.push_back(c.bytes);
        coll.push_back(c.collective == Collective::kAllgather ? kAllgatherCode : kAllreduceCode);
        ktime.push_back(c.kernel_time_s.value_or(absent));
      }
    }
    const hid_t G = g.get();
    write_strings(G, "layer_name", name, ctx);
    write_strings(G, "layer_kind", kind, ctx);
    write_array(G, "layer_ndim", ndim, ctx);
    write_array(G, "layer_shape", shape, ctx);
    write_array(G, "layer_numel", numel, ctx);
    write_array(G, "layer_bucket", bucket, ctx);
    write_array(G, "layer_backward_order", order, ctx);
    write_array(G, "layer_compute_time_s", compute, ctx);
    write_array(G, "layer_default", deflt, ctx);
    write_array(G, "layer_candidates", count, ctx);
    write_array(G, "candidate_setting", setting, ctx);
    write_array(G, "candidate_error", error, ctx);
    write_array(G, "candidate_bytes", bytes, ctx);
    write_array(G, "candidate_collective", coll, ctx);
    write_array(G, "candidate_kernel_time_s", ktime, ctx);
  }
  h5::Handle sg = create_group(root, "settings", ctx);
  write_strings(sg.get(), "method", methods, ctx);
  write_strings(sg.get(), "params", params, ctx);
  sg.reset();
  wg.reset();
  h5::check(H5Fclose(file.release()), ctx, "cannot close '" + file_path.string() + "' (disk full?)");
}

Tables read_tables(const std::filesystem::path& path) {
  if (is_hdf5_file(path)) return read_tables_h5(path);
  return read_tables_json(path);
}

PendingTables::PendingTables(const Tables& t, const std::filesystem::path& dest, Overwrite policy)
    : path_(dest, policy) {
  if (wants_hdf5(dest)) {
    write_tables_h5(t, path_.temp_path(), dest.string());
    return;
  }
  std::ofstream out(path_.temp_path(), std::ios::binary);
  out << tables_to_json(t).dump(2) << "\n";
  out.close();
  if (!out) throw Error(dest.string() + ": cannot write the tables (disk full?)");
}

void PendingTables::commit() { path_.commit(); }

}  // namespace lgreco::planner
