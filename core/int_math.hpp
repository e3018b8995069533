#pragma once
/// Integer helpers shared by every module (standard library only, also in the kernels-only build):
/// rounding divisions and logarithms, and checked arithmetic for sizes read from files — a product
/// or sum that does not fit is an answer (std::nullopt), never a wrapped value.
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <type_traits>

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

/// a · b, or std::nullopt when the exact product does not fit in int64.
constexpr std::optional<std::int64_t> checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// a + b, or std::nullopt when the exact sum does not fit in int64.
constexpr std::optional<std::int64_t> checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// Number of elements of a tensor of this shape: the product of its dimensions; the empty shape []
/// is a scalar (1 element), as in PyTorch. std::nullopt when a dimension is negative or when the
/// product of the non-zero dimensions does not fit in int64: a zero dimension does not excuse the
/// others ([2^32, 2^32, 0] is refused). Callers turn nullopt into an error naming the tensor.
constexpr std::optional<std::int64_t> shape_numel(std::span<const std::int64_t> dims) {
  std::int64_t product = 1;
  bool zero = false;
  for (const std::int64_t d : dims) {
    if (d < 0) return std::nullopt;
    if (d == 0) {
      zero = true;
      continue;
    }
    const auto next = checked_mul(product, d);
    if (!next) return std::nullopt;
    product = *next;
  }
  return zero ? 0 : product;
}

/// `v` as the integer type To when it lies in [lo, hi] (by default To's whole range), else
/// std::nullopt. To must fit in int64 (int, std::int64_t, std::uint32_t ...).
template <class To>
std::optional<To> narrow_checked(std::int64_t v, std::int64_t lo = static_cast<std::int64_t>(std::numeric_limits<To>::min()),
                                 std::int64_t hi = static_cast<std::int64_t>(std::numeric_limits<To>::max())) {
  static_assert(std::is_integral_v<To> && static_cast<std::uint64_t>(std::numeric_limits<To>::max()) <=
                                              static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()),
                "narrow_checked: the target type must fit in int64");
  if (v < lo || v > hi) return std::nullopt;
  if (v < static_cast<std::int64_t>(std::numeric_limits<To>::min()) ||
      v > static_cast<std::int64_t>(std::numeric_limits<To>::max()))
    return std::nullopt;
  return static_cast<To>(v);
}

}  // namespace lgreco
