#pragma once
/// Error feedback on the device, the rule of kernels/error_feedback.hpp element-wise in fp32:
///   acc = g + e;  c = C(acc);  e ← acc − c.
/// The decompression launchers of quantize.hpp fuse the last step (EfFuse); these two kernels are
/// the unfused steps for the other methods. DGC's momentum correction adds two more (below).
#include <cstdint>

#include "kernels/cuda/device.hpp"

namespace lgreco::kernels::cuda {

/// acc[i] = g[i] + e[i] (acc may alias g or e).
void ef_accumulate(const float* g, const float* e, std::uint64_t n, float* acc, Stream s);

/// e[i] = acc[i] − c[i] (e may alias acc).
void ef_residual(const float* acc, const float* c, std::uint64_t n, float* e, Stream s);

/// DGC momentum correction, as kernels::momentum_accumulate (kernels/error_feedback.hpp):
///   u[i] ← m·u[i] + g[i];  acc[i] = e[i] + u[i]   (one fp32 rounding each, no FMA; acc may
/// alias e, not g or u). Bit-identical to the host reference.
void momentum_accumulate(const float* g, float* u, const float* e, float m, std::uint64_t n, float* acc, Stream s);

/// DGC momentum factor masking, as kernels::momentum_mask: u[indices[j]] = 0 for j < k (indices
/// on the device, each < the length of u; the caller guarantees it).
void momentum_mask(const std::uint32_t* indices, std::uint64_t k, float* u, Stream s);

}  // namespace lgreco::kernels::cuda
