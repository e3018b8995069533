// The reference L-GreCo DP (see knapsack.hpp for the exact rules). Performance notes:
// - one row of B+1 doubles per layer, two rows alive; the parent table is one byte per
//   (layer, column) (two when a layer has more than 256 candidates);
// - the min-plus update is tiled over 64 columns kept in vector registers while all candidates of
//   the layer stream over them (candidates ascending, strict <, exactly the scalar rule per column);
// - rows are padded with B leading +∞ so that b − ẽ < 0 needs no branch;
// - the kernel is compiled for AVX-512, AVX2 and baseline x86-64 and picked at run time.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "core/cancel.hpp"
#include "core/units.hpp"
#include "core/error.hpp"
#include "planner/knapsack.hpp"

namespace lgreco::planner {
namespace {

using units::kInf;
constexpr int kLanes = 8;            // doubles per vector
constexpr int kVecs = 8;             // vectors per tile
constexpr int kTile = kLanes * kVecs;  // columns per tile

typedef double VecD __attribute__((vector_size(kLanes * sizeof(double))));
typedef long long VecL __attribute__((vector_size(kLanes * sizeof(long long))));

// One DP layer over tiles [tile_begin, padded): cur[b] = min_j prev[b − et[j]] + s[j] with the
// first j (in order) winning ties; par[b] = kidx[j] of the winner. prev must be readable from
// index −max(et) (callers pad with +∞).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void dp_layer(const double* prev, double* cur, std::uint16_t* par, int tile_begin, int padded,
              const std::int32_t* et, const double* s, const double* kidx, int nk) {
  for (int b0 = tile_begin; b0 < padded; b0 += kTile) {
    VecD c[kVecs], p[kVecs];
    for (int v = 0; v < kVecs; ++v) {
      for (int i = 0; i < kLanes; ++i) {
        c[v][i] = kInf;
        p[v][i] = 0;
      }
    }
    for (int j = 0; j < nk; ++j) {
      const double* src = prev + b0 - et[j];
      VecD sv, kv;
      for (int i = 0; i < kLanes; ++i) {
        sv[i] = s[j];
        kv[i] = kidx[j];
      }
      for (int v = 0; v < kVecs; ++v) {
        VecD x;
        std::memcpy(&x, src + v * kLanes, sizeof(VecD));
        x += sv;
        const VecL lt = x < c[v];
        c[v] = lt ? x : c[v];
        p[v] = lt ? kv : p[v];
      }
    }
    for (int v = 0; v < kVecs; ++v) {
      std::memcpy(cur + b0 + v * kLanes, &c[v], sizeof(VecD));
      for (int i = 0; i < kLanes; ++i) par[b0 + v * kLanes + i] = static_cast<std::uint16_t>(p[v][i]);
    }
  }
}

struct Kept {
  std::vector<std::int32_t> et;
  std::vector<double> s, kidx;
  std::int32_t min_et = 0;
};

// Keeps candidate k unless an earlier candidate k' has ẽ' ≤ ẽ and s' ≤ s. Such a k can never be
// chosen: DP rows are non-increasing in b, so prev[b−ẽ'] ≤ prev[b−ẽ], and rounded addition is
// monotone, so k' yields a value ≤ k's and, being earlier, wins the tie. Checking against kept
// candidates suffices (domination is transitive).
Kept prune(const std::vector<std::int32_t>& et, const std::vector<double>& s) {
  Kept out;
  out.min_et = std::numeric_limits<std::int32_t>::max();
  for (std::size_t k = 0; k < et.size(); ++k) {
    bool dominated = false;
    for (std::size_t j = 0; j < out.et.size() && !dominated; ++j) dominated = out.et[j] <= et[k] && out.s[j] <= s[k];
    if (dominated) continue;
    out.et.push_back(et[k]);
    out.s.push_back(s[k]);
    out.kidx.push_back(static_cast<double>(k));
    out.min_et = std::min(out.min_et, et[k]);
  }
  return out;
}

template <class Parent>
KnapsackResult run(const Knapsack& k, const std::vector<std::vector<std::int32_t>>& et, int B) {
  const std::size_t L = k.layers.size();
  const int cols = B + 1;
  const int padded = (cols + kTile - 1) / kTile * kTile;
  std::vector<double> row_a(static_cast<std::size_t>(B) + padded, kInf), row_b(row_a.size(), kInf);
  double* prev = row_a.data() + B;
  double* cur = row_b.data() + B;
  // Virtual layer −1: column 0 infeasible, every other column costs nothing.
  for (int b = 1; b < padded; ++b) prev[b] = 0;
  std::vector<std::uint16_t> par_row(padded);
  std::vector<Parent> parent(L * static_cast<std::size_t>(cols));
  long long lo = 1;  // first column that can be finite after the current layer
  for (std::size_t l = 0; l < L; ++l) {
    throw_if_cancelled();
    const Kept kept = prune(et[l], k.layers[l].bytes);
    lo += kept.min_et;
    const int first_tile = static_cast<int>(std::min<long long>(lo, padded) / kTile * kTile);
    std::fill(cur, cur + first_tile, kInf);
    std::fill(par_row.begin(), par_row.begin() + first_tile, std::uint16_t{0});
    dp_layer(prev, cur, par_row.data(), first_tile, padded, kept.et.data(), kept.s.data(), kept.kidx.data(),
             static_cast<int>(kept.et.size()));
    Parent* dst = parent.data() + l * cols;
    for (int b = 0; b < cols; ++b) dst[b] = static_cast<Parent>(par_row[b]);
    std::swap(prev, cur);
  }
  KnapsackResult r;
  r.parent_table_bytes = parent.size() * sizeof(Parent);
  int best = 0;
  for (int b = 1; b < cols; ++b) {
    if (prev[b] < prev[best]) best = b;
  }
  if (!(prev[best] < kInf)) {
    r.status = PlanStatus::kInfeasible;
    r.choice = least_error_choice(k);
    evaluate_choice(k, r);
    r.gap_bound = -1;
    return r;
  }
  r.choice.assign(L, 0);
  long long b = best;
  for (std::size_t l = L; l-- > 0;) {
    const int c = static_cast<int>(parent[l * cols + b]);
    r.choice[l] = c;
    b -= et[l][c];
    if (b < (l == 0 ? 1 : 0)) throw Error("reference DP: backtrack left the table (internal error)");
  }
  r.status = PlanStatus::kFeasible;  // optimal for the discretised problem only
  r.gap_bound = -1;
  evaluate_choice(k, r);
  return r;
}

}  // namespace

std::vector<std::vector<std::int32_t>> reference_discretise(const Knapsack& k, int B) {
  const double T = k.budget;
  const double w = T / B;
  std::vector<std::vector<std::int32_t>> et(k.layers.size());
  for (std::size_t l = 0; l < k.layers.size(); ++l) {
    for (double e : k.layers[l].error) {
      const double q = std::ceil(std::min(e, T + 1) / w);
      et[l].push_back(static_cast<std::int32_t>(std::clamp(q, 1.0, static_cast<double>(B))));
    }
  }
  return et;
}

KnapsackResult solve_reference(const Knapsack& k, const ReferenceOptions& opt) {
  check_knapsack(k);
  if (!(k.budget > 0) || !std::isfinite(k.budget)) {
    throw InputError("reference DP: error budget T = " + std::to_string(k.budget) + "; expected a finite T > 0");
  }
  if (opt.buckets < 1 || opt.buckets > 100000000) {
    throw ConfigError("reference DP: buckets = " + std::to_string(opt.buckets) + "; expected 1..1e8");
  }
  std::size_t max_k = 0;
  for (const auto& l : k.layers) max_k = std::max(max_k, l.error.size());
  if (max_k > 65536) throw ConfigError("reference DP: a layer has " + std::to_string(max_k) + " candidates; at most 65536 are supported");
  const auto et = reference_discretise(k, opt.buckets);
  if (max_k <= 256) return run<std::uint8_t>(k, et, opt.buckets);
  return run<std::uint16_t>(k, et, opt.buckets);
}

}  // namespace lgreco::planner
