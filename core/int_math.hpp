#pragma once
/// Integer helpers shared by every module (standard library only): rounding divisions and
/// logarithms, overflow-checked products, and the element count of a tensor shape.
#include <cstdint>
#include <optional>
#include <span>

namespace lgreco {

/// ceil(a / b) for b > 0.
constexpr std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return a / b + (a % b != 0); }

/// ceil(log2(x)) for x ≥ 1 (0 for x = 1).
constexpr int ceil_log2(std::uint64_t x) {
  int b = 0;
  while (b < 64 && (std::uint64_t{1} << b) < x) ++b;
  return b;
}

/// floor(log2(x)) for x ≥ 1 (−1 for x = 0).
constexpr int floor_log2(std::uint64_t x) {
  int b = -1;
  while (x) {
    x >>= 1;
    ++b;
  }
  return b;
}

/// a·b, or nullopt when it does not fit in 64 bits.
constexpr std::optional<std::uint64_t> checked_mul(std::uint64_t a, std::uint64_t b) {
  if (a != 0 && b > UINT64_MAX / a) return std::nullopt;
  return a * b;
}

/// Number of elements of a tensor of this shape: the product of the dimensions; the empty shape
/// [] is a scalar (1 element), as in PyTorch. nullopt when a dimension is negative or the product
/// does not fit in int64 (callers turn that into an error naming the tensor).
constexpr std::optional<std::int64_t> shape_numel(std::span<const std::int64_t> shape) {
  std::uint64_t n = 1;
  for (const std::int64_t d : shape) {
    if (d < 0) return std::nullopt;
    const auto p = checked_mul(n, static_cast<std::uint64_t>(d));
    if (!p || *p > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
    n = *p;
  }
  return static_cast<std::int64_t>(n);
}

}  // namespace lgreco
