#pragma once
// A deliberately plain transcription of the reference DP rules of docs/reference-lgreco.md, used as
// the oracle for the optimised engine: full tables, scalar loops, no pruning.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "planner/knapsack.hpp"

namespace lgreco::planner::testing {

struct NaiveResult {
  bool feasible = false;
  std::vector<int> choice;
};

inline NaiveResult naive_reference(const Knapsack& k, int B) {
  const double inf = std::numeric_limits<double>::infinity();
  const double T = k.budget;
  const double w = T / B;
  const std::size_t L = k.layers.size();
  // ẽ = clip(ceil(min(e, T+1) / w), 1, B)
  std::vector<std::vector<long long>> et(L);
  for (std::size_t l = 0; l < L; ++l) {
    for (double e : k.layers[l].error) {
      double q = std::ceil(std::min(e, T + 1) / w);
      if (q < 1) q = 1;
      if (q > B) q = B;
      et[l].push_back(static_cast<long long>(q));
    }
  }
  std::vector<std::vector<double>> dp(L, std::vector<double>(B + 1, inf));
  std::vector<std::vector<int>> par(L, std::vector<int>(B + 1, 0));
  // DP[0][b] = min over k with ẽ_0(k) < b of s_0(k); candidates ascending, strict <.
  for (int b = 0; b <= B; ++b) {
    for (std::size_t c = 0; c < et[0].size(); ++c) {
      if (et[0][c] < b && k.layers[0].bytes[c] < dp[0][b]) {
        dp[0][b] = k.layers[0].bytes[c];
        par[0][b] = static_cast<int>(c);
      }
    }
  }
  // DP[l][b] = min_k DP[l−1][b − ẽ_l(k)] + s_l(k)
  for (std::size_t l = 1; l < L; ++l) {
    for (int b = 0; b <= B; ++b) {
      for (std::size_t c = 0; c < et[l].size(); ++c) {
        const long long from = b - et[l][c];
        if (from < 0) continue;
        const double v = dp[l - 1][from] + k.layers[l].bytes[c];
        if (v < dp[l][b]) {
          dp[l][b] = v;
          par[l][b] = static_cast<int>(c);
        }
      }
    }
  }
  // The first b with the least value.
  int best = 0;
  for (int b = 1; b <= B; ++b) {
    if (dp[L - 1][b] < dp[L - 1][best]) best = b;
  }
  NaiveResult r;
  if (dp[L - 1][best] == inf) return r;
  r.feasible = true;
  r.choice.assign(L, 0);
  long long b = best;
  for (std::size_t l = L; l-- > 0;) {
    r.choice[l] = par[l][b];
    b -= et[l][r.choice[l]];
  }
  return r;
}

}  // namespace lgreco::planner::testing
