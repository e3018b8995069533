#include "kernels/cpu/topk.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "kernels/cpu/bitpack.hpp"

namespace lgreco::kernels::cpu {
namespace {

constexpr int kShift1 = 21;  // digit 1: bits [31:21]
constexpr int kShift2 = 10;  // digit 2: bits [20:10]
constexpr std::uint32_t kMask11 = 0x7FFu;
constexpr std::uint32_t kMask10 = 0x3FFu;

struct Candidate {
  std::uint32_t key;
  std::uint32_t index;
};

// Finds the digit holding the k-th largest (k ≥ 1) of a histogram; returns the digit and the count
// of entries in higher digits.
inline std::pair<std::uint32_t, std::uint64_t> find_digit(const std::uint32_t* hist, std::uint32_t bins,
                                                         std::uint64_t k) {
  std::uint64_t above = 0;
  for (std::uint32_t d = bins; d-- > 0;) {
    if (above + hist[d] >= k) return {d, above};
    above += hist[d];
  }
  return {0, above};  // unreachable for 1 ≤ k ≤ total
}

// Radix select over n keys given by key_at(i). When kCollect, also produces the increasing indices
// of the top k (ties → lower index).
template <bool kCollect, typename KeyAt>
KthKey select_core(std::uint64_t n, std::uint64_t k, KeyAt key_at, std::vector<std::uint32_t>* out) {
  // Pass 1: histogram of digit 1. Four sub-histograms break the store-to-load chain on ties.
  std::vector<std::uint32_t> h4(4 * 2048, 0);
  std::uint64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    ++h4[0 * 2048 + (key_at(i) >> kShift1)];
    ++h4[1 * 2048 + (key_at(i + 1) >> kShift1)];
    ++h4[2 * 2048 + (key_at(i + 2) >> kShift1)];
    ++h4[3 * 2048 + (key_at(i + 3) >> kShift1)];
  }
  for (; i < n; ++i) ++h4[key_at(i) >> kShift1];
  std::array<std::uint32_t, 2048> hist{};
  for (std::uint32_t d = 0; d < 2048; ++d) hist[d] = h4[d] + h4[2048 + d] + h4[4096 + d] + h4[6144 + d];
  // Plain variables, not a structured binding: the lambda below captures d1, which Clang before 16
  // refuses for bindings (the fuzz build, `make fuzz`, uses Clang 14).
  const auto [d1_found, above1] = find_digit(hist.data(), 2048, k);
  const std::uint32_t d1 = d1_found;

  // Pass 2: compact the candidates (digit 1 == d1) with a digit-2 histogram; collect indices above.
  // Sizes are known from pass 1, so the buffers are filled by index. Most elements are below d1:
  // a vectorisable "any at or above d1" test skips 16 at a time.
  std::vector<Candidate> cand(hist[d1]);
  std::vector<std::uint32_t> above_idx(kCollect ? above1 : 0);
  std::size_t nc = 0, na = 0;
  std::array<std::uint32_t, 2048> hist2{};
  const std::uint32_t lo_key = d1 << kShift1;
  auto visit = [&](std::uint32_t key, std::uint64_t j) {
    const std::uint32_t d = key >> kShift1;
    if (d == d1) {
      cand[nc++] = {key, static_cast<std::uint32_t>(j)};
      ++hist2[(key >> kShift2) & kMask11];
    } else if (kCollect && d > d1) {
      above_idx[na++] = static_cast<std::uint32_t>(j);
    }
  };
  std::uint64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    std::uint32_t any = 0;
    for (int l = 0; l < 16; ++l) any |= key_at(j + l) >= lo_key ? 1u : 0u;
    if (any)
      for (int l = 0; l < 16; ++l) visit(key_at(j + l), j + l);
  }
  for (; j < n; ++j) visit(key_at(j), j);
  const std::uint64_t k2 = k - above1;
  const auto [d2, above2] = find_digit(hist2.data(), 2048, k2);
  const std::uint64_t k3 = k2 - above2;
  std::array<std::uint32_t, 1024> hist3{};
  for (const Candidate& c : cand)
    if (((c.key >> kShift2) & kMask11) == d2) ++hist3[c.key & kMask10];
  const auto [d3, above3] = find_digit(hist3.data(), 1024, k3);

  KthKey r;
  r.key = (d1 << kShift1) | (d2 << kShift2) | d3;
  r.count_greater = above1 + above2 + above3;
  if constexpr (kCollect) {
    std::uint64_t ties = k - r.count_greater;
    std::vector<std::uint32_t> picked;
    picked.reserve(k - above1);
    for (const Candidate& c : cand) {
      if (c.key > r.key) {
        picked.push_back(c.index);
      } else if (c.key == r.key && ties > 0) {
        picked.push_back(c.index);
        --ties;
      }
    }
    out->resize(k);
    std::merge(above_idx.begin(), above_idx.end(), picked.begin(), picked.end(), out->begin());
  }
  return r;
}

// Sampled prefilter for large inputs: a strided sample of kSample keys gives a key bound g with
// (almost surely) at least k keys ≥ g in the full input; one vectorised pass keeps the keys ≥ g
// with their indices (in index order), and the radix select runs on that short list. Since every
// key ≥ the k-th largest is then in the list (and in index order), the result is exactly the full
// selection; if fewer than k keys pass, the plain two-pass select runs on everything.
template <bool kCollect, typename KeyAt>
KthKey select_impl(std::uint64_t n, std::uint64_t k, KeyAt key_at, std::vector<std::uint32_t>* out) {
  constexpr std::uint64_t kSample = 1u << 14;
  if (n >= 64 * kSample && k <= n / 16) {
    std::vector<std::uint32_t> sample(kSample);
    const std::uint64_t stride = n / kSample;
    for (std::uint64_t t = 0; t < kSample; ++t) sample[t] = key_at(t * stride);
    // Expected sample count above the k-th largest: k·S/n; take 1.25× plus 4 sd plus 16.
    const double share = static_cast<double>(k) * static_cast<double>(kSample) / static_cast<double>(n);
    const auto want = std::min<std::uint64_t>(kSample, static_cast<std::uint64_t>(1.25 * share + 4.0 * std::sqrt(share) + 16.0));
    std::nth_element(sample.begin(), sample.begin() + static_cast<std::ptrdiff_t>(want - 1), sample.end(),
                     std::greater<std::uint32_t>());
    const std::uint32_t g = sample[want - 1];
    std::vector<Candidate> list;
    list.reserve(static_cast<std::size_t>(2.0 * static_cast<double>(want) * static_cast<double>(stride)));
    std::uint64_t j = 0;
    for (; j + 8 <= n; j += 8) {
      std::uint32_t any = 0;
      for (int l = 0; l < 8; ++l) any |= key_at(j + l) >= g ? 1u : 0u;
      if (any)
        for (int l = 0; l < 8; ++l)
          if (key_at(j + l) >= g) list.push_back({key_at(j + l), static_cast<std::uint32_t>(j + l)});
    }
    for (; j < n; ++j)
      if (key_at(j) >= g) list.push_back({key_at(j), static_cast<std::uint32_t>(j)});
    if (list.size() >= k) {
      const Candidate* lp = list.data();
      std::vector<std::uint32_t> local;
      const KthKey r = select_core<kCollect>(list.size(), k, [lp](std::uint64_t i) { return lp[i].key; }, &local);
      if constexpr (kCollect)
        for (auto& idx : local) idx = list[idx].index;
      if (kCollect) *out = std::move(local);
      return r;
    }
  }
  return select_core<kCollect>(n, k, key_at, out);
}

void check_sizes(std::uint64_t n, std::uint64_t k, bool allow_zero, const char* what) {
  if (n >= (std::uint64_t{1} << 32)) throw InputError(std::string(what) + ": " + std::to_string(n) + " elements, at most 2^32 − 1 supported");
  if (k > n || (!allow_zero && k == 0))
    throw InputError(std::string(what) + ": k = " + std::to_string(k) + " outside [" + (allow_zero ? "0" : "1") +
                     ", " + std::to_string(n) + "]");
}

}  // namespace

KthKey radix_select_abs(std::span<const float> x, std::uint64_t k) {
  check_sizes(x.size(), k, false, "radix_select_abs");
  const float* p = x.data();
  return select_impl<false>(x.size(), k, [p](std::uint64_t i) { return abs_key(p[i]); }, nullptr);
}

KthKey radix_select_keys(std::span<const std::uint32_t> keys, std::uint64_t k) {
  check_sizes(keys.size(), k, false, "radix_select_keys");
  const std::uint32_t* p = keys.data();
  return select_impl<false>(keys.size(), k, [p](std::uint64_t i) { return p[i]; }, nullptr);
}

void topk_exact(std::span<const float> x, std::uint64_t k, std::vector<std::uint32_t>& indices) {
  check_sizes(x.size(), k, true, "topk_exact");
  indices.clear();
  if (k == 0) return;
  const float* p = x.data();
  select_impl<true>(x.size(), k, [p](std::uint64_t i) { return abs_key(p[i]); }, &indices);
}

float topk_dgc(std::span<const float> x, std::uint64_t k, std::uint64_t seed, std::uint64_t stream,
               const DgcSampling& s, std::vector<std::uint32_t>& indices) {
  const std::uint64_t n = x.size();
  check_sizes(n, k, true, "topk_dgc");
  indices.clear();
  if (k == 0 || n == 0) return 0.0f;
  const auto want = static_cast<std::uint64_t>(std::ceil(s.sample_fraction * static_cast<double>(n)));
  const std::uint64_t S = std::min<std::uint64_t>(n, std::max<std::uint64_t>(s.min_sample, want));
  std::vector<std::uint32_t> sample(S);
  for (std::uint64_t j = 0; j < S; ++j) {
    const std::uint64_t idx = (static_cast<std::uint64_t>(rng::bits_at(seed, stream, j)) * n) >> 32;
    sample[j] = abs_key(x[idx]);
  }
  const std::uint64_t ks = std::max<std::uint64_t>(
      1, static_cast<std::uint64_t>(std::ceil(static_cast<double>(k) * static_cast<double>(S) / static_cast<double>(n))));
  const KthKey kk = radix_select_keys(sample, std::min(ks, S));
  float t;
  std::memcpy(&t, &kk.key, sizeof t);
  auto count_above = [&](float thr) {
    std::uint64_t c = 0;
    for (float v : x) c += std::fabs(v) > thr ? 1u : 0u;
    return c;
  };
  const double kd = static_cast<double>(k);
  for (int a = 0; a < s.max_adjustments; ++a) {
    const auto c = static_cast<double>(count_above(t));
    if (c > s.raise_factor * kd) t *= static_cast<float>(s.raise_factor);
    else if (c < s.lower_factor * kd) t *= static_cast<float>(s.lower_factor);
    else break;
  }
  std::vector<std::uint32_t> sel;
  std::vector<std::uint32_t> keys;
  for (std::uint64_t i = 0; i < n; ++i)
    if (std::fabs(x[i]) > t) {
      sel.push_back(static_cast<std::uint32_t>(i));
      keys.push_back(abs_key(x[i]));
    }
  if (sel.size() <= k) {
    indices = std::move(sel);
    return t;
  }
  // Truncate to the k largest of the selected, ties → lower index (sel is increasing).
  std::vector<std::uint32_t> local;
  const std::uint32_t* kp = keys.data();
  select_impl<true>(keys.size(), k, [kp](std::uint64_t i) { return kp[i]; }, &local);
  indices.resize(k);
  for (std::uint64_t j = 0; j < k; ++j) indices[j] = sel[local[j]];
  return t;
}

void randomk_indices(std::uint64_t n, std::uint64_t k, std::uint64_t seed, std::uint64_t stream,
                     std::vector<std::uint32_t>& indices) {
  check_sizes(n, k, true, "randomk_indices");
  indices.clear();
  if (k == 0) return;
  // Smallest words first: select the k largest of ~word.
  std::vector<std::uint32_t> keys(n);
  fill_bits(seed, stream, 0, n, keys.data());
  for (auto& w : keys) w = ~w;
  const std::uint32_t* kp = keys.data();
  select_impl<true>(n, k, [kp](std::uint64_t j) { return kp[j]; }, &indices);
}

void gather(std::span<const float> x, std::span<const std::uint32_t> indices, std::vector<float>& values) {
  values.resize(indices.size());
  for (std::size_t j = 0; j < indices.size(); ++j) values[j] = x[indices[j]];
}

void scatter(std::span<const std::uint32_t> indices, std::span<const float> values, float scale, std::span<float> out) {
  std::fill(out.begin(), out.end(), 0.0f);
  if (scale == 1.0f) {
    for (std::size_t j = 0; j < indices.size(); ++j) out[indices[j]] = values[j];
  } else {
    for (std::size_t j = 0; j < indices.size(); ++j) out[indices[j]] = values[j] * scale;
  }
}

}  // namespace lgreco::kernels::cpu
