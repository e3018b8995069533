#include "traces/hdf5.hpp"

#include <climits>
#include <mutex>

#include "core/error.hpp"

namespace lgreco::traces::h5 {

void init() {
  static std::once_flag once;
  std::call_once(once, [] {
    // No library shutdown at exit: after a failed write (disk full, `ulimit -f`) a file that
    // could not be flushed stays half-closed in HDF5's tables, and H5_term_library's retry of
    // that close crashes at exit (HDF5 1.10). Outputs are committed only after an explicit,
    // checked H5Fclose, so nothing needs HDF5's exit-time flush; the OS releases the rest.
    H5dont_atexit();
    H5open();
    // HDF5 prints its error stack to stderr by default; the library reports errors as exceptions.
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  });
}

Handle checked(hid_t id, const std::string& context, const std::string& what) {
  if (id < 0) throw TraceError(context + ": " + what);
  return Handle(id);
}

void check(herr_t status, const std::string& context, const std::string& what) {
  if (status < 0) throw TraceError(context + ": " + what);
}

Handle float16_type() {
  // IEEE binary16: sign bit 15, exponent bits 10..14 (bias 15), mantissa bits 0..9.
  Handle t = checked(H5Tcopy(H5T_IEEE_F32LE), "HDF5", "cannot create the float16 type");
  check(H5Tset_fields(t.get(), 15, 10, 5, 0, 10), "HDF5", "cannot set float16 fields");
  check(H5Tset_size(t.get(), 2), "HDF5", "cannot set float16 size");
  check(H5Tset_ebias(t.get(), 15), "HDF5", "cannot set float16 exponent bias");
  return t;
}

bool has_attr(hid_t loc, const std::string& name) { return H5Aexists(loc, name.c_str()) > 0; }

void write_attr(hid_t loc, const std::string& name, const std::string& value, const std::string& context) {
  Handle type = checked(H5Tcopy(H5T_C_S1), context, "cannot create string type");
  check(H5Tset_size(type.get(), H5T_VARIABLE), context, "cannot create string type");
  check(H5Tset_cset(type.get(), H5T_CSET_UTF8), context, "cannot create string type");
  Handle space = checked(H5Screate(H5S_SCALAR), context, "cannot create dataspace");
  Handle attr = checked(H5Acreate2(loc, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), context,
                        "cannot create attribute '" + name + "'");
  const char* p = value.c_str();
  check(H5Awrite(attr.get(), type.get(), &p), context, "cannot write attribute '" + name + "'");
}

void write_attr(hid_t loc, const std::string& name, std::int64_t value, const std::string& context) {
  Handle space = checked(H5Screate(H5S_SCALAR), context, "cannot create dataspace");
  Handle attr = checked(H5Acreate2(loc, name.c_str(), H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), context,
                        "cannot create attribute '" + name + "'");
  check(H5Awrite(attr.get(), H5T_NATIVE_INT64, &value), context, "cannot write attribute '" + name + "'");
}

void write_attr(hid_t loc, const std::string& name, const std::vector<std::int64_t>& value, const std::string& context) {
  const hsize_t n = value.size();
  Handle space = checked(H5Screate_simple(1, &n, nullptr), context, "cannot create dataspace");
  Handle attr = checked(H5Acreate2(loc, name.c_str(), H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), context,
                        "cannot create attribute '" + name + "'");
  check(H5Awrite(attr.get(), H5T_NATIVE_INT64, value.data()), context, "cannot write attribute '" + name + "'");
}

namespace {

Handle open_attr(hid_t loc, const std::string& name, const std::string& context) {
  if (!has_attr(loc, name)) throw TraceError(context + ": attribute '" + name + "' is missing");
  return checked(H5Aopen(loc, name.c_str(), H5P_DEFAULT), context, "cannot open attribute '" + name + "'");
}

std::int64_t attr_points(hid_t attr, const std::string& context, const std::string& name) {
  Handle space = checked(H5Aget_space(attr), context, "cannot read attribute '" + name + "'");
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  if (n < 0) throw TraceError(context + ": cannot read attribute '" + name + "'");
  return n;
}

std::string class_name(H5T_class_t c) {
  switch (c) {
    case H5T_INTEGER: return "integer";
    case H5T_FLOAT: return "float";
    case H5T_STRING: return "string";
    default: return "non-numeric";
  }
}

}  // namespace

std::string read_attr_string(hid_t loc, const std::string& name, const std::string& context) {
  Handle attr = open_attr(loc, name, context);
  Handle ftype = checked(H5Aget_type(attr.get()), context, "cannot read attribute '" + name + "'");
  const H5T_class_t cls = H5Tget_class(ftype.get());
  if (cls != H5T_STRING) {
    throw TraceError(context + ": attribute '" + name + "' has type " + class_name(cls) + ", expected string");
  }
  if (attr_points(attr.get(), context, name) != 1) {
    throw TraceError(context + ": attribute '" + name + "' holds several values, expected one string");
  }
  Handle mtype = checked(H5Tcopy(H5T_C_S1), context, "cannot create string type");
  if (H5Tis_variable_str(ftype.get()) > 0) {
    check(H5Tset_size(mtype.get(), H5T_VARIABLE), context, "cannot create string type");
    check(H5Tset_cset(mtype.get(), H5Tget_cset(ftype.get())), context, "cannot create string type");
    char* p = nullptr;
    check(H5Aread(attr.get(), mtype.get(), &p), context, "cannot read attribute '" + name + "'");
    std::string s = p ? p : "";
    if (p) H5free_memory(p);
    return s;
  }
  const std::size_t size = H5Tget_size(ftype.get());
  check(H5Tset_size(mtype.get(), size + 1), context, "cannot create string type");
  check(H5Tset_strpad(mtype.get(), H5T_STR_NULLTERM), context, "cannot create string type");
  check(H5Tset_cset(mtype.get(), H5Tget_cset(ftype.get())), context, "cannot create string type");
  std::string buf(size + 1, '\0');
  check(H5Aread(attr.get(), mtype.get(), buf.data()), context, "cannot read attribute '" + name + "'");
  buf.resize(buf.find('\0') == std::string::npos ? buf.size() : buf.find('\0'));
  while (!buf.empty() && buf.back() == ' ') buf.pop_back();  // space-padded strings
  return buf;
}

std::vector<std::int64_t> read_attr_int_array(hid_t loc, const std::string& name, const std::string& context) {
  Handle attr = open_attr(loc, name, context);
  Handle ftype = checked(H5Aget_type(attr.get()), context, "cannot read attribute '" + name + "'");
  const H5T_class_t cls = H5Tget_class(ftype.get());
  if (cls != H5T_INTEGER) {
    throw TraceError(context + ": attribute '" + name + "' has type " + class_name(cls) + ", expected integer");
  }
  const std::size_t size = H5Tget_size(ftype.get());
  if (size > 8) {
    throw TraceError(context + ": attribute '" + name + "' is a " + std::to_string(8 * size) +
                     "-bit integer, expected at most 64 bits");
  }
  const std::int64_t points = attr_points(attr.get(), context, name);
  if (points > (std::int64_t{1} << 24)) {
    throw TraceError(context + ": attribute '" + name + "' holds " + std::to_string(points) + " values, expected a short list");
  }
  std::vector<std::int64_t> v(static_cast<std::size_t>(points));
  if (v.empty()) return v;
  if (size == 8 && H5Tget_sign(ftype.get()) == H5T_SGN_NONE) {
    // Read unsigned 64-bit values as they are: HDF5 would clip those beyond int64 without a word.
    std::vector<std::uint64_t> u(v.size());
    check(H5Aread(attr.get(), H5T_NATIVE_UINT64, u.data()), context, "cannot read attribute '" + name + "'");
    for (std::size_t i = 0; i < u.size(); ++i) {
      if (u[i] > static_cast<std::uint64_t>(INT64_MAX)) {
        throw TraceError(context + ": attribute '" + name + "' holds " + std::to_string(u[i]) +
                         ", beyond the int64 range (at most " + std::to_string(INT64_MAX) + ")");
      }
      v[i] = static_cast<std::int64_t>(u[i]);
    }
    return v;
  }
  check(H5Aread(attr.get(), H5T_NATIVE_INT64, v.data()), context, "cannot read attribute '" + name + "'");
  return v;
}

std::int64_t read_attr_int(hid_t loc, const std::string& name, const std::string& context, std::int64_t lo,
                           std::int64_t hi) {
  const auto v = read_attr_int_array(loc, name, context);
  if (v.size() != 1) {
    throw TraceError(context + ": attribute '" + name + "' holds " + std::to_string(v.size()) +
                     " values, expected one integer");
  }
  if (v[0] < lo || v[0] > hi) {
    throw TraceError(context + ": attribute '" + name + "' is " + std::to_string(v[0]) + ", expected " +
                     (hi == INT64_MAX ? "at least " + std::to_string(lo)
                                      : std::to_string(lo) + " to " + std::to_string(hi)));
  }
  return v[0];
}

bool exists(hid_t loc, const std::string& path) {
  std::size_t pos = path[0] == '/' ? 1 : 0;
  while (true) {
    const std::size_t slash = path.find('/', pos);
    const std::string prefix = path.substr(0, slash);
    if (H5Lexists(loc, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    if (slash == std::string::npos) return true;
    pos = slash + 1;
  }
}

std::vector<std::int64_t> dataset_dims(hid_t dset, const std::string& context) {
  Handle space = checked(H5Dget_space(dset), context, "cannot read the dataspace");
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) throw TraceError(context + ": cannot read the dataspace");
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  if (rank > 0 && H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0) {
    throw TraceError(context + ": cannot read the dataspace");
  }
  for (const hsize_t d : dims) {
    if (d > static_cast<hsize_t>(INT64_MAX)) throw TraceError(context + ": a dimension of " + std::to_string(d) + " is beyond int64");
  }
  return std::vector<std::int64_t>(dims.begin(), dims.end());
}

std::string format_dims(const std::vector<std::int64_t>& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

}  // namespace lgreco::traces::h5
