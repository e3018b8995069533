// The CUDA backend of a build without CUDA: compiled instead of kernels/cuda/ (see cuda_backend.hpp).
#include "core/error.hpp"
#include "kernels/cuda_backend.hpp"

namespace lgreco::kernels::cuda {

int device_count() { return 0; }

std::string describe_backend() { return "CUDA unavailable: this build of lgreco has no CUDA backend"; }

std::unique_ptr<Compressor> make_compressor(const MethodSpec& spec) {
  throw CudaUnavailable("compressor '" + describe(spec) +
                        "' on backend cuda: this build of lgreco has no CUDA backend (configure with "
                        "-DLGRECO_CUDA=ON on a machine with the CUDA toolkit)");
}

}  // namespace lgreco::kernels::cuda
