#include "kernels/cuda/powersgd.hpp"

#include <cuda_runtime.h>

#include <string>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/cublas_lazy.hpp"

#define LGRECO_CUBLAS_CHECK(expr)                                                                        \
  do {                                                                                                   \
    const cublasStatus_t lgreco_st_ = (expr);                                                            \
    if (lgreco_st_ != CUBLAS_STATUS_SUCCESS)                                                             \
      throw ::lgreco::CudaError(std::string("cuBLAS call '") + #expr + "' failed: " +                    \
                                lazy_blas::api().status_name(lgreco_st_) + " (" + lazy_blas::api().status_string(lgreco_st_) + ")"); \
  } while (0)

namespace lgreco::kernels::cuda {
namespace {

constexpr unsigned kThreads = 1024;

__device__ double block_sum(double v) {
  __shared__ double warp_sums[32];
  __shared__ double total;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
  if ((threadIdx.x & 31u) == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    double w = threadIdx.x < blockDim.x / 32 ? warp_sums[threadIdx.x] : 0.0;
    for (int o = 16; o > 0; o >>= 1) w += __shfl_xor_sync(0xFFFFFFFFu, w, o);
    if (threadIdx.x == 0) total = w;
  }
  __syncthreads();
  const double t = total;
  __syncthreads();
  return t;
}

// Column-oriented modified Gram-Schmidt in double, one block (see powersgd.hpp).
__global__ void __launch_bounds__(kThreads) mgs_kernel(float* a, std::int64_t rows, std::int64_t cols, double* d) {
  const std::int64_t total = rows * cols;
  for (std::int64_t i = threadIdx.x; i < total; i += blockDim.x) d[i] = a[i];
  __syncthreads();
  for (std::int64_t c = 0; c < cols; ++c) {
    double nn = 0.0;
    for (std::int64_t i = threadIdx.x; i < rows; i += blockDim.x) nn += d[i * cols + c] * d[i * cols + c];
    nn = block_sum(nn);
    const double norm = sqrt(nn);
    const double inv = norm > 0.0 ? 1.0 / norm : 0.0;
    for (std::int64_t i = threadIdx.x; i < rows; i += blockDim.x) d[i * cols + c] *= inv;
    __syncthreads();
    for (std::int64_t e = c + 1; e < cols; ++e) {
      double dot = 0.0;
      for (std::int64_t i = threadIdx.x; i < rows; i += blockDim.x) dot += d[i * cols + c] * d[i * cols + e];
      dot = block_sum(dot);
      for (std::int64_t i = threadIdx.x; i < rows; i += blockDim.x) d[i * cols + e] -= dot * d[i * cols + c];
      __syncthreads();
    }
  }
  for (std::int64_t i = threadIdx.x; i < total; i += blockDim.x) a[i] = static_cast<float>(d[i]);
}

void gemm(BlasHandle& blas, cublasOperation_t ta, cublasOperation_t tb, std::int64_t m, std::int64_t n, std::int64_t k,
          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float* c, std::int64_t ldc) {
  const float one = 1.0f, zero = 0.0f;
  LGRECO_CHECK(m < (1ll << 31) && n < (1ll << 31) && k < (1ll << 31), "powersgd: matrix dimension beyond 2^31");
  if (m == 0 || n == 0) return;
  LGRECO_CUBLAS_CHECK(lazy_blas::api().sgemm(blas.get(), ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), &one,
                                  a, static_cast<int>(lda), b, static_cast<int>(ldb), &zero, c, static_cast<int>(ldc)));
}

}  // namespace

BlasHandle::BlasHandle() {
  LGRECO_CUBLAS_CHECK(lazy_blas::api().create(&h_));  // loads cuBLAS on first use
  LGRECO_CUBLAS_CHECK(lazy_blas::api().set_math_mode(h_, CUBLAS_PEDANTIC_MATH));  // plain fp32: no TF32, same as the reference
  LGRECO_CUBLAS_CHECK(lazy_blas::api().set_pointer_mode(h_, CUBLAS_POINTER_MODE_HOST));
}

BlasHandle::~BlasHandle() {
  if (h_) lazy_blas::api().destroy(h_);
}

void BlasHandle::set_stream(Stream s) { LGRECO_CUBLAS_CHECK(lazy_blas::api().set_stream(h_, s)); }

void orthogonalize(float* a, std::int64_t rows, std::int64_t cols, Orthogonalization, double* scratch, Stream s) {
  if (rows == 0 || cols == 0) return;
  mgs_kernel<<<1, kThreads, 0, s>>>(a, rows, cols, scratch);
  LGRECO_CUDA_CHECK_LAUNCH();
}

void matmul_mq(BlasHandle& blas, const float* m, std::int64_t n, std::int64_t mcols, const float* q, std::int64_t r,
               float* p) {
  gemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, r, n, mcols, q, r, m, mcols, p, r);
}

void matmul_mtp(BlasHandle& blas, const float* m, std::int64_t n, std::int64_t mcols, const float* p, std::int64_t r,
                float* q) {
  gemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, r, mcols, n, p, r, m, mcols, q, r);
}

void matmul_pqt(BlasHandle& blas, const float* p, std::int64_t n, const float* q, std::int64_t mcols, std::int64_t r,
                float* out) {
  gemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, mcols, n, r, q, r, p, r, out, mcols);
}

void powersgd_step(BlasHandle& blas, const float* m, std::int64_t n, std::int64_t mcols, std::int64_t r,
                   const PowerSgdParams& prm, float* q, float* p_out, float* out, double* scratch, Stream s) {
  LGRECO_CHECK(r >= 1, "cuda::powersgd_step: rank " + std::to_string(r) + ", expected ≥ 1 (rank 0 sends nothing)");
  blas.set_stream(s);
  for (int it = 0; it < prm.power_iterations; ++it) {
    orthogonalize(q, mcols, r, prm.orthogonalization, scratch, s);
    matmul_mq(blas, m, n, mcols, q, r, p_out);
    orthogonalize(p_out, n, r, prm.orthogonalization, scratch, s);
    matmul_mtp(blas, m, n, mcols, p_out, r, q);
  }
  matmul_pqt(blas, p_out, n, q, mcols, r, out);
}

}  // namespace lgreco::kernels::cuda
