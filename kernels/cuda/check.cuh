#pragma once
// Error checking shared by the .cu files of the CUDA backend (CUDA headers allowed here only).
#include <cuda_runtime.h>

#include <string>

#include "core/error.hpp"

namespace lgreco::kernels::cuda::detail {

[[noreturn]] inline void throw_cuda(cudaError_t e, const char* expr, const char* file, int line) {
  throw CudaError(std::string("CUDA call '") + expr + "' failed at " + file + ":" + std::to_string(line) + ": " +
                  cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

/// Grid size for grid-stride loops: enough blocks to fill the device, never more than needed.
inline unsigned grid_for(std::size_t items, unsigned block, unsigned max_blocks) {
  const std::size_t need = (items + block - 1) / block;
  return static_cast<unsigned>(need == 0 ? 1 : (need < max_blocks ? need : max_blocks));
}

}  // namespace lgreco::kernels::cuda::detail

/// Throws lgreco::CudaError naming the call, the place and the runtime's error text.
#define LGRECO_CUDA_CHECK(expr)                                                              \
  do {                                                                                       \
    const cudaError_t lgreco_e_ = (expr);                                                    \
    if (lgreco_e_ != cudaSuccess) ::lgreco::kernels::cuda::detail::throw_cuda(lgreco_e_, #expr, __FILE__, __LINE__); \
  } while (0)

/// Checks the launch of the kernel just issued (configuration errors surface here).
#define LGRECO_CUDA_CHECK_LAUNCH() LGRECO_CUDA_CHECK(cudaGetLastError())
