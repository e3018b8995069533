#include "traces/writer.hpp"

#include <set>

#include "core/error.hpp"
#include "core/int_math.hpp"
#include "core/provenance.hpp"
#include "traces/hdf5.hpp"
#include "traces/half.hpp"

namespace lgreco::traces {

struct TraceWriter::Impl {
  AtomicPath path;  // declared first: destroyed last, after every HDF5 handle is closed
  std::string ctx;  // "trace <dest>"
  TraceHeader header;
  std::vector<TraceLayer> layers;
  TraceWriterOptions options;
  h5::Handle file;
  std::vector<h5::Handle> grads;
  std::vector<std::int64_t> rows;                 // current extent along T per dataset
  std::vector<std::vector<bool>> written;         // [layer][t]
  std::vector<std::int64_t> steps;
  std::vector<std::vector<double>> compute_time;  // empty = absent
  std::vector<double> loss, lr;
  bool has_loss = false, has_lr = false;
  std::vector<std::uint16_t> scratch;

  Impl(const std::filesystem::path& dest, Overwrite policy) : path(dest, policy), ctx("trace " + dest.string()) {}

  std::string layer_ctx(std::size_t i) const {
    return ctx + ": layer '" + layers[i].name + "' (" + layer_group_path(i) + "/grad)";
  }
  void create();
  void write_series(const std::string& name, const std::vector<double>& v, const std::string& what);
};

namespace {

void check_layers(const std::vector<TraceLayer>& layers, const std::string& ctx) {
  std::set<std::string> names;
  std::set<std::int64_t> orders;
  const auto n = static_cast<std::int64_t>(layers.size());
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const auto& l = layers[i];
    const std::string where = ctx + ": layer " + std::to_string(i) + " '" + l.name + "'";
    if (l.name.empty()) throw ConfigError(ctx + ": layer " + std::to_string(i) + " has an empty name");
    if (!names.insert(l.name).second) throw ConfigError(where + ": duplicate layer name");
    if (l.shape.empty()) throw ConfigError(where + ": shape is empty (record a scalar as [1])");
    for (auto d : l.shape) {
      if (d < 1) throw ConfigError(where + ": shape " + h5::format_dims(l.shape) + " has a dimension < 1");
    }
    if (l.bucket < 0) throw ConfigError(where + ": bucket " + std::to_string(l.bucket) + " must be >= 0");
    if (l.backward_order < 0 || l.backward_order >= n || !orders.insert(l.backward_order).second) {
      throw ConfigError(where + ": backward_order " + std::to_string(l.backward_order) +
                        " is out of range or repeated (the layers' backward orders must be a permutation of 0 to " +
                        std::to_string(n - 1) + ")");
    }
    const auto elements = shape_numel(l.shape);
    if (!elements) throw ConfigError(where + ": shape " + h5::format_dims(l.shape) + " has more elements than an int64 holds");
    if (l.numel != *elements) {
      throw ConfigError(where + ": numel " + std::to_string(l.numel) + " differs from the product of shape " +
                        h5::format_dims(l.shape) + " = " + std::to_string(*elements));
    }
  }
}

h5::Handle storage_type(StorageDtype d) {
  switch (d) {
    case StorageDtype::kFloat32: return h5::Handle(H5Tcopy(H5T_IEEE_F32LE));
    case StorageDtype::kFloat16: return h5::float16_type();
    case StorageDtype::kBFloat16: return h5::Handle(H5Tcopy(H5T_STD_U16LE));
  }
  return h5::Handle();
}

}  // namespace

void TraceWriter::Impl::create() {
  h5::Handle fapl = h5::checked(H5Pcreate(H5P_FILE_ACCESS), ctx, "cannot create property list");
  h5::check(H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG), ctx, "cannot set close degree");
  const std::string tmp = path.temp_path().string();
  file = h5::checked(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), ctx,
                     "cannot create temporary file '" + tmp + "'");
  const hid_t root = file.get();
  h5::write_attr(root, "format", std::string(kTraceFormatName), ctx);
  h5::write_attr(root, "version", kTraceFormatVersion, ctx);
  h5::write_attr(root, "model", header.model, ctx);
  h5::write_attr(root, "world_size", header.world_size, ctx);
  h5::write_attr(root, "dtype", std::string(to_string(header.dtype)), ctx);
  h5::write_attr(root, "producer", header.producer, ctx);
  h5::write_attr(root, "created", header.created, ctx);
  if (!header.producer_config.empty()) h5::write_attr(root, "producer_config", header.producer_config, ctx);
  h5::Handle group = h5::checked(H5Gcreate2(root, "layers", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), ctx,
                                 "cannot create /layers");
  // No chunk cache: whole chunks are written straight through, so memory stays at one chunk.
  h5::Handle dapl = h5::checked(H5Pcreate(H5P_DATASET_ACCESS), ctx, "cannot create property list");
  h5::check(H5Pset_chunk_cache(dapl.get(), 0, 0, 1.0), ctx, "cannot set the chunk cache");
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const auto& l = layers[i];
    const std::string gpath = layer_group_path(i);
    const std::string lctx = ctx + ": layer '" + l.name + "' (" + gpath + ")";
    h5::Handle g = h5::checked(H5Gcreate2(root, gpath.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), lctx,
                               "cannot create group");
    h5::write_attr(g.get(), "name", l.name, lctx);
    h5::write_attr(g.get(), "shape", l.shape, lctx);
    h5::write_attr(g.get(), "numel", l.numel, lctx);
    h5::write_attr(g.get(), "kind", std::string(to_string(l.kind)), lctx);
    h5::write_attr(g.get(), "bucket", l.bucket, lctx);
    h5::write_attr(g.get(), "backward_order", l.backward_order, lctx);
    h5::write_attr(g.get(), "dtype", std::string(to_string(l.dtype)), lctx);
    const hsize_t dims[2] = {0, static_cast<hsize_t>(l.numel)};
    const hsize_t maxdims[2] = {H5S_UNLIMITED, static_cast<hsize_t>(l.numel)};
    const hsize_t chunk[2] = {1, static_cast<hsize_t>(chunk_elements(l.numel, l.dtype))};
    h5::Handle space = h5::checked(H5Screate_simple(2, dims, maxdims), lctx, "cannot create dataspace");
    h5::Handle dcpl = h5::checked(H5Pcreate(H5P_DATASET_CREATE), lctx, "cannot create property list");
    h5::check(H5Pset_chunk(dcpl.get(), 2, chunk), lctx, "cannot set chunking");
    if (options.shuffle) h5::check(H5Pset_shuffle(dcpl.get()), lctx, "cannot set the shuffle filter");
    if (options.deflate_level > 0) {
      h5::check(H5Pset_deflate(dcpl.get(), static_cast<unsigned>(options.deflate_level)), lctx, "cannot set deflate");
    }
    h5::Handle type = storage_type(l.dtype);
    h5::Handle d = h5::checked(H5Dcreate2(g.get(), "grad", type.get(), space.get(), H5P_DEFAULT, dcpl.get(), dapl.get()),
                               lctx, "cannot create dataset grad");
    if (l.dtype == StorageDtype::kBFloat16) h5::write_attr(d.get(), "dtype", std::string("bfloat16"), lctx);
    grads.push_back(std::move(d));
  }
  rows.assign(layers.size(), 0);
  written.assign(layers.size(), {});
  compute_time.assign(layers.size(), {});
}

TraceWriter::TraceWriter(const std::filesystem::path& dest, TraceHeader header, std::vector<TraceLayer> layers,
                         Overwrite policy, TraceWriterOptions options)
    : impl_(std::make_unique<Impl>(dest, policy)) {
  h5::init();
  if (options.deflate_level < 0 || options.deflate_level > 9) {
    throw ConfigError(impl_->ctx + ": deflate level " + std::to_string(options.deflate_level) + " is not in 0..9");
  }
  if (header.world_size < 1) {
    throw ConfigError(impl_->ctx + ": world_size " + std::to_string(header.world_size) + " must be at least 1");
  }
  check_layers(layers, impl_->ctx);
  if (header.created.empty()) header.created = utc_now_iso8601();
  impl_->header = std::move(header);
  impl_->layers = std::move(layers);
  impl_->options = options;
  impl_->create();
}

TraceWriter::~TraceWriter() = default;

std::size_t TraceWriter::add_step(std::int64_t step_id) {
  auto& s = impl_->steps;
  if (!s.empty() && step_id <= s.back()) {
    throw ConfigError(impl_->ctx + ": step id " + std::to_string(step_id) + " does not follow " +
                      std::to_string(s.back()) + " (step ids must be strictly increasing)");
  }
  s.push_back(step_id);
  for (auto& w : impl_->written) w.push_back(false);
  return s.size() - 1;
}

std::size_t TraceWriter::num_steps() const { return impl_->steps.size(); }
const std::vector<TraceLayer>& TraceWriter::layers() const { return impl_->layers; }

void TraceWriter::write(std::size_t layer, std::size_t t, std::span<const float> values) {
  Impl& m = *impl_;
  if (layer >= m.layers.size()) {
    throw ConfigError(m.ctx + ": layer index " + std::to_string(layer) + " out of range (" +
                      std::to_string(m.layers.size()) + " layers)");
  }
  const std::string ctx = m.layer_ctx(layer);
  const TraceLayer& l = m.layers[layer];
  if (t >= m.steps.size()) {
    throw ConfigError(ctx + ": step index " + std::to_string(t) + " out of range (" + std::to_string(m.steps.size()) +
                      " steps added)");
  }
  if (static_cast<std::int64_t>(values.size()) != l.numel) {
    throw ConfigError(ctx + ": got " + std::to_string(values.size()) + " values, expected numel " + std::to_string(l.numel));
  }
  if (m.written[layer][t]) throw ConfigError(ctx + ": step index " + std::to_string(t) + " written twice");
  const hid_t d = m.grads[layer].get();
  if (m.rows[layer] < static_cast<std::int64_t>(t) + 1) {
    const hsize_t dims[2] = {static_cast<hsize_t>(t) + 1, static_cast<hsize_t>(l.numel)};
    h5::check(H5Dset_extent(d, dims), ctx, "cannot extend the dataset");
    m.rows[layer] = static_cast<std::int64_t>(t) + 1;
  }
  h5::Handle fspace = h5::checked(H5Dget_space(d), ctx, "cannot get the dataspace");
  const std::int64_t piece = l.dtype == StorageDtype::kFloat32 ? l.numel : chunk_elements(l.numel, l.dtype);
  for (std::int64_t off = 0; off < l.numel; off += piece) {
    const std::int64_t len = std::min(piece, l.numel - off);
    const hsize_t start[2] = {static_cast<hsize_t>(t), static_cast<hsize_t>(off)};
    const hsize_t count[2] = {1, static_cast<hsize_t>(len)};
    h5::check(H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, start, nullptr, count, nullptr), ctx,
              "cannot select the step");
    const hsize_t mcount = static_cast<hsize_t>(len);
    h5::Handle mspace = h5::checked(H5Screate_simple(1, &mcount, nullptr), ctx, "cannot create dataspace");
    herr_t st;
    if (l.dtype == StorageDtype::kFloat32) {
      st = H5Dwrite(d, H5T_NATIVE_FLOAT, mspace.get(), fspace.get(), H5P_DEFAULT, values.data() + off);
    } else {
      m.scratch.resize(static_cast<std::size_t>(len));
      const float* src = values.data() + off;
      if (l.dtype == StorageDtype::kFloat16) {
        for (std::int64_t k = 0; k < len; ++k) m.scratch[k] = float_to_half(src[k]);
      } else {
        for (std::int64_t k = 0; k < len; ++k) m.scratch[k] = float_to_bfloat16(src[k]);
      }
      // Memory type = file type: HDF5 copies the encoded bits without conversion.
      h5::Handle mtype = h5::checked(H5Dget_type(d), ctx, "cannot get the dataset type");
      st = H5Dwrite(d, mtype.get(), mspace.get(), fspace.get(), H5P_DEFAULT, m.scratch.data());
    }
    h5::check(st, ctx, "cannot write step index " + std::to_string(t) + " (disk full?)");
  }
  m.written[layer][t] = true;
}

void TraceWriter::set_compute_time_s(std::size_t layer, std::vector<double> seconds) {
  if (layer >= impl_->layers.size()) throw ConfigError(impl_->ctx + ": layer index " + std::to_string(layer) + " out of range");
  impl_->compute_time[layer] = std::move(seconds);
}

void TraceWriter::set_loss(std::vector<double> loss) {
  impl_->loss = std::move(loss);
  impl_->has_loss = true;
}

void TraceWriter::set_lr(std::vector<double> lr) {
  impl_->lr = std::move(lr);
  impl_->has_lr = true;
}

void TraceWriter::Impl::write_series(const std::string& name, const std::vector<double>& v, const std::string& what) {
  if (v.size() != steps.size()) {
    throw ConfigError(what + ": has " + std::to_string(v.size()) + " values, expected one per step (" +
                      std::to_string(steps.size()) + ")");
  }
  const hsize_t n = v.size();
  h5::Handle space = h5::checked(H5Screate_simple(1, &n, nullptr), what, "cannot create dataspace");
  h5::Handle d = h5::checked(H5Dcreate2(file.get(), name.c_str(), H5T_IEEE_F64LE, space.get(), H5P_DEFAULT,
                                        H5P_DEFAULT, H5P_DEFAULT), what, "cannot create dataset");
  if (n > 0) h5::check(H5Dwrite(d.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), what, "cannot write");
}

void TraceWriter::finish() {
  Impl& m = *impl_;
  for (std::size_t i = 0; i < m.layers.size(); ++i) {
    for (std::size_t t = 0; t < m.steps.size(); ++t) {
      if (!m.written[i][t]) {
        throw TraceError(m.layer_ctx(i) + ": step index " + std::to_string(t) + " (step id " +
                         std::to_string(m.steps[t]) + ") was never written");
      }
    }
  }
  const hsize_t n = m.steps.size();
  {
    h5::Handle space = h5::checked(H5Screate_simple(1, &n, nullptr), m.ctx, "cannot create dataspace");
    h5::Handle d = h5::checked(H5Dcreate2(m.file.get(), "steps", H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT,
                                          H5P_DEFAULT), m.ctx, "cannot create /steps");
    if (n > 0) {
      h5::check(H5Dwrite(d.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, m.steps.data()), m.ctx,
                "cannot write /steps");
    }
  }
  for (std::size_t i = 0; i < m.layers.size(); ++i) {
    if (m.compute_time[i].empty()) continue;  // absent (an empty series cannot be told from absent)
    m.write_series(layer_group_path(i) + "/compute_time_s", m.compute_time[i],
                   m.ctx + ": layer '" + m.layers[i].name + "' (" + layer_group_path(i) + "/compute_time_s)");
  }
  if (m.has_loss) m.write_series("loss", m.loss, m.ctx + ": /loss");
  if (m.has_lr) m.write_series("lr", m.lr, m.ctx + ": /lr");
  m.grads.clear();
  h5::check(H5Fflush(m.file.get(), H5F_SCOPE_GLOBAL), m.ctx, "cannot flush (disk full?)");
  // Close explicitly to see the status (disk full shows up here).
  const herr_t st = H5Fclose(m.file.release());
  h5::check(st, m.ctx, "cannot close the file (disk full?)");
  m.path.commit();
}

}  // namespace lgreco::traces
