#include "kernels/cuda/cublas_lazy.hpp"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include "core/error.hpp"

namespace lgreco::kernels::cuda::lazy_blas {
namespace {

// The soname of the cuBLAS this tree was compiled against (its ABI is fixed per major version).
#define LGRECO_STR2(x) #x
#define LGRECO_STR(x) LGRECO_STR2(x)
constexpr const char* kSoname = "libcublas.so." LGRECO_STR(CUBLAS_VER_MAJOR);

template <class F>
void resolve(void* lib, const char* symbol, F& out, const std::string& where) {
  void* p = dlsym(lib, symbol);
  if (!p) throw CudaError(where + ": symbol " + symbol + " not found");
  out = reinterpret_cast<F>(p);
}

Api load() {
  std::string tried;
  void* lib = nullptr;
#ifdef LGRECO_CUBLAS_DIR
  const std::string first = std::string(LGRECO_CUBLAS_DIR) + "/" + kSoname;
  lib = dlopen(first.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) tried = first + " (" + dlerror() + "), ";
#endif
  if (!lib) {
    lib = dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      tried += kSoname;
      throw CudaError(std::string("cuBLAS: cannot load ") + tried + " (" + dlerror() +
                      "); PowerSGD on a GPU needs the CUDA toolkit's cuBLAS (LD_LIBRARY_PATH)");
    }
  }
  const std::string where = std::string("cuBLAS (") + kSoname + ")";
  Api a;
  resolve(lib, "cublasCreate_v2", a.create, where);
  resolve(lib, "cublasDestroy_v2", a.destroy, where);
  resolve(lib, "cublasSetStream_v2", a.set_stream, where);
  resolve(lib, "cublasSetMathMode", a.set_math_mode, where);
  resolve(lib, "cublasSetPointerMode_v2", a.set_pointer_mode, where);
  resolve(lib, "cublasSgemm_v2", a.sgemm, where);
  resolve(lib, "cublasGetStatusName", a.status_name, where);
  resolve(lib, "cublasGetStatusString", a.status_string, where);
  return a;  // the library stays loaded for the life of the process
}

}  // namespace

const Api& api() {
  static std::once_flag once;
  static Api a;
  std::call_once(once, [] { a = load(); });  // a throw leaves the flag unset: the next call retries
  return a;
}

}  // namespace lgreco::kernels::cuda::lazy_blas
