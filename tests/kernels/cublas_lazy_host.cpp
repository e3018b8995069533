// cuBLAS is loaded on first use (kernels/cuda/cublas_lazy.hpp), not at program start. Host-only:
// loading the library and resolving its entry points needs no device. Checked on this process,
// which links lgreco_kernels_cuda as the lgreco binary and the Python module do:
// - before the first call no libcublas is mapped (so starting lgreco does not pay for it);
// - the first call maps it and resolves every entry point; a later call returns the same table;
// - the resolved functions work (cublasGetStatusString is host code).
#include <cstdio>
#include <fstream>
#include <string>

#include "kernels/cuda/cublas_lazy.hpp"
#include "tests/support/gpu_check.hpp"

namespace {

using lgreco::testing::CheckFailure;

bool cublas_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find("libcublas.so") != std::string::npos) return true;
  return false;
}

void check(bool ok, const char* what) {
  if (!ok) throw CheckFailure(what);
}

void run() {
  namespace lb = lgreco::kernels::cuda::lazy_blas;
  check(!cublas_mapped(), "libcublas is mapped before the first use (is it linked again?)");
  const lb::Api& a = lb::api();
  check(cublas_mapped(), "libcublas is not mapped after api()");
  check(a.create && a.destroy && a.set_stream && a.set_math_mode && a.set_pointer_mode && a.sgemm && a.status_name &&
            a.status_string,
        "an entry point is null");
  check(&lb::api() == &a, "a second call returned another table");
  const std::string name = a.status_name(CUBLAS_STATUS_NOT_INITIALIZED);
  check(name == "CUBLAS_STATUS_NOT_INITIALIZED", "cublasGetStatusName gave an unexpected name");
  std::printf("cuBLAS loaded on first use; status name: %s\n", name.c_str());
}

}  // namespace

int main() { return lgreco::testing::run_gpu_tests(1, {{"cuBLAS is loaded on first use", run}}); }
