#pragma once
/// CUDA PowerSGD: the names of kernels/cpu/powersgd.hpp on device pointers. Products by cuBLAS
/// (sgemm, fp32 math mode, no TF32), orthogonalisation on the device in double.
///
/// Layout as the reference: M n×m, Q m×r, P n×r, M̂ n×m, all row-major. cuBLAS is column-major,
/// so a row-major a×b matrix is used as its column-major b×a transpose:
///   P = M·Q   ⇔ Pᵀ = Qᵀ·Mᵀ       sgemm(N, N, r, n, m)
///   Q = Mᵀ·P  ⇔ Qᵀ = Pᵀ·M        sgemm(N, T, r, m, n)
///   M̂ = P·Qᵀ  ⇔ M̂ᵀ = Q·Pᵀ        sgemm(T, N, m, n, r)
/// Orthogonalisation: modified Gram-Schmidt in double (column-oriented: normalise column c, a
/// zero column stays zero, then remove it from every later column), by one thread block, for both
/// kGramSchmidt and kQr. The reference uses Householder QR for kQr; both give an orthonormal basis
/// of the same column space (signs and rotations may differ), and M̂ = P·(MᵀP)ᵀ = P·Pᵀ·M depends
/// only on that space, so M̂ and the residual agree within rounding (tests compare M̂, not P).
/// Cost: 2·n·m·r flops per product; orthogonalisation O(rows·r²) on one SM, fine for r ≤ 32.
#include <cstdint>

#include "kernels/cuda/device.hpp"
#include "kernels/method.hpp"

struct cublasContext;

namespace lgreco::kernels::cuda {

/// Owning cuBLAS handle bound to a stream (fp32 math, no TF32); movable, not copyable.
class BlasHandle {
 public:
  /// Creates the handle; throws CudaError on failure.
  BlasHandle();
  ~BlasHandle();
  BlasHandle(const BlasHandle&) = delete;
  BlasHandle& operator=(const BlasHandle&) = delete;
  /// Routes later calls to `s`.
  void set_stream(Stream s);
  /// The raw handle.
  cublasContext* get() const { return h_; }

 private:
  cublasContext* h_ = nullptr;
};

/// Device doubles orthogonalize needs for a rows×cols matrix.
constexpr std::uint64_t orthogonalize_scratch_doubles(std::int64_t rows, std::int64_t cols) {
  return static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(cols);
}

/// Orthonormalises the columns of a row-major rows×cols matrix in place (see above).
void orthogonalize(float* a, std::int64_t rows, std::int64_t cols, Orthogonalization method, double* scratch, Stream s);

/// P = M·Q (M n×m, Q m×r, P n×r).
void matmul_mq(BlasHandle& blas, const float* m, std::int64_t n, std::int64_t mcols, const float* q, std::int64_t r,
               float* p);
/// Q = Mᵀ·P.
void matmul_mtp(BlasHandle& blas, const float* m, std::int64_t n, std::int64_t mcols, const float* p, std::int64_t r,
                float* q);
/// out = P·Qᵀ.
void matmul_pqt(BlasHandle& blas, const float* p, std::int64_t n, const float* q, std::int64_t mcols, std::int64_t r,
                float* out);

/// One PowerSGD step on device M (n×m) with rank r ≥ 1: `q` (m×r) holds the starting Q (warm
/// start or fresh draws, chosen by the caller as cpu::powersgd_step does) and receives the new Q;
/// writes P (n×r) and M̂ (n×m). `scratch` holds orthogonalize_scratch_doubles(max(n, m), r).
void powersgd_step(BlasHandle& blas, const float* m, std::int64_t n, std::int64_t mcols, std::int64_t r,
                   const PowerSgdParams& p, float* q, float* p_out, float* out, double* scratch, Stream s);

}  // namespace lgreco::kernels::cuda
