#pragma once
// The benchmarked methods (default parameters): for each, the byte formula used for the measured
// profile, a validation against the CPU reference, and the compress / compress+decompress work.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/cuda/device.hpp"
#include "kernels/cuda/powersgd.hpp"

namespace lgreco::bench {

namespace kc = lgreco::kernels::cuda;

/// Device buffers shared by every method, sized for the largest n of the sweep.
struct Buffers {
  explicit Buffers(std::uint64_t max_n);
  kc::DeviceBuffer x, out, codes, scales, ws, idx, vals, counter, q, p, scratch;
  kc::BlasHandle blas;
};

/// One benchmarked method.
struct MethodBench {
  std::string name;            ///< method name (profile key)
  std::string params;          ///< parameters, as text
  std::string formula;         ///< memory traffic of compress + decompress per fp32 element
  double bytes_per_element;    ///< the formula's value
  /// Runs the method once on x (already in buf.x) and compares with the CPU reference; returns ""
  /// when identical (or within the stated tolerance), else what differs.
  std::function<std::string(const std::vector<float>& x, Buffers& buf, kc::Stream s)> validate;
  /// Enqueues the compression (payload only) of n elements.
  std::function<void(std::uint64_t n, Buffers& buf, kc::Stream s)> compress;
  /// Enqueues compression + decompression (reconstruction into buf.out).
  std::function<void(std::uint64_t n, Buffers& buf, kc::Stream s)> roundtrip;
};

/// The methods of the benchmark, in report order.
std::vector<MethodBench> all_methods();

/// PowerSGD's matrix view used by the benchmark: rows = 2^floor(log2(n)/2), cols = n / rows.
std::int64_t bench_rows(std::uint64_t n);

}  // namespace lgreco::bench
