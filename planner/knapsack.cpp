#include "planner/knapsack.hpp"

#include <cmath>

#include "core/error.hpp"

namespace lgreco::planner {

std::string status_name(PlanStatus s) {
  switch (s) {
    case PlanStatus::kOptimal: return "optimal";
    case PlanStatus::kFeasible: return "feasible";
    case PlanStatus::kInfeasible: return "infeasible";
    case PlanStatus::kUniform: return "uniform";
  }
  return "?";
}

void check_knapsack(const Knapsack& k) {
  for (std::size_t l = 0; l < k.layers.size(); ++l) {
    const auto& layer = k.layers[l];
    if (layer.error.empty()) throw InputError("knapsack: layer " + std::to_string(l) + " has no candidates");
    if (layer.error.size() != layer.bytes.size()) throw InputError("knapsack: layer " + std::to_string(l) + ": error and bytes differ in length");
    for (std::size_t c = 0; c < layer.error.size(); ++c) {
      if (!std::isfinite(layer.error[c]) || layer.error[c] < 0 || !std::isfinite(layer.bytes[c]) || layer.bytes[c] < 0) {
        throw InputError("knapsack: layer " + std::to_string(l) + ", candidate " + std::to_string(c) + ": error " +
                         std::to_string(layer.error[c]) + ", bytes " + std::to_string(layer.bytes[c]) + "; expected finite values >= 0");
      }
    }
  }
}

void evaluate_choice(const Knapsack& k, KnapsackResult& r) {
  r.total_error = 0;
  r.total_bytes = 0;
  for (std::size_t l = 0; l < k.layers.size(); ++l) {
    r.total_error += k.layers[l].error[r.choice[l]];
    r.total_bytes += k.layers[l].bytes[r.choice[l]];
  }
}

namespace {
std::vector<int> lexi_min(const Knapsack& k, bool error_first) {
  std::vector<int> out;
  for (const auto& layer : k.layers) {
    const auto& a = error_first ? layer.error : layer.bytes;
    const auto& b = error_first ? layer.bytes : layer.error;
    int best = 0;
    for (std::size_t c = 1; c < a.size(); ++c) {
      if (a[c] < a[best] || (a[c] == a[best] && b[c] < b[best])) best = static_cast<int>(c);
    }
    out.push_back(best);
  }
  return out;
}
}  // namespace

std::vector<int> least_error_choice(const Knapsack& k) { return lexi_min(k, true); }
std::vector<int> least_bytes_choice(const Knapsack& k) { return lexi_min(k, false); }

}  // namespace lgreco::planner
