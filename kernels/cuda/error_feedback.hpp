#pragma once
/// Error feedback on the device, the rule of kernels/error_feedback.hpp element-wise in fp32:
///   acc = g + e;  c = C(acc);  e ← acc − c.
/// The decompression launchers of quantize.hpp fuse the last step (EfFuse); these two kernels are
/// the unfused steps for the other methods.
#include <cstdint>

#include "kernels/cuda/device.hpp"

namespace lgreco::kernels::cuda {

/// acc[i] = g[i] + e[i] (acc may alias g or e).
void ef_accumulate(const float* g, const float* e, std::uint64_t n, float* acc, Stream s);

/// e[i] = acc[i] − c[i] (e may alias acc).
void ef_residual(const float* acc, const float* c, std::uint64_t n, float* e, Stream s);

}  // namespace lgreco::kernels::cuda
