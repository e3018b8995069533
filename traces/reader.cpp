#include "traces/reader.hpp"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <climits>
#include <cmath>
#include <cstring>
#include <set>
#include <system_error>

#include "core/error.hpp"
#include "core/fault_context.hpp"
#include "core/int_math.hpp"
#include "core/text.hpp"
#include "traces/hdf5.hpp"
#include "traces/half.hpp"

namespace lgreco::traces {
namespace fs = std::filesystem;

namespace detail {
// How fetch_raw may read a layer: raw chunks decoded by decode_raw (ok), or the ordinary path.
// (Not in an anonymous namespace: TraceReader::Impl holds it, and a unity build includes this file.)
struct RawInfo {
  bool ok = false;
  bool shuffle = false, deflate = false;
  std::int64_t chunk = 0;  // elements per chunk along numel
};
}  // namespace detail
using detail::RawInfo;

struct TraceReader::Impl {
  fs::path path;
  std::string ctx;  // "trace <file>"
  TraceHeader header;
  std::vector<TraceLayer> layers;
  std::vector<std::int64_t> steps;
  std::vector<bool> has_compute_time;
  h5::Handle file;
  h5::Handle dapl;  // dataset access without chunk cache
  mutable std::vector<std::uint16_t> scratch;
  std::vector<RawInfo> raw_info;  // per layer: how fetch_raw may read it

  bool root_dtype_given = false;
  std::int64_t numel_derived = 0, dtype_derived = 0;  // layers whose numel / dtype attribute was absent

  std::string layer_ctx(std::size_t i, const char* dataset = "grad") const {
    return ctx + ": layer " + quote_name(layers[i].name) + " (" + layer_group_path(i) + "/" + dataset + ")";
  }
  void open();
  void read_root();
  void read_steps();
  void read_layers();
  void derive_root_dtype();
  void check_grad(std::size_t i, bool dtype_given);
  void check_compute_time(std::size_t i) const;
  std::optional<std::vector<double>> read_series(const std::string& path, const std::string& what) const;
};

namespace {

bool is_float16(hid_t t) {
  std::size_t spos, epos, esize, mpos, msize;
  if (H5Tget_class(t) != H5T_FLOAT || H5Tget_size(t) != 2) return false;
  if (H5Tget_fields(t, &spos, &epos, &esize, &mpos, &msize) < 0) return false;
  return spos == 15 && epos == 10 && esize == 5 && mpos == 0 && msize == 10 && H5Tget_ebias(t) == 15;
}

// The storage dtype a dataset type stands for (docs/trace-format.md); nullopt for other types.
std::optional<StorageDtype> storage_dtype_of(hid_t t) {
  if (H5Tequal(t, H5T_IEEE_F32LE) > 0 || H5Tequal(t, H5T_IEEE_F32BE) > 0) return StorageDtype::kFloat32;
  if (is_float16(t)) return StorageDtype::kFloat16;
  if (H5Tget_class(t) == H5T_INTEGER && H5Tget_size(t) == 2 && H5Tget_sign(t) == H5T_SGN_NONE) return StorageDtype::kBFloat16;
  return std::nullopt;
}

std::string describe_type(hid_t t) {
  const H5T_class_t c = H5Tget_class(t);
  const std::string bits = std::to_string(8 * H5Tget_size(t));
  if (c == H5T_FLOAT) return "float" + bits;
  if (c == H5T_INTEGER) return (H5Tget_sign(t) == H5T_SGN_NONE ? "uint" : "int") + bits;
  if (c == H5T_STRING) return "string";
  return "a non-numeric type";
}

}  // namespace

void TraceReader::Impl::open() {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    // "no such file" only when that is the reason (not a name too long, a permission, ...).
    const bool missing = !ec || ec == std::errc::no_such_file_or_directory;
    throw TraceError(ctx + (missing ? ": no such file" : ": cannot open (" + ec.message() + ")"));
  }
  if (fs::is_directory(path, ec)) throw TraceError(ctx + ": is a directory, expected an HDF5 file");
  if (!fs::is_regular_file(path, ec)) throw TraceError(ctx + ": is not a regular file (a device, pipe or socket)");
  const std::string p = path.string();
  if (H5Fis_hdf5(p.c_str()) <= 0) {
    throw TraceError(ctx + ": not an HDF5 file (no HDF5 signature: wrong file, or corrupt)");
  }
  h5::Handle fapl = h5::checked(H5Pcreate(H5P_FILE_ACCESS), ctx, "cannot create property list");
  h5::check(H5Pset_cache(fapl.get(), 0, 0, 0, 1.0), ctx, "cannot set the chunk cache");
  file = h5::Handle(H5Fopen(p.c_str(), H5F_ACC_RDONLY, fapl.get()));
  if (!file.valid()) throw TraceError(ctx + ": cannot open the HDF5 file (truncated or corrupt)");
  dapl = h5::checked(H5Pcreate(H5P_DATASET_ACCESS), ctx, "cannot create property list");
  h5::check(H5Pset_chunk_cache(dapl.get(), 0, 0, 1.0), ctx, "cannot set the chunk cache");
}

void TraceReader::Impl::read_root() {
  const hid_t root = file.get();
  if (!h5::has_attr(root, "format")) {
    throw TraceError(ctx + ": root attribute 'format' is missing (not an lgreco trace)");
  }
  const std::string format = h5::read_attr_string(root, "format", ctx);
  if (format != kTraceFormatName) {
    throw TraceError(ctx + ": root attribute 'format' is '" + printable(format) + "', expected '" + kTraceFormatName + "'");
  }
  const std::int64_t version = h5::read_attr_int(root, "version", ctx);
  if (version != kTraceFormatVersion) {
    throw TraceError(ctx + ": format version " + std::to_string(version) + " is not supported (this build reads version " +
                     std::to_string(kTraceFormatVersion) + ")");
  }
  header.model = h5::read_attr_string(root, "model", ctx);
  header.world_size = h5::read_attr_int(root, "world_size", ctx, 1, INT_MAX);
  // dtype, producer and created may be absent (a third-party writer that keeps only the core
  // layout): dtype is then derived from the layers, the others get defaults; trace info says so.
  root_dtype_given = h5::has_attr(root, "dtype");
  if (root_dtype_given) {
    const std::string dtype = h5::read_attr_string(root, "dtype", ctx);
    try {
      header.dtype = parse_storage_dtype(dtype);
    } catch (const ConfigError&) {
      throw TraceError(ctx + ": root attribute 'dtype' is " + quote_name(dtype) + ", expected float32, float16 or bfloat16");
    }
  }
  if (h5::has_attr(root, "producer")) {
    header.producer = h5::read_attr_string(root, "producer", ctx);
  } else {
    header.producer = "unknown";
    header.derived.push_back("producer (absent: 'unknown')");
  }
  if (h5::has_attr(root, "created")) {
    header.created = h5::read_attr_string(root, "created", ctx);
  } else {
    header.derived.push_back("created (absent: empty)");
  }
  if (h5::has_attr(root, "producer_config")) header.producer_config = h5::read_attr_string(root, "producer_config", ctx);
}

void TraceReader::Impl::derive_root_dtype() {
  if (root_dtype_given) return;
  // The layers' common dtype; float32 when they differ (the widest).
  header.dtype = layers.front().dtype;
  for (const auto& l : layers) {
    if (l.dtype != header.dtype) header.dtype = StorageDtype::kFloat32;
  }
  header.derived.push_back(std::string("dtype (absent: ") + to_string(header.dtype) + ", from the layers)");
}

void TraceReader::Impl::read_steps() {
  const std::string where = ctx + ": /steps";
  if (!h5::exists(file.get(), "steps")) throw TraceError(where + ": dataset is missing");
  h5::Handle d = h5::checked(H5Dopen2(file.get(), "steps", H5P_DEFAULT), where, "cannot open (corrupt?)");
  h5::Handle t = h5::checked(H5Dget_type(d.get()), where, "cannot read the type");
  if (H5Tget_class(t.get()) != H5T_INTEGER) {
    throw TraceError(where + ": dataset type is " + describe_type(t.get()) + ", expected int64");
  }
  const auto dims = h5::dataset_dims(d.get(), where);
  if (dims.size() != 1) {
    throw TraceError(where + ": dataset has " + std::to_string(dims.size()) + " dims, expected 1");
  }
  steps.resize(static_cast<std::size_t>(dims[0]));
  if (!steps.empty()) {
    h5::check(H5Dread(d.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, steps.data()), where,
              "cannot read (truncated or corrupt)");
  }
  for (std::size_t i = 1; i < steps.size(); ++i) {
    if (steps[i] <= steps[i - 1]) {
      throw TraceError(where + ": step ids must be strictly increasing, but index " + std::to_string(i) + " is " +
                       std::to_string(steps[i]) + " after " + std::to_string(steps[i - 1]));
    }
  }
}

void TraceReader::Impl::read_layers() {
  if (!h5::exists(file.get(), "layers")) throw TraceError(ctx + ": group /layers is missing");
  h5::Handle g = h5::checked(H5Gopen2(file.get(), "layers", H5P_DEFAULT), ctx + ": /layers", "cannot open (corrupt?)");
  H5G_info_t info;
  h5::check(H5Gget_info(g.get(), &info), ctx + ": /layers", "cannot list members (corrupt?)");
  const std::size_t n = info.nlinks;
  if (n == 0) throw TraceError(ctx + ": /layers has no layer groups (a trace holds at least one layer)");
  // The member names first: a missing group is reported as such, not as the layer table that
  // its absence makes inconsistent (a backward order out of range, ...).
  for (std::size_t i = 0; i < n; ++i) {
    const std::string gpath = layer_group_path(i);
    if (!h5::exists(file.get(), gpath)) {
      throw TraceError(ctx + ": " + gpath + ": group is missing (/layers has " + std::to_string(n) +
                       " members; they must be named 000000 to " + layer_group_path(n - 1).substr(8) + ")");
    }
  }
  std::set<std::string> names;
  std::set<std::int64_t> orders;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string gpath = layer_group_path(i);
    const std::string lctx = ctx + ": " + gpath;
    h5::Handle lg = h5::checked(H5Gopen2(file.get(), gpath.c_str(), H5P_DEFAULT), lctx, "is not a group");
    TraceLayer l;
    l.name = h5::read_attr_string(lg.get(), "name", lctx);
    const std::string nctx = ctx + ": layer " + quote_name(l.name) + " (" + gpath + ")";
    if (!names.insert(l.name).second) throw TraceError(nctx + ": duplicate layer name");
    l.shape = h5::read_attr_int_array(lg.get(), "shape", nctx);
    if (l.shape.empty()) throw TraceError(nctx + ": attribute 'shape' is empty (a scalar is recorded as [1])");
    for (auto dim : l.shape) {
      if (dim < 1) throw TraceError(nctx + ": attribute 'shape' " + h5::format_dims(l.shape) + " has a dimension < 1");
    }
    const auto elements = shape_numel(l.shape);
    if (!elements) {
      throw TraceError(nctx + ": attribute 'shape' " + h5::format_dims(l.shape) + " has more elements than an int64 holds");
    }
    if (h5::has_attr(lg.get(), "numel")) {
      l.numel = h5::read_attr_int(lg.get(), "numel", nctx);
      if (l.numel != *elements) {
        throw TraceError(nctx + ": attribute 'numel' is " + std::to_string(l.numel) + " but shape " +
                         h5::format_dims(l.shape) + " has " + std::to_string(*elements) + " elements");
      }
    } else {
      l.numel = *elements;
      ++numel_derived;
    }
    const std::string kind = h5::read_attr_string(lg.get(), "kind", nctx);
    try {
      l.kind = parse_layer_kind(kind);
    } catch (const ConfigError&) {
      throw TraceError(nctx + ": attribute 'kind' is " + quote_name(kind) + ", expected weight, bias, norm or embedding");
    }
    l.bucket = h5::read_attr_int(lg.get(), "bucket", nctx, 0, INT_MAX);
    l.backward_order = h5::read_attr_int(lg.get(), "backward_order", nctx, 0, static_cast<std::int64_t>(n) - 1);
    const bool dtype_given = h5::has_attr(lg.get(), "dtype");
    if (dtype_given) {
      const std::string dtype = h5::read_attr_string(lg.get(), "dtype", nctx);
      try {
        l.dtype = parse_storage_dtype(dtype);
      } catch (const ConfigError&) {
        throw TraceError(nctx + ": attribute 'dtype' is " + quote_name(dtype) + ", expected float32, float16 or bfloat16");
      }
    }
    if (!orders.insert(l.backward_order).second) {
      throw TraceError(nctx + ": attribute 'backward_order' " + std::to_string(l.backward_order) +
                       " is used by another layer (expected a permutation of 0 to " + std::to_string(n - 1) + ")");
    }
    layers.push_back(std::move(l));
    check_grad(i, dtype_given);
    has_compute_time.push_back(h5::exists(file.get(), gpath + "/compute_time_s"));
    if (has_compute_time.back()) check_compute_time(i);
  }
  derive_root_dtype();
  if (numel_derived > 0) {
    header.derived.push_back("numel (absent in " + std::to_string(numel_derived) + " of " + std::to_string(n) +
                             " layers: the product of shape)");
  }
  if (dtype_derived > 0) {
    header.derived.push_back("layer dtype (absent in " + std::to_string(dtype_derived) + " of " + std::to_string(n) +
                             " layers: from the grad dataset's type)");
  }
}

void TraceReader::Impl::check_compute_time(std::size_t i) const {
  const std::string where = layer_ctx(i, "compute_time_s");
  const auto v = read_series(layer_group_path(i) + "/compute_time_s", where);
  for (std::size_t t = 0; v && t < v->size(); ++t) {
    const double x = (*v)[t];
    if (!std::isfinite(x) || x < 0) {
      char value[32];
      std::snprintf(value, sizeof value, "%g", x);
      throw TraceError(where + ": value at step index " + std::to_string(t) + " is " + value +
                       ", expected a finite number of seconds >= 0");
    }
  }
}

namespace {

// Whether the dataset's storage is one decode_raw decodes exactly: chunked [1, c], filters
// [shuffle, deflate], [deflate], [shuffle] or none (in that order, nothing else), little-endian.
RawInfo raw_info_of(hid_t d, StorageDtype dtype) {
  RawInfo r;
  if constexpr (std::endian::native != std::endian::little) return r;
  h5::Handle t(H5Dget_type(d));
  if (!t.valid() || H5Tget_order(t.get()) != H5T_ORDER_LE) return r;
  if (static_cast<std::int64_t>(H5Tget_size(t.get())) != storage_bytes(dtype)) return r;
  h5::Handle dcpl(H5Dget_create_plist(d));
  if (!dcpl.valid() || H5Pget_layout(dcpl.get()) != H5D_CHUNKED) return r;
  hsize_t cdims[2] = {0, 0};
  if (H5Pget_chunk(dcpl.get(), 2, cdims) != 2 || cdims[0] != 1 || cdims[1] < 1) return r;
  const int nf = H5Pget_nfilters(dcpl.get());
  if (nf < 0 || nf > 2) return r;
  std::vector<H5Z_filter_t> ids;
  for (int k = 0; k < nf; ++k) {
    unsigned flags = 0;
    std::size_t nelem = 8;
    unsigned values[8];
    char name[64];
    unsigned config = 0;
    const H5Z_filter_t id = H5Pget_filter2(dcpl.get(), static_cast<unsigned>(k), &flags, &nelem, values, sizeof name,
                                           name, &config);
    if (id < 0) return r;
    ids.push_back(id);
  }
  if (ids.size() == 2) {
    if (ids[0] != H5Z_FILTER_SHUFFLE || ids[1] != H5Z_FILTER_DEFLATE) return r;
    r.shuffle = r.deflate = true;
  } else if (ids.size() == 1) {
    if (ids[0] == H5Z_FILTER_SHUFFLE) r.shuffle = true;
    else if (ids[0] == H5Z_FILTER_DEFLATE) r.deflate = true;
    else return r;
  }
  r.chunk = static_cast<std::int64_t>(cdims[1]);
  r.ok = true;
  return r;
}

}  // namespace

void TraceReader::Impl::check_grad(std::size_t i, bool dtype_given) {
  TraceLayer& l = layers[i];
  const std::string where = layer_ctx(i);
  const std::string dpath = layer_group_path(i) + "/grad";
  if (!h5::exists(file.get(), dpath)) throw TraceError(where + ": dataset is missing");
  h5::Handle d = h5::checked(H5Dopen2(file.get(), dpath.c_str(), dapl.get()), where, "cannot open (corrupt?)");
  const auto dims = h5::dataset_dims(d.get(), where);
  if (dims.size() != 2) throw TraceError(where + ": dataset has " + std::to_string(dims.size()) + " dims, expected 2");
  if (dims[0] != static_cast<std::int64_t>(steps.size()) || dims[1] != l.numel) {
    throw TraceError(where + ": dataset shape is " + h5::format_dims(dims) + ", expected [" + std::to_string(steps.size()) +
                     ", " + std::to_string(l.numel) + "] (steps, numel)");
  }
  h5::Handle t = h5::checked(H5Dget_type(d.get()), where, "cannot read the type");
  if (!dtype_given) {
    const auto derived = storage_dtype_of(t.get());
    if (!derived) {
      throw TraceError(where + ": dataset type is " + describe_type(t.get()) +
                       ", expected float32, float16 or uint16 (bfloat16); the layer has no 'dtype' attribute");
    }
    l.dtype = *derived;
    ++dtype_derived;
  }
  bool ok = false;
  switch (l.dtype) {
    case StorageDtype::kFloat32:
      ok = H5Tequal(t.get(), H5T_IEEE_F32LE) > 0 || H5Tequal(t.get(), H5T_IEEE_F32BE) > 0;
      break;
    case StorageDtype::kFloat16: ok = is_float16(t.get()); break;
    case StorageDtype::kBFloat16:
      ok = H5Tget_class(t.get()) == H5T_INTEGER && H5Tget_size(t.get()) == 2 && H5Tget_sign(t.get()) == H5T_SGN_NONE;
      if (ok && h5::has_attr(d.get(), "dtype") && h5::read_attr_string(d.get(), "dtype", where) != "bfloat16") {
        throw TraceError(where + ": dataset attribute 'dtype' is " + quote_name(h5::read_attr_string(d.get(), "dtype", where)) +
                         ", expected 'bfloat16' for a uint16 dataset");
      }
      break;
  }
  if (!ok) {
    throw TraceError(where + ": dataset type is " + describe_type(t.get()) + ", but the layer's dtype is " +
                     to_string(l.dtype) + (l.dtype == StorageDtype::kBFloat16 ? " (stored as uint16)" : ""));
  }
  raw_info.push_back(raw_info_of(d.get(), l.dtype));
}

std::optional<std::vector<double>> TraceReader::Impl::read_series(const std::string& dpath, const std::string& where) const {
  if (!h5::exists(file.get(), dpath)) return std::nullopt;
  h5::Handle d = h5::checked(H5Dopen2(file.get(), dpath.c_str(), H5P_DEFAULT), where, "cannot open (corrupt?)");
  h5::Handle t = h5::checked(H5Dget_type(d.get()), where, "cannot read the type");
  if (H5Tget_class(t.get()) != H5T_FLOAT && H5Tget_class(t.get()) != H5T_INTEGER) {
    throw TraceError(where + ": dataset type is " + describe_type(t.get()) + ", expected float64");
  }
  const auto dims = h5::dataset_dims(d.get(), where);
  if (dims.size() != 1 || dims[0] != static_cast<std::int64_t>(steps.size())) {
    throw TraceError(where + ": dataset shape is " + h5::format_dims(dims) + ", expected [" + std::to_string(steps.size()) +
                     "] (one value per step)");
  }
  std::vector<double> v(steps.size());
  if (!v.empty()) {
    h5::check(H5Dread(d.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), where,
              "cannot read (truncated or corrupt)");
  }
  return v;
}

TraceReader::TraceReader(const fs::path& path) : impl_(std::make_unique<Impl>()) {
  h5::init();
  impl_->path = path;
  impl_->ctx = "trace " + printable(path.string());
  const FaultContext reading(impl_->ctx);
  try {
    impl_->open();
    impl_->read_root();
    impl_->read_steps();
    impl_->read_layers();
    impl_->read_series("loss", impl_->ctx + ": /loss");
    impl_->read_series("lr", impl_->ctx + ": /lr");
  } catch (...) {
    impl_.reset();  // closing a damaged file runs libhdf5 too (its cache can abort on a corrupt heap)
    throw;
  }
}

TraceReader::~TraceReader() {
  if (!impl_) return;
  const FaultContext closing(impl_->ctx);
  impl_.reset();
}
TraceReader::TraceReader(TraceReader&&) noexcept = default;

const fs::path& TraceReader::path() const { return impl_->path; }
const TraceHeader& TraceReader::header() const { return impl_->header; }
const std::vector<TraceLayer>& TraceReader::layers() const { return impl_->layers; }
const std::vector<std::int64_t>& TraceReader::steps() const { return impl_->steps; }
std::vector<Burst> TraceReader::bursts() const { return find_bursts(impl_->steps); }
std::string TraceReader::layer_context(std::size_t layer) const { return impl_->layer_ctx(layer); }

std::size_t TraceReader::find_layer(const std::string& name) const {
  for (std::size_t i = 0; i < impl_->layers.size(); ++i) {
    if (impl_->layers[i].name == name) return i;
  }
  throw TraceError(impl_->ctx + ": no layer named " + quote_name(name));
}

void TraceReader::read(std::size_t layer, std::size_t t, std::span<float> out) const {
  if (layer < impl_->layers.size() && static_cast<std::int64_t>(out.size()) != impl_->layers[layer].numel) {
    throw Error(impl_->layer_ctx(layer) + ": buffer has " + std::to_string(out.size()) + " elements, expected numel " +
                std::to_string(impl_->layers[layer].numel));
  }
  read_range(layer, t, 0, out);
}

void TraceReader::read_range(std::size_t layer, std::size_t t, std::int64_t offset, std::span<float> out) const {
  const Impl& m = *impl_;
  if (layer >= m.layers.size()) {
    throw Error(m.ctx + ": layer index " + std::to_string(layer) + " out of range (" + std::to_string(m.layers.size()) +
                " layers)");
  }
  const TraceLayer& l = m.layers[layer];
  const std::string where = m.layer_ctx(layer);
  if (t >= m.steps.size()) {
    throw Error(where + ": step index " + std::to_string(t) + " out of range (trace has " + std::to_string(m.steps.size()) +
                " steps)");
  }
  const auto count = static_cast<std::int64_t>(out.size());
  if (offset < 0 || offset + count > l.numel) {
    throw Error(where + ": range [" + std::to_string(offset) + ", " + std::to_string(offset + count) +
                ") outside [0, numel = " + std::to_string(l.numel) + ")");
  }
  if (count == 0) return;
  const FaultContext reading(m.ctx);
  const std::string dpath = layer_group_path(layer) + "/grad";
  h5::Handle d = h5::checked(H5Dopen2(m.file.get(), dpath.c_str(), m.dapl.get()), where, "cannot open (corrupt?)");
  h5::Handle fspace = h5::checked(H5Dget_space(d.get()), where, "cannot read the dataspace");
  const std::string fail = "cannot read step index " + std::to_string(t) + " (truncated or corrupt data)";
  // float32 goes straight into the caller's buffer; 16-bit types are decoded one chunk at a time.
  const std::int64_t chunk = chunk_elements(l.numel, l.dtype);
  std::int64_t pos = offset;
  while (pos < offset + count) {
    const std::int64_t end = l.dtype == StorageDtype::kFloat32 ? offset + count
                                                               : std::min(offset + count, (pos / chunk + 1) * chunk);
    const std::int64_t len = end - pos;
    const hsize_t start[2] = {static_cast<hsize_t>(t), static_cast<hsize_t>(pos)};
    const hsize_t cnt[2] = {1, static_cast<hsize_t>(len)};
    h5::check(H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, start, nullptr, cnt, nullptr), where, fail);
    const hsize_t mcount = static_cast<hsize_t>(len);
    h5::Handle mspace = h5::checked(H5Screate_simple(1, &mcount, nullptr), where, "cannot create dataspace");
    float* dst = out.data() + (pos - offset);
    if (l.dtype == StorageDtype::kFloat32) {
      h5::check(H5Dread(d.get(), H5T_NATIVE_FLOAT, mspace.get(), fspace.get(), H5P_DEFAULT, dst), where, fail);
    } else {
      m.scratch.resize(static_cast<std::size_t>(len));
      if (l.dtype == StorageDtype::kFloat16) {
        h5::Handle mtype = h5::float16_type();  // little-endian binary16: the encoded bits, no value conversion
        h5::check(H5Dread(d.get(), mtype.get(), mspace.get(), fspace.get(), H5P_DEFAULT, m.scratch.data()), where, fail);
        for (std::int64_t k = 0; k < len; ++k) dst[k] = half_to_float(m.scratch[k]);
      } else {
        h5::check(H5Dread(d.get(), H5T_NATIVE_UINT16, mspace.get(), fspace.get(), H5P_DEFAULT, m.scratch.data()), where,
                  fail);
        for (std::int64_t k = 0; k < len; ++k) dst[k] = bfloat16_to_float(m.scratch[k]);
      }
    }
    pos = end;
  }
}

bool TraceReader::raw_path(std::size_t layer) const {
  return layer < impl_->raw_info.size() && impl_->raw_info[layer].ok;
}

void TraceReader::fetch_raw(std::size_t layer, std::size_t t, RawRow& raw, std::span<float> out) const {
  const Impl& m = *impl_;
  raw.done = false;
  raw.bytes.clear();
  raw.offsets.assign(1, 0);
  if (!raw_path(layer) || t >= m.steps.size() || static_cast<std::int64_t>(out.size()) != m.layers[layer].numel) {
    read(layer, t, out);  // the ordinary path (and its argument errors)
    raw.done = true;
    return;
  }
  const TraceLayer& l = m.layers[layer];
  const RawInfo& info = m.raw_info[layer];
  const std::string where = m.layer_ctx(layer);
  const FaultContext reading(m.ctx);
  const std::string dpath = layer_group_path(layer) + "/grad";
  h5::Handle d = h5::checked(H5Dopen2(m.file.get(), dpath.c_str(), m.dapl.get()), where, "cannot open (corrupt?)");
  const std::string fail = "cannot read step index " + std::to_string(t) + " (truncated or corrupt data)";
  for (std::int64_t pos = 0; pos < l.numel; pos += info.chunk) {
    const hsize_t offset[2] = {static_cast<hsize_t>(t), static_cast<hsize_t>(pos)};
    hsize_t nbytes = 0;
    if (H5Dget_chunk_storage_size(d.get(), offset, &nbytes) < 0 || nbytes == 0) {
      // Not allocated (fill value) or not queryable: the ordinary path handles it.
      read(layer, t, out);
      raw.done = true;
      return;
    }
    const std::size_t at = raw.bytes.size();
    raw.bytes.resize(at + static_cast<std::size_t>(nbytes));
    std::uint32_t mask = 0;
    h5::check(H5Dread_chunk(d.get(), H5P_DEFAULT, offset, &mask, raw.bytes.data() + at), where, fail);
    if (mask != 0) {  // a filter was skipped for this chunk: not what decode_raw expects
      read(layer, t, out);
      raw.done = true;
      return;
    }
    raw.offsets.push_back(raw.bytes.size());
  }
  raw.shuffle = info.shuffle;
  raw.deflate = info.deflate;
  raw.dtype = l.dtype;
  raw.numel = l.numel;
  raw.chunk = info.chunk;
  raw.where = where + ", step index " + std::to_string(t);
}

void TraceReader::decode_raw(const RawRow& raw, std::span<float> out) {
  if (raw.done) return;
  if (static_cast<std::int64_t>(out.size()) != raw.numel) {
    throw Error(raw.where + ": buffer has " + std::to_string(out.size()) + " elements, expected numel " +
                std::to_string(raw.numel));
  }
  const auto esize = static_cast<std::size_t>(storage_bytes(raw.dtype));
  const std::size_t n = static_cast<std::size_t>(raw.chunk);  // elements of a stored (padded) chunk
  const std::size_t cbytes = n * esize;
  const std::size_t nchunks = raw.offsets.size() - 1;
  if (static_cast<std::int64_t>(nchunks) != (raw.numel + raw.chunk - 1) / raw.chunk) {
    throw TraceError(raw.where + ": expected " + std::to_string((raw.numel + raw.chunk - 1) / raw.chunk) +
                     " chunks, fetched " + std::to_string(nchunks));
  }
  // scratch: [0, cbytes) inflated chunk, [cbytes, 2 cbytes) unshuffled chunk.
  raw.scratch.resize(2 * cbytes);
  unsigned char* inflated = raw.scratch.data();
  unsigned char* plain = raw.scratch.data() + cbytes;
  for (std::size_t k = 0; k < nchunks; ++k) {
    const unsigned char* src = raw.bytes.data() + raw.offsets[k];
    const std::size_t srclen = raw.offsets[k + 1] - raw.offsets[k];
    const unsigned char* data = src;
    if (raw.deflate) {
      uLongf dlen = static_cast<uLongf>(cbytes);
      const int rc = uncompress(inflated, &dlen, src, static_cast<uLong>(srclen));
      if (rc != Z_OK || dlen != cbytes) {
        throw TraceError(raw.where + ": chunk " + std::to_string(k) + " does not inflate to " + std::to_string(cbytes) +
                         " bytes (truncated or corrupt data)");
      }
      data = inflated;
    } else if (srclen != cbytes) {
      throw TraceError(raw.where + ": chunk " + std::to_string(k) + " has " + std::to_string(srclen) +
                       " bytes, expected " + std::to_string(cbytes) + " (truncated or corrupt data)");
    }
    if (raw.shuffle && esize > 1) {
      // HDF5 shuffle: byte j of element i is at j * n + i.
      for (std::size_t j = 0; j < esize; ++j) {
        const unsigned char* plane = data + j * n;
        for (std::size_t i = 0; i < n; ++i) plain[i * esize + j] = plane[i];
      }
      data = plain;
    }
    const std::int64_t pos = static_cast<std::int64_t>(k) * raw.chunk;
    const std::size_t len = static_cast<std::size_t>(std::min(raw.chunk, raw.numel - pos));
    float* dst = out.data() + pos;
    // 16-bit storage: little-endian words widened by `widen` (a distinct type per format, so the
    // conversion inlines into the loop).
    const auto widen16 = [&](auto widen) {
      for (std::size_t i = 0; i < len; ++i) {
        std::uint16_t h;
        std::memcpy(&h, data + 2 * i, 2);
        dst[i] = widen(h);
      }
    };
    switch (raw.dtype) {
      case StorageDtype::kFloat32: std::memcpy(dst, data, len * 4); break;
      case StorageDtype::kFloat16: widen16([](std::uint16_t h) { return half_to_float(h); }); break;
      case StorageDtype::kBFloat16: widen16([](std::uint16_t h) { return bfloat16_to_float(h); }); break;
    }
  }
}

std::optional<std::vector<double>> TraceReader::compute_time_s(std::size_t layer) const {
  if (layer >= impl_->layers.size() || !impl_->has_compute_time[layer]) return std::nullopt;
  return impl_->read_series(layer_group_path(layer) + "/compute_time_s", impl_->layer_ctx(layer, "compute_time_s"));
}
std::optional<std::vector<double>> TraceReader::loss() const { return impl_->read_series("loss", impl_->ctx + ": /loss"); }
std::optional<std::vector<double>> TraceReader::lr() const { return impl_->read_series("lr", impl_->ctx + ": /lr"); }

std::uint64_t TraceReader::file_size_bytes() const {
  std::error_code ec;
  const auto n = fs::file_size(impl_->path, ec);
  return ec ? 0 : n;
}

}  // namespace lgreco::traces
