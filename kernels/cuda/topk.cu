#include "kernels/cuda/topk.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/rng.hpp"
#include "kernels/cuda/check.cuh"

namespace lgreco::kernels::cuda {
namespace detail {
namespace {

constexpr unsigned kFull = 0xFFFFFFFFu;
constexpr unsigned kTileThreads = 256;
constexpr unsigned kItems = 16;
constexpr unsigned kTile = kTileThreads * kItems;  // 4096 keys per tile
constexpr unsigned kWarps = kTileThreads / 32;
constexpr unsigned kBins = 2048;

/// Device state of one selection. `threshold` and `count_greater` come first: they are the
/// KthKeyResult copied out.
struct SelectState {
  std::uint32_t threshold;
  std::uint32_t count_greater;
  std::uint32_t k_rem;       // rank still to find among the current candidates
  std::uint32_t prefix;      // digits found so far, in place
  std::uint32_t cand_count;  // candidates appended by pass 2
  std::uint32_t k_total;
};

struct AbsKeys {
  const float* x;
  __device__ std::uint32_t operator()(std::uint64_t i) const { return __float_as_uint(x[i]) & 0x7FFFFFFFu; }
};
struct RawKeys {
  const std::uint32_t* k;
  __device__ std::uint32_t operator()(std::uint64_t i) const { return k[i]; }
};
struct RandomKeys {
  std::uint64_t seed, stream;
  __device__ std::uint32_t operator()(std::uint64_t i) const { return ~rng::bits_at(seed, stream, i); }
};

__device__ __forceinline__ unsigned lane_id() { return threadIdx.x & 31u; }
__device__ __forceinline__ unsigned lanemask_lt() { return (1u << lane_id()) - 1u; }

/// Adds 1 to bins[bin] for every lane with `active`, one atomic per distinct bin in the warp.
__device__ __forceinline__ void aggregated_inc(std::uint32_t* bins, std::uint32_t bin, bool active) {
  const unsigned act = __ballot_sync(kFull, active);
  if (!active) return;
  const unsigned peers = __match_any_sync(act, bin);
  if ((peers & lanemask_lt()) == 0) atomicAdd(bins + bin, static_cast<std::uint32_t>(__popc(peers)));
}

/// Exclusive scan across a 1024-thread block (32 warps); `total` receives the block sum.
__device__ std::uint32_t block_exscan_1024(std::uint32_t v, std::uint32_t& total) {
  __shared__ std::uint32_t warp_sums[32];
  std::uint32_t inc = v;
  for (int o = 1; o < 32; o <<= 1) {
    const std::uint32_t t = __shfl_up_sync(kFull, inc, o);
    if (lane_id() >= static_cast<unsigned>(o)) inc += t;
  }
  if (lane_id() == 31) warp_sums[threadIdx.x / 32] = inc;
  __syncthreads();
  if (threadIdx.x < 32) {
    std::uint32_t w = warp_sums[threadIdx.x];
    std::uint32_t wi = w;
    for (int o = 1; o < 32; o <<= 1) {
      const std::uint32_t t = __shfl_up_sync(kFull, wi, o);
      if (lane_id() >= static_cast<unsigned>(o)) wi += t;
    }
    warp_sums[threadIdx.x] = wi - w;  // exclusive prefix of the warps
  }
  __syncthreads();
  const std::uint32_t excl = warp_sums[threadIdx.x / 32] + inc - v;
  __shared__ std::uint32_t block_total;
  if (threadIdx.x == blockDim.x - 1) block_total = excl + v;
  __syncthreads();
  total = block_total;
  __syncthreads();
  return excl;
}

/// Loads the kItems keys of this thread in the tile starting at `base` (key j at base + j·kTileThreads
/// + threadIdx.x; 0 past n) before anything uses them, so that kItems loads are in flight at once.
template <class Keys>
__device__ __forceinline__ void load_tile_keys(const Keys& keys, std::uint64_t n, std::uint64_t base,
                                               std::uint32_t (&key)[kItems]) {
#pragma unroll
  for (unsigned j = 0; j < kItems; ++j) {
    const std::uint64_t i = base + j * kTileThreads + threadIdx.x;
    key[j] = i < n ? keys(i) : 0u;
  }
}

__global__ void init_kernel(SelectState* st, std::uint32_t* hist, std::uint32_t* eq_tile, std::uint32_t n_tiles,
                            std::uint32_t k) {
  for (unsigned i = threadIdx.x; i < kBins; i += blockDim.x) hist[i] = 0;
  for (unsigned i = threadIdx.x; i < n_tiles; i += blockDim.x) eq_tile[i] = 0;
  if (threadIdx.x == 0) *st = SelectState{0, 0, k, 0, 0, k};
}

/// Pass 1: histogram of digit 1, one block per tile of 4096 keys; the 16 keys of a thread are loaded
/// before any atomic so that 16 loads per thread are in flight (HBM needs megabytes in flight).
template <class Keys>
__global__ void __launch_bounds__(kTileThreads) hist1_kernel(Keys keys, std::uint64_t n, std::uint32_t* hist) {
  __shared__ std::uint32_t bins[kBins];
  for (unsigned i = threadIdx.x; i < kBins; i += blockDim.x) bins[i] = 0;
  const std::uint64_t base = static_cast<std::uint64_t>(blockIdx.x) * kTile;
  std::uint32_t key[kItems];
  load_tile_keys(keys, n, base, key);
  __syncthreads();
#pragma unroll
  for (unsigned j = 0; j < kItems; ++j)
    if (base + j * kTileThreads + threadIdx.x < n) atomicAdd(bins + (key[j] >> 21), 1u);
  __syncthreads();
  for (unsigned i = threadIdx.x; i < kBins; i += blockDim.x)
    if (bins[i]) atomicAdd(hist + i, bins[i]);
}

/// Finds the digit holding the k_rem-th largest key among the binned keys and narrows the state.
__global__ void __launch_bounds__(1024) select_digit_kernel(SelectState* st, std::uint32_t* hist, unsigned n_bins,
                                                            unsigned shift, bool last) {
  // Thread t looks at bins n_bins-1-2t and n_bins-2-2t (descending), so the exclusive scan in
  // thread order gives the count of keys in higher bins.
  const int b0 = static_cast<int>(n_bins) - 1 - 2 * static_cast<int>(threadIdx.x);
  const int b1 = b0 - 1;
  const std::uint32_t c0 = b0 >= 0 ? hist[b0] : 0u;
  const std::uint32_t c1 = b1 >= 0 ? hist[b1] : 0u;
  std::uint32_t total = 0;
  const std::uint32_t above0 = block_exscan_1024(c0 + c1, total);
  const std::uint32_t above1 = above0 + c0;
  const std::uint32_t k_rem = st->k_rem;
  __syncthreads();
  int digit = -1;
  std::uint32_t above = 0;
  if (c0 && above0 < k_rem && k_rem <= above0 + c0) {
    digit = b0;
    above = above0;
  } else if (c1 && above1 < k_rem && k_rem <= above1 + c1) {
    digit = b1;
    above = above1;
  }
  if (digit >= 0) {
    const std::uint32_t prefix = st->prefix | (static_cast<std::uint32_t>(digit) << shift);
    const std::uint32_t rem = k_rem - above;
    st->prefix = prefix;
    st->k_rem = rem;
    if (last) {
      st->threshold = prefix;
      st->count_greater = st->k_total - rem;
    }
  }
  __syncthreads();
  for (unsigned i = threadIdx.x; i < kBins; i += blockDim.x) hist[i] = 0;
}

/// Pass 2: per tile, counts keys with digit 1 above D1 and appends the D1 keys to the candidates.
template <class Keys>
__global__ void __launch_bounds__(kTileThreads) candidates_kernel(Keys keys, std::uint64_t n, SelectState* st,
                                                                  std::uint32_t* cand_key, std::uint32_t* cand_idx,
                                                                  std::uint32_t* gt_tile) {
  __shared__ std::uint32_t warp_counts[kWarps];
  const std::uint32_t d1 = st->prefix >> 21;
  const std::uint64_t base = static_cast<std::uint64_t>(blockIdx.x) * kTile;
  std::uint32_t above = 0;
  std::uint32_t keyv[kItems];
  load_tile_keys(keys, n, base, keyv);
#pragma unroll
  for (unsigned j = 0; j < kItems; ++j) {
    const std::uint64_t i = base + j * kTileThreads + threadIdx.x;
    const bool ok = i < n;
    const std::uint32_t key = keyv[j];
    const std::uint32_t d = key >> 21;
    above += (ok && d > d1) ? 1u : 0u;
    const bool cand = ok && d == d1;
    const unsigned mask = __ballot_sync(kFull, cand);
    if (mask) {
      std::uint32_t pos = 0;
      const unsigned leader = __ffs(mask) - 1;
      if (lane_id() == leader) pos = atomicAdd(&st->cand_count, static_cast<std::uint32_t>(__popc(mask)));
      pos = __shfl_sync(kFull, pos, leader) + __popc(mask & lanemask_lt());
      if (cand) {
        cand_key[pos] = key;
        cand_idx[pos] = static_cast<std::uint32_t>(i);
      }
    }
  }
  for (int o = 16; o > 0; o >>= 1) above += __shfl_xor_sync(kFull, above, o);
  if (lane_id() == 0) warp_counts[threadIdx.x / 32] = above;
  __syncthreads();
  if (threadIdx.x == 0) {
    std::uint32_t t = 0;
    for (unsigned w = 0; w < kWarps; ++w) t += warp_counts[w];
    gt_tile[blockIdx.x] = t;
  }
}

/// Histogram of digit 2 (level 2) or of digit 3 among the candidates whose digit 2 matches (level 3).
__global__ void cand_hist_kernel(const SelectState* st, const std::uint32_t* cand_key, std::uint32_t* hist, int level) {
  __shared__ std::uint32_t bins[kBins];
  for (unsigned i = threadIdx.x; i < kBins; i += blockDim.x) bins[i] = 0;
  __syncthreads();
  const std::uint32_t count = st->cand_count;
  const std::uint32_t d2 = (st->prefix >> 10) & 0x7FFu;
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t base = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x; base < count; base += stride) {
    const std::uint64_t i = base + threadIdx.x;
    const std::uint32_t key = i < count ? cand_key[i] : 0u;
    bool ok = i < count;
    std::uint32_t bin;
    if (level == 2) {
      bin = (key >> 10) & 0x7FFu;
    } else {
      ok = ok && ((key >> 10) & 0x7FFu) == d2;
      bin = key & 0x3FFu;
    }
    aggregated_inc(bins, ok ? bin : 0u, ok);
  }
  __syncthreads();
  for (unsigned i = threadIdx.x; i < kBins; i += blockDim.x)
    if (bins[i]) atomicAdd(hist + i, bins[i]);
}

/// Per tile: candidates above T join gt_tile, candidates equal to T are counted in eq_tile.
__global__ void cand_count_kernel(const SelectState* st, const std::uint32_t* cand_key, const std::uint32_t* cand_idx,
                                  std::uint32_t* gt_tile, std::uint32_t* eq_tile) {
  const std::uint32_t count = st->cand_count;
  const std::uint32_t t = st->threshold;
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t base = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x; base < count; base += stride) {
    const std::uint64_t i = base + threadIdx.x;
    const bool ok = i < count;
    const std::uint32_t key = ok ? cand_key[i] : 0u;
    const std::uint32_t tile = ok ? cand_idx[i] / kTile : 0u;
    aggregated_inc(gt_tile, tile, ok && key > t);
    aggregated_inc(eq_tile, tile, ok && key == t);
  }
}

/// One block: eq_off = exscan(eq); take_t = clamp(need − eq_off, 0, eq); out_off = exscan(gt + take).
__global__ void __launch_bounds__(1024) tile_scan_kernel(const SelectState* st, const std::uint32_t* gt_tile,
                                                         const std::uint32_t* eq_tile, std::uint32_t* eq_off,
                                                         std::uint32_t* out_off, std::uint32_t n_tiles) {
  const std::uint32_t need = st->k_rem;
  std::uint32_t eq_carry = 0, out_carry = 0;
  for (std::uint32_t base = 0; base < n_tiles; base += blockDim.x) {
    const std::uint32_t t = base + threadIdx.x;
    const std::uint32_t eq = t < n_tiles ? eq_tile[t] : 0u;
    std::uint32_t eq_total = 0;
    const std::uint32_t eo = eq_carry + block_exscan_1024(eq, eq_total);
    const std::uint32_t take = need > eo ? min(need - eo, eq) : 0u;
    const std::uint32_t sel = (t < n_tiles ? gt_tile[t] : 0u) + take;
    std::uint32_t sel_total = 0;
    const std::uint32_t oo = out_carry + block_exscan_1024(sel, sel_total);
    if (t < n_tiles) {
      eq_off[t] = eo;
      out_off[t] = oo;
    }
    eq_carry += eq_total;
    out_carry += sel_total;
  }
}

/// Exclusive scan of the 128 per-(item, warp) counts in index order (item-major), by warp 0.
__device__ void scan_item_warp_counts(std::uint32_t* c) {
  if (threadIdx.x < 32) {
    std::uint32_t v[4];
    std::uint32_t s = 0;
    for (int q = 0; q < 4; ++q) {
      v[q] = c[threadIdx.x * 4 + q];
      s += v[q];
    }
    std::uint32_t inc = s;
    for (int o = 1; o < 32; o <<= 1) {
      const std::uint32_t t = __shfl_up_sync(kFull, inc, o);
      if (lane_id() >= static_cast<unsigned>(o)) inc += t;
    }
    std::uint32_t run = inc - s;
    for (int q = 0; q < 4; ++q) {
      c[threadIdx.x * 4 + q] = run;
      run += v[q];
    }
  }
}

/// Pass 3: writes the selected indices of each tile in index order.
template <class Keys>
__global__ void __launch_bounds__(kTileThreads) write_kernel(Keys keys, std::uint64_t n, const SelectState* st,
                                                             const std::uint32_t* eq_tile, const std::uint32_t* eq_off,
                                                             const std::uint32_t* out_off, std::uint32_t* indices) {
  static_assert(kItems * kWarps == 128, "scan_item_warp_counts handles 128 entries");
  __shared__ std::uint32_t counts[kItems * kWarps];
  const std::uint32_t t = st->threshold;
  const std::uint32_t need = st->k_rem;
  const std::uint32_t eo = eq_off[blockIdx.x];
  const std::uint32_t take = need > eo ? min(need - eo, eq_tile[blockIdx.x]) : 0u;
  const std::uint64_t base = static_cast<std::uint64_t>(blockIdx.x) * kTile;
  const unsigned warp = threadIdx.x / 32;
  unsigned gt_mask[kItems], eq_mask[kItems];
  std::uint32_t keyv[kItems];
  load_tile_keys(keys, n, base, keyv);
#pragma unroll
  for (unsigned j = 0; j < kItems; ++j) {
    const std::uint64_t i = base + j * kTileThreads + threadIdx.x;
    const bool ok = i < n;
    const std::uint32_t key = keyv[j];
    gt_mask[j] = __ballot_sync(kFull, ok && key > t);
    eq_mask[j] = __ballot_sync(kFull, ok && key == t);
    if (lane_id() == 0) counts[j * kWarps + warp] = __popc(eq_mask[j]);
  }
  __syncthreads();
  scan_item_warp_counts(counts);
  __syncthreads();
  unsigned sel_mask[kItems];
#pragma unroll
  for (unsigned j = 0; j < kItems; ++j) {
    const bool is_eq = (eq_mask[j] >> lane_id()) & 1u;
    const std::uint32_t rank = counts[j * kWarps + warp] + __popc(eq_mask[j] & lanemask_lt());
    sel_mask[j] = gt_mask[j] | __ballot_sync(kFull, is_eq && rank < take);
  }
  __syncthreads();
#pragma unroll
  for (unsigned j = 0; j < kItems; ++j)
    if (lane_id() == 0) counts[j * kWarps + warp] = __popc(sel_mask[j]);
  __syncthreads();
  scan_item_warp_counts(counts);
  __syncthreads();
  const std::uint32_t out0 = out_off[blockIdx.x];
#pragma unroll
  for (unsigned j = 0; j < kItems; ++j) {
    if ((sel_mask[j] >> lane_id()) & 1u) {
      const std::uint32_t pos = out0 + counts[j * kWarps + warp] + __popc(sel_mask[j] & lanemask_lt());
      indices[pos] = static_cast<std::uint32_t>(base + j * kTileThreads + threadIdx.x);
    }
  }
}

__global__ void gather_kernel(const float* x, const std::uint32_t* idx, std::uint64_t k, float* values) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t j = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < k; j += stride)
    values[j] = x[idx[j]];
}

__global__ void scatter_kernel(const std::uint32_t* idx, const float* values, std::uint64_t k, float scale, float* out) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t j = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < k; j += stride)
    out[idx[j]] = __fmul_rn(values[j], scale);
}

__global__ void gamma_bits_kernel(const std::uint32_t* idx, std::uint64_t k, unsigned long long* bits) {
  unsigned long long s = 0;
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t j = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < k; j += stride) {
    const std::uint64_t gap = j == 0 ? static_cast<std::uint64_t>(idx[0]) + 1u : idx[j] - idx[j - 1];
    s += 2u * (63u - __clzll(static_cast<long long>(gap))) + 1u;
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(kFull, s, o);
  if (lane_id() == 0 && s) atomicAdd(bits, s);
}


/// DGC sample: key of x[(bits_at(seed, stream, j)·n) >> 32] for j < S (with replacement).
__global__ void sample_keys_kernel(const float* x, std::uint64_t n, std::uint64_t S, std::uint64_t seed,
                                   std::uint64_t stream, std::uint32_t* sample) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t j = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < S; j += stride) {
    const std::uint64_t idx = (static_cast<std::uint64_t>(rng::bits_at(seed, stream, j)) * n) >> 32;
    sample[j] = __float_as_uint(x[idx]) & 0x7FFFFFFFu;
  }
}

/// Counts |x| > t (as keys: monotone for finite values and a non-negative threshold), in total
/// (`count`) and, when `gt_tile` is given, per tile.
__global__ void count_above_kernel(const float* x, std::uint64_t n, std::uint32_t tkey, unsigned long long* count,
                                   std::uint32_t* gt_tile) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  unsigned long long c = 0;
  for (std::uint64_t base = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x; base < n; base += stride) {
    const std::uint64_t i = base + threadIdx.x;
    const bool above = i < n && (__float_as_uint(x[i]) & 0x7FFFFFFFu) > tkey;
    c += above ? 1u : 0u;
    if (gt_tile) aggregated_inc(gt_tile, above ? static_cast<std::uint32_t>(i / kTile) : 0u, above);
  }
  for (int o = 16; o > 0; o >>= 1) c += __shfl_xor_sync(kFull, c, o);
  if (lane_id() == 0 && c) atomicAdd(count, c);
}

/// State for "every key > tkey, no equal keys" (the write pass then compacts exactly those).
__global__ void threshold_state_kernel(SelectState* st, std::uint32_t tkey, std::uint32_t* gt_tile,
                                       std::uint32_t* eq_tile, std::uint32_t n_tiles) {
  for (unsigned i = threadIdx.x; i < n_tiles; i += blockDim.x) {
    gt_tile[i] = 0;
    eq_tile[i] = 0;
  }
  if (threadIdx.x == 0) *st = SelectState{tkey, 0, 0, tkey, 0, 0};
}

/// Workspace layout (each part 256-byte aligned).
struct Layout {
  SelectState* st;
  std::uint32_t* hist;
  std::uint32_t* cand_key;
  std::uint32_t* cand_idx;
  std::uint32_t* gt_tile;
  std::uint32_t* eq_tile;
  std::uint32_t* eq_off;
  std::uint32_t* out_off;
  std::uint32_t* sample;
  std::uint64_t* counter;
  std::uint32_t n_tiles;
  std::size_t bytes;
};

std::size_t align256(std::size_t b) { return (b + 255) & ~std::size_t{255}; }

Layout layout(void* ws, std::uint64_t n) {
  Layout l{};
  l.n_tiles = static_cast<std::uint32_t>((n + kTile - 1) / kTile);
  auto* p = static_cast<char*>(ws);
  std::size_t off = 0;
  auto take = [&](std::size_t bytes) {
    char* q = p ? p + off : nullptr;
    off += align256(bytes);
    return q;
  };
  l.st = reinterpret_cast<SelectState*>(take(sizeof(SelectState)));
  l.hist = reinterpret_cast<std::uint32_t*>(take(kBins * 4));
  l.cand_key = reinterpret_cast<std::uint32_t*>(take(n * 4));
  l.cand_idx = reinterpret_cast<std::uint32_t*>(take(n * 4));
  l.gt_tile = reinterpret_cast<std::uint32_t*>(take(l.n_tiles * 4ull));
  l.eq_tile = reinterpret_cast<std::uint32_t*>(take(l.n_tiles * 4ull));
  l.eq_off = reinterpret_cast<std::uint32_t*>(take(l.n_tiles * 4ull));
  l.out_off = reinterpret_cast<std::uint32_t*>(take(l.n_tiles * 4ull));
  l.sample = reinterpret_cast<std::uint32_t*>(take(n * 4));
  l.counter = reinterpret_cast<std::uint64_t*>(take(8));
  l.bytes = off;
  return l;
}

unsigned fill_grid() { return static_cast<unsigned>(multiprocessor_count()) * 4u; }

/// Radix select of the k-th largest key; leaves the state (threshold, need) in the workspace.
template <class Keys>
void select(Keys keys, std::uint64_t n, std::uint64_t k, const Layout& l, Stream s) {
  LGRECO_CHECK(n < (std::uint64_t{1} << 32), "radix select: n = " + std::to_string(n) + ", expected < 2^32");
  LGRECO_CHECK(k >= 1 && k <= n, "radix select: k = " + std::to_string(k) + " outside [1, n = " + std::to_string(n) + "]");
  init_kernel<<<1, 1024, 0, s>>>(l.st, l.hist, l.eq_tile, l.n_tiles, static_cast<std::uint32_t>(k));
  LGRECO_CUDA_CHECK_LAUNCH();
  hist1_kernel<<<l.n_tiles, kTileThreads, 0, s>>>(keys, n, l.hist);
  LGRECO_CUDA_CHECK_LAUNCH();
  select_digit_kernel<<<1, 1024, 0, s>>>(l.st, l.hist, 2048, 21, false);
  LGRECO_CUDA_CHECK_LAUNCH();
  candidates_kernel<<<l.n_tiles, kTileThreads, 0, s>>>(keys, n, l.st, l.cand_key, l.cand_idx, l.gt_tile);
  LGRECO_CUDA_CHECK_LAUNCH();
  const unsigned cg = grid_for(n, 256, fill_grid());
  cand_hist_kernel<<<cg, 256, 0, s>>>(l.st, l.cand_key, l.hist, 2);
  LGRECO_CUDA_CHECK_LAUNCH();
  select_digit_kernel<<<1, 1024, 0, s>>>(l.st, l.hist, 2048, 10, false);
  LGRECO_CUDA_CHECK_LAUNCH();
  cand_hist_kernel<<<cg, 256, 0, s>>>(l.st, l.cand_key, l.hist, 3);
  LGRECO_CUDA_CHECK_LAUNCH();
  select_digit_kernel<<<1, 1024, 0, s>>>(l.st, l.hist, 1024, 0, true);
  LGRECO_CUDA_CHECK_LAUNCH();
}

template <class Keys>
void select_top(Keys keys, std::uint64_t n, std::uint64_t k, std::uint32_t* indices, void* ws, Stream s,
                KthKeyResult* result) {
  if (n == 0 || k == 0) return;
  const Layout l = layout(ws, n);
  select(keys, n, k, l, s);
  if (result) copy_on_device(result, l.st, sizeof(KthKeyResult), s);
  cand_count_kernel<<<grid_for(n, 256, fill_grid()), 256, 0, s>>>(l.st, l.cand_key, l.cand_idx, l.gt_tile, l.eq_tile);
  LGRECO_CUDA_CHECK_LAUNCH();
  tile_scan_kernel<<<1, 1024, 0, s>>>(l.st, l.gt_tile, l.eq_tile, l.eq_off, l.out_off, l.n_tiles);
  LGRECO_CUDA_CHECK_LAUNCH();
  write_kernel<<<l.n_tiles, kTileThreads, 0, s>>>(keys, n, l.st, l.eq_tile, l.eq_off, l.out_off, indices);
  LGRECO_CUDA_CHECK_LAUNCH();
}

}  // namespace
}  // namespace detail

std::size_t topk_workspace_bytes(std::uint64_t n) { return detail::layout(nullptr, n).bytes; }

void radix_select_abs(const float* x, std::uint64_t n, std::uint64_t k, KthKeyResult* result, void* workspace, Stream s) {
  const auto l = detail::layout(workspace, n);
  detail::select(detail::AbsKeys{x}, n, k, l, s);
  copy_on_device(result, l.st, sizeof(KthKeyResult), s);
}

void radix_select_keys(const std::uint32_t* keys, std::uint64_t n, std::uint64_t k, KthKeyResult* result,
                       void* workspace, Stream s) {
  const auto l = detail::layout(workspace, n);
  detail::select(detail::RawKeys{keys}, n, k, l, s);
  copy_on_device(result, l.st, sizeof(KthKeyResult), s);
}

void topk_exact(const float* x, std::uint64_t n, std::uint64_t k, std::uint32_t* indices, void* workspace, Stream s,
                KthKeyResult* result) {
  LGRECO_CHECK(k <= n, "topk: k = " + std::to_string(k) + " > n = " + std::to_string(n));
  detail::select_top(detail::AbsKeys{x}, n, k, indices, workspace, s, result);
}

void randomk_indices(std::uint64_t n, std::uint64_t k, std::uint64_t seed, std::uint64_t stream, std::uint32_t* indices,
                     void* workspace, Stream s) {
  LGRECO_CHECK(k <= n, "randomk: k = " + std::to_string(k) + " > n = " + std::to_string(n));
  detail::select_top(detail::RandomKeys{seed, stream}, n, k, indices, workspace, s, nullptr);
}

float topk_dgc(const float* x, std::uint64_t n, std::uint64_t k, std::uint64_t seed, std::uint64_t stream,
               const cpu::DgcSampling& smp, std::uint32_t* indices, std::uint64_t* kept, void* workspace, Stream s) {
  using namespace detail;
  LGRECO_CHECK(k <= n, "topk_dgc: k = " + std::to_string(k) + " > n = " + std::to_string(n));
  *kept = 0;
  if (k == 0 || n == 0) return 0.0f;
  const Layout l = layout(workspace, n);
  const auto want = static_cast<std::uint64_t>(std::ceil(smp.sample_fraction * static_cast<double>(n)));
  const std::uint64_t S = std::min<std::uint64_t>(n, std::max<std::uint64_t>(smp.min_sample, want));
  sample_keys_kernel<<<grid_for(S, 256, fill_grid()), 256, 0, s>>>(x, n, S, seed, stream, l.sample);
  LGRECO_CUDA_CHECK_LAUNCH();
  const std::uint64_t ks = std::max<std::uint64_t>(
      1, static_cast<std::uint64_t>(std::ceil(static_cast<double>(k) * static_cast<double>(S) / static_cast<double>(n))));
  select(RawKeys{l.sample}, S, std::min(ks, S), l, s);
  KthKeyResult kk{};
  LGRECO_CUDA_CHECK(cudaMemcpyAsync(&kk, l.st, sizeof kk, cudaMemcpyDeviceToHost, s));
  synchronize(s);
  float t;
  std::memcpy(&t, &kk.key, sizeof t);
  auto count_above = [&](float thr, std::uint32_t* gt_tile) {
    std::uint32_t tkey;
    std::memcpy(&tkey, &thr, sizeof tkey);
    zero_on_device(l.counter, sizeof(std::uint64_t), s);
    count_above_kernel<<<grid_for(n, 256, fill_grid() * 4), 256, 0, s>>>(
        x, n, tkey & 0x7FFFFFFFu, reinterpret_cast<unsigned long long*>(l.counter), gt_tile);
    LGRECO_CUDA_CHECK_LAUNCH();
    std::uint64_t c = 0;
    LGRECO_CUDA_CHECK(cudaMemcpyAsync(&c, l.counter, sizeof c, cudaMemcpyDeviceToHost, s));
    synchronize(s);
    return c;
  };
  const double kd = static_cast<double>(k);
  for (int a = 0; a < smp.max_adjustments; ++a) {
    const auto c = static_cast<double>(count_above(t, nullptr));
    if (c > smp.raise_factor * kd) t *= static_cast<float>(smp.raise_factor);
    else if (c < smp.lower_factor * kd) t *= static_cast<float>(smp.lower_factor);
    else break;
  }
  std::uint32_t tkey;
  std::memcpy(&tkey, &t, sizeof tkey);
  tkey &= 0x7FFFFFFFu;
  threshold_state_kernel<<<1, 1024, 0, s>>>(l.st, tkey, l.gt_tile, l.eq_tile, l.n_tiles);
  LGRECO_CUDA_CHECK_LAUNCH();
  const std::uint64_t c = count_above(t, l.gt_tile);
  if (c > k) {
    // The k largest of {|x| > t} are the k largest overall (c > k of them exceed t).
    select_top(AbsKeys{x}, n, k, indices, workspace, s, nullptr);
    *kept = k;
  } else {
    tile_scan_kernel<<<1, 1024, 0, s>>>(l.st, l.gt_tile, l.eq_tile, l.eq_off, l.out_off, l.n_tiles);
    LGRECO_CUDA_CHECK_LAUNCH();
    write_kernel<<<l.n_tiles, kTileThreads, 0, s>>>(AbsKeys{x}, n, l.st, l.eq_tile, l.eq_off, l.out_off, indices);
    LGRECO_CUDA_CHECK_LAUNCH();
    *kept = c;
  }
  return t;
}

void gather(const float* x, const std::uint32_t* indices, std::uint64_t k, float* values, Stream s) {
  if (k == 0) return;
  detail::gather_kernel<<<detail::grid_for(k, 256, detail::fill_grid() * 4), 256, 0, s>>>(x, indices, k, values);
  LGRECO_CUDA_CHECK_LAUNCH();
}

void scatter(const std::uint32_t* indices, const float* values, std::uint64_t k, float scale, float* out,
             std::uint64_t n, Stream s) {
  zero_on_device(out, n * sizeof(float), s);
  if (k == 0) return;
  detail::scatter_kernel<<<detail::grid_for(k, 256, detail::fill_grid() * 4), 256, 0, s>>>(indices, values, k, scale, out);
  LGRECO_CUDA_CHECK_LAUNCH();
}

void delta_gamma_bits(const std::uint32_t* sorted_indices, std::uint64_t k, std::uint64_t* bits, Stream s) {
  zero_on_device(bits, sizeof(std::uint64_t), s);
  if (k == 0) return;
  detail::gamma_bits_kernel<<<detail::grid_for(k, 256, detail::fill_grid() * 4), 256, 0, s>>>(
      sorted_indices, k, reinterpret_cast<unsigned long long*>(bits));
  LGRECO_CUDA_CHECK_LAUNCH();
}

}  // namespace lgreco::kernels::cuda
