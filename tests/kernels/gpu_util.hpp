#pragma once
// Shared pieces of the GPU tests (tests/kernels/gpu_*.cpp): test data, device copies and the
// comparison policy of the house style:
//   indices, masks, packed codes, scales  — exact;
//   dequantised values and residuals      — per-element |a − b| ≤ abs + rel·|b| and a normalised
//                                          MSE bound (the tolerances are named where they are used,
//                                          with the rule that gives them);
//   reductions                             — relative tolerance growing with the length.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "kernels/cuda/device.hpp"
#include "tests/support/gpu_check.hpp"

namespace lgreco::gputest {

namespace kc = lgreco::kernels::cuda;

/// Boundary and ragged sizes of every kernel test, plus one large size.
inline const std::vector<std::uint64_t>& sizes() {
  static const std::vector<std::uint64_t> s = {0, 1, 31, 32, 33, 255, 256, 257, 1000, 4097, std::uint64_t{1} << 22};
  return s;
}

/// Value distributions of the tests.
enum class Dist { kNormal, kHeavy, kTies, kZero, kConstant };

inline const char* to_string(Dist d) {
  switch (d) {
    case Dist::kNormal: return "normal";
    case Dist::kHeavy: return "heavy-tailed";
    case Dist::kTies: return "many-ties";
    case Dist::kZero: return "all-zero";
    case Dist::kConstant: return "constant";
  }
  return "?";
}

inline const std::vector<Dist>& dists() {
  static const std::vector<Dist> d = {Dist::kNormal, Dist::kHeavy, Dist::kTies, Dist::kZero, Dist::kConstant};
  return d;
}

/// Deterministic test data: a pure function of (dist, n, seed).
inline std::vector<float> make_data(Dist d, std::uint64_t n, std::uint64_t seed) {
  std::vector<float> x(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    const double g = rng::normal_at(seed, 7, i);
    switch (d) {
      case Dist::kNormal: x[i] = static_cast<float>(g); break;
      // normal / uniform: a slash distribution, Cauchy-like tails up to ~1e3.
      case Dist::kHeavy: x[i] = static_cast<float>(g / (rng::uniform_at(seed, 8, i) + 1e-3)); break;
      // half-integer steps of a normal: most values repeat many times (ties in top-k and levels).
      case Dist::kTies: x[i] = static_cast<float>(std::round(g * 2.0) / 2.0); break;
      case Dist::kZero: x[i] = 0.0f; break;
      case Dist::kConstant: x[i] = 0.375f; break;
    }
  }
  return x;
}

/// A device copy of a host vector (or an uninitialised device array of n elements).
template <class T>
class Dev {
 public:
  explicit Dev(std::uint64_t n) : n_(n), buf_(n ? n * sizeof(T) : sizeof(T)) {}
  explicit Dev(const std::vector<T>& v) : Dev(v.size()) { kc::copy_to_device(buf_.data(), v.data(), v.size() * sizeof(T)); }
  T* get() const { return buf_.as<T>(); }
  std::vector<T> host(std::uint64_t count) const {
    std::vector<T> v(count);
    kc::synchronize(nullptr);
    kc::copy_to_host(v.data(), buf_.data(), count * sizeof(T));
    return v;
  }
  std::vector<T> host() const { return host(n_); }

 private:
  std::uint64_t n_;
  kc::DeviceBuffer buf_;
};

inline std::uint32_t bits_of(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

/// Exact equality of two arrays; the message names the first difference.
template <class T>
void expect_equal(const std::vector<T>& got, const std::vector<T>& want, const std::string& what, const std::string& ctx) {
  LGRECO_EXPECT(got.size() == want.size(), what << ": size " << got.size() << " vs " << want.size() << " [" << ctx << "]");
  for (std::size_t i = 0; i < got.size(); ++i)
    LGRECO_EXPECT(got[i] == want[i], what << "[" << i << "] = " << +got[i] << ", reference " << +want[i] << " ["
                                          << ctx << "]");
}

/// Bitwise equality of floats (so −0 ≠ +0 and every ulp counts).
inline void expect_bits(const std::vector<float>& got, const std::vector<float>& want, const std::string& what,
                        const std::string& ctx) {
  LGRECO_EXPECT(got.size() == want.size(), what << ": size " << got.size() << " vs " << want.size() << " [" << ctx << "]");
  for (std::size_t i = 0; i < got.size(); ++i)
    LGRECO_EXPECT(bits_of(got[i]) == bits_of(want[i]), what << "[" << i << "] = " << got[i] << " (0x" << std::hex
                                                            << bits_of(got[i]) << "), reference " << want[i] << " (0x"
                                                            << bits_of(want[i]) << std::dec << ") [" << ctx << "]");
}

/// Per-element |got − want| ≤ abs + rel·|want|, and Σ(got − want)² ≤ nmse·max(Σ want², tiny).
inline void expect_close(const std::vector<float>& got, const std::vector<float>& want, double abs_tol, double rel_tol,
                         double nmse_tol, const std::string& what, const std::string& ctx) {
  LGRECO_EXPECT(got.size() == want.size(), what << ": size " << got.size() << " vs " << want.size() << " [" << ctx << "]");
  double err2 = 0, ref2 = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    LGRECO_EXPECT(std::fabs(d) <= abs_tol + rel_tol * std::fabs(want[i]),
                  what << "[" << i << "] = " << got[i] << ", reference " << want[i] << " (abs " << abs_tol << ", rel "
                       << rel_tol << ") [" << ctx << "]");
    err2 += d * d;
    ref2 += static_cast<double>(want[i]) * want[i];
  }
  LGRECO_EXPECT(err2 <= nmse_tol * std::max(ref2, 1e-300),
                what << ": normalised MSE " << err2 / std::max(ref2, 1e-300) << " > " << nmse_tol << " [" << ctx << "]");
}

/// Builds a context string "key=value ..." for failure messages.
class Ctx {
 public:
  template <class V>
  Ctx& operator()(const char* key, const V& v) {
    os_ << key << "=" << v << " ";
    return *this;
  }
  std::string str() const { return os_.str(); }

 private:
  std::ostringstream os_;
};

}  // namespace lgreco::gputest
