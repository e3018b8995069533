#include "kernels/cpu/compressor.hpp"

#include <algorithm>
#include <vector>

#include "core/rng.hpp"
#include "kernels/cpu/cast.hpp"
#include "kernels/cpu/powersgd.hpp"
#include "kernels/cpu/quantize.hpp"
#include "kernels/cpu/topk.hpp"
#include "kernels/wire.hpp"

namespace lgreco::kernels::cpu {
namespace {

class CpuCompressor final : public Compressor {
 public:
  explicit CpuCompressor(const MethodSpec& spec) : spec_(spec) {}
  const MethodSpec& spec() const override { return spec_; }
  Backend backend() const override { return Backend::kCpu; }

 protected:
  CompressInfo do_compress(std::span<const float> acc, std::span<float> out, LayerState& state,
                           const LayerContext& ctx) override {
    const std::uint64_t n = acc.size();
    shape_ = context_shape(ctx, n);
    plan_ = wire_plan(spec_, shape_, ctx.step);
    CompressInfo info;
    info.wire = plan_.size;
    info.coded_bytes = plan_.size.bytes;  // methods with a data-dependent code set their own below
    const std::uint64_t stream = rng::stream_of(ctx.step, ctx.index);
    switch (spec_.method) {
      case Method::kNone:
        std::copy(acc.begin(), acc.end(), out.begin());
        break;
      case Method::kFp16:
        fp16_roundtrip(acc, out);
        break;
      case Method::kBf16:
        bf16_roundtrip(acc, out);
        break;
      case Method::kPowerSgd:
        powersgd(acc, out, state, ctx, info);
        break;
      case Method::kTopK:
        topk(acc, out, ctx, stream, info);
        break;
      case Method::kRandomK: {
        const std::uint64_t k = plan_.k;
        randomk_indices(n, k, ctx.seed, stream, indices_);
        gather(acc, indices_, values_);
        const float scale = spec_.randomk.scaled && k > 0 ? static_cast<float>(static_cast<double>(n) / static_cast<double>(k)) : 1.0f;
        scatter(indices_, values_, scale, out);
        info.kept = k;
        break;
      }
      case Method::kQsgd: {
        const QsgdParams& p = spec_.qsgd;
        codes_.resize(packed_bytes(n, qsgd_code_bits(p.levels)));
        scales_.resize(bucket_count(n, p.bucket_size));
        const std::uint64_t elias = qsgd_compress(acc, p, ctx.seed, stream, codes_, scales_);
        qsgd_decompress(codes_, scales_, p, out);
        if (p.encoding == QsgdEncoding::kElias) info.coded_bytes = ceil_div(elias, 8) + 4 * scales_.size();
        break;
      }
      case Method::kMaxMin: {
        const MaxMinParams& p = spec_.maxmin;
        if (n < 16) {
          std::copy(acc.begin(), acc.end(), out.begin());
          break;
        }
        codes_.resize(packed_bytes(n, p.bits));
        scales_.resize(bucket_count(n, p.bucket_size));
        units_.resize(scales_.size());
        maxmin_compress(acc, p, ctx.seed, stream, codes_, scales_, units_);
        maxmin_decompress(codes_, scales_, units_, p, out);
        break;
      }
      case Method::kSign:
        codes_.resize(packed_bytes(n, 1));
        scales_.resize(bucket_count(n, spec_.sign.bucket_size));
        sign_compress(acc, spec_.sign, codes_, scales_);
        sign_decompress(codes_, scales_, spec_.sign, out);
        break;
      case Method::kTernGrad: {
        codes_.resize(packed_bytes(n, 2));
        const float s = terngrad_compress(acc, ctx.seed, stream, codes_);
        terngrad_decompress(codes_, s, out);
        break;
      }
      case Method::kNuqsgd:
        codes_.resize(packed_bytes(n, nuqsgd_code_bits(spec_.nuqsgd.levels)));
        scales_.resize(bucket_count(n, spec_.nuqsgd.bucket_size));
        nuqsgd_compress(acc, spec_.nuqsgd, ctx.seed, stream, codes_, scales_);
        nuqsgd_decompress(codes_, scales_, spec_.nuqsgd, out);
        break;
    }
    return info;
  }

 private:
  void topk(std::span<const float> acc, std::span<float> out, const LayerContext& ctx, std::uint64_t stream,
            CompressInfo& info) {
    const std::uint64_t n = acc.size();
    const std::uint64_t k = plan_.k;
    if (spec_.topk.selection == TopkSelection::kExact) topk_exact(acc, k, indices_);
    else topk_dgc(acc, k, ctx.seed, stream, DgcSampling{}, indices_);
    gather(acc, indices_, values_);
    scatter(indices_, values_, 1.0f, out);
    // DGC may keep k' < k entries; the payload is padded to k (kernels/wire.hpp).
    const std::uint64_t kept = indices_.size();
    const TopkEncoding enc = plan_.encoding;
    const std::uint64_t bits = enc == TopkEncoding::kDelta ? delta_gamma_bits(indices_) : 0;
    info.encoding = enc;
    info.kept = kept;
    info.sent_indices = indices_;
    info.coded_bytes = topk_bytes(enc, n, kept, bits);
  }

  void powersgd(std::span<const float> acc, std::span<float> out, LayerState& state, const LayerContext& ctx,
                CompressInfo& info) {
    const MatrixView& v = plan_.view;
    info.kept = static_cast<std::uint64_t>(v.r_eff);
    if (!v.compressed) {
      std::copy(acc.begin(), acc.end(), out.begin());
      info.compressed = false;
      return;
    }
    if (state.q_rows != v.m || state.q_cols != v.r_eff) state.q.clear();  // shape changed: redraw
    powersgd_step(acc, v.n, v.m, v.r_eff, spec_.powersgd, ctx.index, ctx.step, state.q, p_, out);
    state.q_rows = v.m;
    state.q_cols = v.r_eff;
  }

  MethodSpec spec_;
  std::vector<std::int64_t> shape_;
  WirePlan plan_;
  std::vector<std::uint32_t> indices_;
  std::vector<float> values_, scales_, units_, p_;
  std::vector<std::uint8_t> codes_;
};

}  // namespace

std::unique_ptr<Compressor> make_compressor(const MethodSpec& spec) { return std::make_unique<CpuCompressor>(spec); }

}  // namespace lgreco::kernels::cpu
