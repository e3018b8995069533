#include "kernels/error_feedback.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace lgreco::kernels {

void momentum_accumulate(std::span<const float> g, std::span<float> u, std::span<const float> e, float m,
                         std::span<float> acc) {
  const std::size_t n = g.size();
  if (u.size() != n || e.size() != n || acc.size() != n)
    throw Error("momentum_accumulate: lengths differ (g " + std::to_string(n) + ", u " + std::to_string(u.size()) +
                ", e " + std::to_string(e.size()) + ", acc " + std::to_string(acc.size()) + ")");
  for (std::size_t i = 0; i < n; ++i) {
    u[i] = m * u[i] + g[i];
    acc[i] = e[i] + u[i];
  }
}

void momentum_mask(std::span<const std::uint32_t> indices, std::span<float> u) {
  for (const std::uint32_t j : indices) {
    if (j >= u.size())
      throw Error("momentum_mask: index " + std::to_string(j) + " outside a layer of " + std::to_string(u.size()));
    u[j] = 0.0f;
  }
}

float ef_momentum(const MethodSpec& spec) {
  return spec.method == Method::kTopK ? static_cast<float>(spec.topk.momentum) : 0.0f;
}

ErrorFeedback::ErrorFeedback(std::unique_ptr<Compressor> compressor) : compressor_(std::move(compressor)) {
  if (!compressor_) throw Error("ErrorFeedback: null compressor");
}

LayerState& ErrorFeedback::state(std::uint64_t layer_index) { return states_[layer_index]; }

bool ErrorFeedback::has_state(std::uint64_t layer_index) const { return states_.count(layer_index) != 0; }

void ErrorFeedback::reset() { states_.clear(); }

CompressInfo ErrorFeedback::step(std::span<const float> grad, std::span<float> acc_out, std::span<float> recon_out,
                                 const LayerContext& ctx) {
  const std::size_t n = grad.size();
  check_finite(grad, ctx, "gradient");
  if (acc_out.empty() && n > 0) {
    scratch_acc_.resize(n);
    acc_out = scratch_acc_;
  }
  if (recon_out.empty() && n > 0) {
    scratch_out_.resize(n);
    recon_out = scratch_out_;
  }
  if (acc_out.size() != n || recon_out.size() != n)
    throw InputError("layer '" + std::string(ctx.name) + "': error feedback buffers have " +
                     std::to_string(acc_out.size()) + "/" + std::to_string(recon_out.size()) + " elements, gradient " +
                     std::to_string(n));
  LayerState& st = states_[ctx.index];
  if (st.steps == 0 && st.residual.empty()) st.residual.assign(n, 0.0f);
  if (st.residual.size() != n)
    throw InputError("layer '" + std::string(ctx.name) + "' (index " + std::to_string(ctx.index) + "): gradient has " +
                     std::to_string(n) + " elements but its error-feedback state has " +
                     std::to_string(st.residual.size()));
  float* e = st.residual.data();
  float* acc = acc_out.data();
  const float m = ef_momentum(compressor_->spec());
  if (m == 0.0f) {
    for (std::size_t i = 0; i < n; ++i) acc[i] = grad[i] + e[i];
  } else {
    if (st.velocity.empty()) st.velocity.assign(n, 0.0f);
    if (st.velocity.size() != n)
      throw InputError("layer '" + std::string(ctx.name) + "' (index " + std::to_string(ctx.index) +
                       "): gradient has " + std::to_string(n) + " elements but its momentum velocity has " +
                       std::to_string(st.velocity.size()));
    momentum_accumulate(grad, st.velocity, st.residual, m, acc_out);
  }
  // acc may overflow to Inf even with finite g and e: Compressor::compress rejects it by name.
  CompressInfo info = compressor_->compress(acc_out, recon_out, st, ctx);
  const float* c = recon_out.data();
  for (std::size_t i = 0; i < n; ++i) e[i] = acc[i] - c[i];
  if (m != 0.0f) {
    if (info.sent_indices.size() != info.kept)
      throw Error("layer '" + std::string(ctx.name) + "': the " + to_string(compressor_->backend()) +
                  " compressor reported " + std::to_string(info.sent_indices.size()) + " sent indices for " +
                  std::to_string(info.kept) + " kept entries; momentum masking needs all of them");
    momentum_mask(info.sent_indices, st.velocity);
  }
  return info;
}

}  // namespace lgreco::kernels
