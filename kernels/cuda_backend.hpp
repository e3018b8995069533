#pragma once
/// The CUDA backend's entry points, as seen by the rest of kernels/ (plain C++, no CUDA headers).
///
/// Build contract: when CUDA is built (LGRECO_HAVE_CUDA) and kernels/cuda/CMakeLists.txt exists,
/// that file defines the STATIC library `lgreco_kernels_cuda` (linking lgreco_kernels) which
/// implements these functions; otherwise kernels/cuda_unavailable.cpp is compiled into
/// lgreco_kernels and implements them as "no CUDA": device_count() = 0, make_compressor throws
/// CudaUnavailable. No other file tests for CUDA.
#include <memory>
#include <string>

#include "kernels/compressor.hpp"

namespace lgreco::kernels::cuda {

/// Number of usable CUDA devices; 0 when the build has no CUDA or the machine no device/driver.
int device_count();

/// Human description of the backend ("CUDA 13.0, NVIDIA H200", or why it is unavailable).
std::string describe_backend();

/// A compressor running on device 0; throws CudaUnavailable when device_count() == 0 or the build
/// has no CUDA backend, and ConfigError for a method the CUDA backend does not implement.
std::unique_ptr<Compressor> make_compressor(const MethodSpec& spec);

}  // namespace lgreco::kernels::cuda
