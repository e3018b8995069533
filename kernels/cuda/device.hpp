#pragma once
/// CUDA runtime facts and device memory for the CUDA backend, in a plain header (no CUDA headers:
/// callers are ordinary C++ translation units).
///
/// "No device" is a normal answer: device_count() returns 0 when the runtime reports no device or
/// a driver older than the runtime, and throws CudaError only for other failures.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

/// The CUDA runtime's stream handle type (cudaStream_t is `CUstream_st*`); nullptr = default stream.
struct CUstream_st;
/// The CUDA runtime's event type (cudaEvent_t is `CUevent_st*`).
struct CUevent_st;

namespace lgreco::kernels::cuda {

/// A CUDA stream as the launchers take it (identical to cudaStream_t).
using Stream = CUstream_st*;

/// Number of usable CUDA devices; 0 when there is none or the driver is missing/too old.
int device_count();

/// Name of device `device` (e.g. "NVIDIA H200"); throws CudaUnavailable when there is no device.
std::string device_name(int device = 0);

/// Runtime version as "major.minor" (e.g. "13.0"), known without a device.
std::string runtime_version();

/// Number of streaming multiprocessors of the current device (for grid sizing; cached per device).
int multiprocessor_count();

/// Blocks until all work on `stream` is finished; throws CudaError on an asynchronous failure.
void synchronize(Stream stream);

/// Copies `bytes` from host to device memory; the data is on the device when it returns.
void copy_to_device(void* dst, const void* src, std::size_t bytes);

/// Copies `bytes` from device to host memory (waits for the copy; does not wait for other streams:
/// synchronize the producing stream first).
void copy_to_host(void* dst, const void* src, std::size_t bytes);

/// Device-to-device copy of `bytes`, ordered on `stream`.
void copy_on_device(void* dst, const void* src, std::size_t bytes, Stream stream);

/// Sets `bytes` of device memory to zero, ordered on `stream`.
void zero_on_device(void* dst, std::size_t bytes, Stream stream);

/// Owning device allocation of raw bytes (cudaMalloc / cudaFree); movable, not copyable.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  /// Allocates `bytes` (nothing for 0); throws CudaError when the allocation fails.
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  /// Grows to at least `bytes` (contents are not kept when it grows).
  void reserve(std::size_t bytes);
  /// The device address (nullptr when empty).
  void* data() const { return ptr_; }
  /// Typed view of the device address.
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  /// Allocated size in bytes.
  std::size_t size_bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

/// Times work on a stream with CUDA events (GPU time between start() and stop(), in seconds).
class EventTimer {
 public:
  /// Creates the two events; throws CudaError on failure.
  EventTimer();
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  /// Records the start event on `stream`.
  void start(Stream stream);
  /// Records the stop event on `stream`, waits for it and returns the elapsed time in seconds.
  double stop_s(Stream stream);

 private:
  ::CUevent_st* start_ = nullptr;
  ::CUevent_st* stop_ = nullptr;
};

/// Owning CUDA stream (created non-blocking); movable, not copyable.
class StreamHandle {
 public:
  /// Creates a stream; throws CudaError on failure.
  StreamHandle();
  ~StreamHandle();
  StreamHandle(StreamHandle&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  StreamHandle(const StreamHandle&) = delete;
  StreamHandle& operator=(const StreamHandle&) = delete;
  StreamHandle& operator=(StreamHandle&&) = delete;
  /// The raw stream.
  Stream get() const { return s_; }

 private:
  Stream s_ = nullptr;
};

}  // namespace lgreco::kernels::cuda
