#pragma once
/// The traces module's HDF5 layer, public for the modules that read and write HDF5 documents of
/// their own (the planner's tables HDF5 form): RAII handles and typed attribute and dataset helpers
/// over the HDF5 1.10 C API. Include it only from .cpp files (it brings <hdf5.h>; a user links
/// HDF5 privately). Every failure throws TraceError prefixed by the caller's context.
#include <hdf5.h>

#include <cstdint>
#include <climits>
#include <string>
#include <utility>
#include <vector>

namespace lgreco::traces::h5 {

/// Silences HDF5's own error-stack printing and turns off HDF5's exit-time shutdown (once per
/// process; see h5.cpp for why); call before any HDF5 use.
void init();

/// Owns one HDF5 identifier of any type (closed with H5Idec_ref).
class Handle {
 public:
  Handle() = default;
  explicit Handle(hid_t id) : id_(id) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, H5I_INVALID_HID);
    }
    return *this;
  }
  ~Handle() { reset(); }
  void reset() noexcept {
    if (id_ >= 0) H5Idec_ref(id_);
    id_ = H5I_INVALID_HID;
  }
  hid_t get() const { return id_; }
  /// Gives up ownership (the caller closes the id).
  hid_t release() noexcept { return std::exchange(id_, H5I_INVALID_HID); }
  bool valid() const { return id_ >= 0; }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

/// Throws TraceError(context + ": " + what) when `id` is negative; otherwise owns it.
Handle checked(hid_t id, const std::string& context, const std::string& what);
/// Throws TraceError(context + ": " + what) when `status` is negative.
void check(herr_t status, const std::string& context, const std::string& what);

/// The file type used for binary16 (IEEE half, little endian), as h5py creates it.
Handle float16_type();

/// Whether an attribute exists on `loc`.
bool has_attr(hid_t loc, const std::string& name);
/// Attribute writers (variable-length UTF-8 strings, int64 scalars, int64 1-D arrays).
void write_attr(hid_t loc, const std::string& name, const std::string& value, const std::string& context);
void write_attr(hid_t loc, const std::string& name, std::int64_t value, const std::string& context);
void write_attr(hid_t loc, const std::string& name, const std::vector<std::int64_t>& value, const std::string& context);
/// Attribute readers: accept fixed or variable-length strings; integer scalars or 1-element arrays
/// of any integer type up to 64 bits; errors say which attribute is missing or has the wrong type.
/// Integers are exact or refused: an unsigned 64-bit value beyond int64 is an error, never clipped.
std::string read_attr_string(hid_t loc, const std::string& name, const std::string& context);
std::vector<std::int64_t> read_attr_int_array(hid_t loc, const std::string& name, const std::string& context);
/// One integer in [lo, hi]; the error names the attribute, the value and the range
/// ("attribute 'world_size' is 4294967304, expected 1 to 2147483647").
std::int64_t read_attr_int(hid_t loc, const std::string& name, const std::string& context,
                           std::int64_t lo = INT64_MIN, std::int64_t hi = INT64_MAX);

/// Whether `path` names an existing link below `loc` (intermediate groups checked one by one).
bool exists(hid_t loc, const std::string& path);
/// Dimensions of a dataset's dataspace (TraceError when one exceeds int64).
std::vector<std::int64_t> dataset_dims(hid_t dset, const std::string& context);
/// "[2, 3]".
std::string format_dims(const std::vector<std::int64_t>& dims);

}  // namespace lgreco::traces::h5
