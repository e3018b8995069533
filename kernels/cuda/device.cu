#include "kernels/cuda/device.hpp"

#include <cuda_runtime.h>

#include <atomic>

#include "kernels/cuda/check.cuh"

namespace lgreco::kernels::cuda {

int device_count() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver || e == cudaErrorInitializationError ||
      e == cudaErrorCompatNotSupportedOnDevice) {
    cudaGetLastError();  // clear the sticky "last error" so later calls start clean
    return 0;
  }
  LGRECO_CUDA_CHECK(e);
  return n;
}

std::string device_name(int device) {
  if (device_count() <= device) throw CudaUnavailable("no CUDA device " + std::to_string(device) + " on this machine");
  cudaDeviceProp prop{};
  LGRECO_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return prop.name;
}

std::string runtime_version() {
  int v = 0;
  LGRECO_CUDA_CHECK(cudaRuntimeGetVersion(&v));
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

int multiprocessor_count() {
  // Launchers size their grids with it: query each device once (a per-launch query costs about a
  // microsecond, which shows in the fixed overhead of small layers).
  constexpr int kMaxDevices = 64;
  static std::atomic<int> cache[kMaxDevices];
  int dev = 0;
  LGRECO_CUDA_CHECK(cudaGetDevice(&dev));
  if (dev < kMaxDevices && cache[dev].load(std::memory_order_relaxed) > 0) return cache[dev].load(std::memory_order_relaxed);
  int sms = 0;
  LGRECO_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  if (dev < kMaxDevices) cache[dev].store(sms, std::memory_order_relaxed);
  return sms;
}

void synchronize(Stream stream) { LGRECO_CUDA_CHECK(cudaStreamSynchronize(stream)); }

void copy_to_device(void* dst, const void* src, std::size_t bytes) {
  if (!bytes) return;
  // A pageable host-to-device cudaMemcpy may return before the DMA has landed; kernels on a
  // non-blocking stream would not wait for it. Waiting for the legacy stream makes the data visible.
  LGRECO_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, nullptr));
  LGRECO_CUDA_CHECK(cudaStreamSynchronize(nullptr));
}

void copy_to_host(void* dst, const void* src, std::size_t bytes) {
  if (bytes) LGRECO_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}

void copy_on_device(void* dst, const void* src, std::size_t bytes, Stream stream) {
  if (bytes) LGRECO_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
}

void zero_on_device(void* dst, std::size_t bytes, Stream stream) {
  if (bytes) LGRECO_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, stream));
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) {
  if (bytes) {
    LGRECO_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
    bytes_ = bytes;
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);  // destructors do not throw; a failed free only leaks
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) cudaFree(ptr_);
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::reserve(std::size_t bytes) {
  if (bytes <= bytes_) return;
  DeviceBuffer fresh(bytes);
  *this = std::move(fresh);
}

EventTimer::EventTimer() {
  LGRECO_CUDA_CHECK(cudaEventCreate(&start_));
  LGRECO_CUDA_CHECK(cudaEventCreate(&stop_));
}

EventTimer::~EventTimer() {
  if (start_) cudaEventDestroy(start_);
  if (stop_) cudaEventDestroy(stop_);
}

void EventTimer::start(Stream stream) { LGRECO_CUDA_CHECK(cudaEventRecord(start_, stream)); }

double EventTimer::stop_s(Stream stream) {
  LGRECO_CUDA_CHECK(cudaEventRecord(stop_, stream));
  LGRECO_CUDA_CHECK(cudaEventSynchronize(stop_));
  float ms = 0.0f;
  LGRECO_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return static_cast<double>(ms) * 1e-3;
}

StreamHandle::StreamHandle() { LGRECO_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }

StreamHandle::~StreamHandle() {
  if (s_) cudaStreamDestroy(s_);
}

}  // namespace lgreco::kernels::cuda
