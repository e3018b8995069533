#pragma once
/// cuBLAS, loaded on first use. Linking libcublas into a program costs every start of it ~90 ms and
/// ~215 MiB of resident memory (the library's relocations and static data, measured on the 2-core
/// development machine; docs/performance.md "Start-up"), although only PowerSGD on a GPU calls it.
/// So `lgreco` and the Python native module do not link it: the first BlasHandle dlopen()s it
/// (the toolkit's library directory found at configure time first, then the loader's search path)
/// and resolves the few entry points below. Thread-safe; a missing library is a CudaError naming it.
#include <cublas_v2.h>

namespace lgreco::kernels::cuda::lazy_blas {

/// The entry points lgreco uses, typed from cublas_v2.h (the _v2 symbols its macros name).
struct Api {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSetPointerMode_v2) set_pointer_mode = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  decltype(&cublasGetStatusName) status_name = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
};

/// Loads the library once and returns its entry points; throws CudaError when it cannot.
const Api& api();

}  // namespace lgreco::kernels::cuda::lazy_blas
