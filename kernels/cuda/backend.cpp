// The CUDA backend of the Compressor interface (kernels/cuda_backend.hpp): every method runs its
// CUDA kernels on device 0. Host spans in, host spans out: the layer is uploaded, compressed and
// decompressed on the device, and the reconstruction (and PowerSGD's Q) copied back. The wire size
// and CompressInfo follow the CPU backend's rules exactly (kernels/cpu/compressor.cpp).
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "kernels/cpu/quantize.hpp"
#include "kernels/cuda/cast.hpp"
#include "kernels/cuda/device.hpp"
#include "kernels/cuda/powersgd.hpp"
#include "kernels/cuda/quantize.hpp"
#include "kernels/cuda/topk.hpp"
#include "kernels/cuda_backend.hpp"
#include "kernels/wire.hpp"

namespace lgreco::kernels::cuda {
namespace {

class CudaCompressor final : public Compressor {
 public:
  explicit CudaCompressor(const MethodSpec& spec) : spec_(spec) {}
  const MethodSpec& spec() const override { return spec_; }
  Backend backend() const override { return Backend::kCuda; }

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
    Stream s = stream_.get();
    x_.reserve(n * 4);
    out_.reserve(n * 4);
    copy_to_device(x_.data(), acc.data(), n * 4);
    const float* x = x_.as<float>();
    float* o = out_.as<float>();
    bool device_out = true;
    switch (spec_.method) {
      case Method::kNone:
        std::copy(acc.begin(), acc.end(), out.begin());
        device_out = false;
        break;
      case Method::kFp16:
        fp16_roundtrip(x, n, o, s);
        break;
      case Method::kBf16:
        bf16_roundtrip(x, n, o, s);
        break;
      case Method::kPowerSgd:
        device_out = powersgd(x, n, o, state, ctx, info, out);
        break;
      case Method::kTopK:
        topk(x, n, o, ctx, stream, info);
        break;
      case Method::kRandomK: {
        const std::uint64_t k = plan_.k;
        reserve_sparse(n, k);
        randomk_indices(n, k, ctx.seed, stream, idx_.as<std::uint32_t>(), ws_.data(), s);
        gather(x, idx_.as<std::uint32_t>(), k, vals_.as<float>(), s);
        const float scale =
            spec_.randomk.scaled && k > 0 ? static_cast<float>(static_cast<double>(n) / static_cast<double>(k)) : 1.0f;
        scatter(idx_.as<std::uint32_t>(), vals_.as<float>(), k, scale, o, n, s);
        info.kept = k;
        break;
      }
      case Method::kQsgd: {
        const QsgdParams& p = spec_.qsgd;
        reserve_codes(n, qsgd_code_bits(p.levels), cpu::bucket_count(n, p.bucket_size), 1);
        auto* elias = counter_.as<std::uint64_t>();
        qsgd_compress(x, n, p, ctx.seed, stream, codes(), s0(), elias, s);
        qsgd_decompress(codes(), s0(), n, p, o, s);
        if (p.encoding == QsgdEncoding::kElias) {
          std::uint64_t bits = 0;
          synchronize(s);
          copy_to_host(&bits, elias, sizeof bits);
          info.coded_bytes = ceil_div(bits, 8) + 4 * cpu::bucket_count(n, p.bucket_size);
        }
        break;
      }
      case Method::kMaxMin: {
        const MaxMinParams& p = spec_.maxmin;
        if (n < 16) {  // sent raw
          std::copy(acc.begin(), acc.end(), out.begin());
          device_out = false;
          break;
        }
        reserve_codes(n, p.bits, cpu::bucket_count(n, p.bucket_size), 2);
        maxmin_compress(x, n, p, ctx.seed, stream, codes(), s0(), s1(), s);
        maxmin_decompress(codes(), s0(), s1(), n, p, o, s);
        break;
      }
      case Method::kSign:
        reserve_codes(n, 1, cpu::bucket_count(n, spec_.sign.bucket_size), 1);
        sign_compress(x, n, spec_.sign, codes(), s0(), s);
        sign_decompress(codes(), s0(), n, spec_.sign, o, s);
        break;
      case Method::kTernGrad:
        reserve_codes(n, 2, 1, 1);
        terngrad_compress(x, n, ctx.seed, stream, codes(), s0(), s);
        terngrad_decompress(codes(), s0(), n, o, s);
        break;
      case Method::kNuqsgd:
        reserve_codes(n, nuqsgd_code_bits(spec_.nuqsgd.levels), cpu::bucket_count(n, spec_.nuqsgd.bucket_size), 1);
        nuqsgd_compress(x, n, spec_.nuqsgd, ctx.seed, stream, codes(), s0(), s);
        nuqsgd_decompress(codes(), s0(), n, spec_.nuqsgd, o, s);
        break;
    }
    if (device_out) {
      synchronize(s);
      copy_to_host(out.data(), o, n * 4);
    }
    return info;
  }

 private:
  void reserve_codes(std::uint64_t n, int bits, std::uint64_t buckets, int scale_arrays) {
    codes_.reserve(std::max<std::uint64_t>(code_capacity_bytes(n, bits), 4));
    scales_.reserve(std::max<std::uint64_t>(buckets, 1) * 4 * static_cast<std::uint64_t>(scale_arrays));
    n_buckets_ = std::max<std::uint64_t>(buckets, 1);
    counter_.reserve(8);
  }
  std::uint8_t* codes() { return codes_.as<std::uint8_t>(); }
  float* s0() { return scales_.as<float>(); }
  float* s1() { return scales_.as<float>() + n_buckets_; }

  void reserve_sparse(std::uint64_t n, std::uint64_t k) {
    ws_.reserve(topk_workspace_bytes(n));
    idx_.reserve(std::max<std::uint64_t>(k, 1) * 4);
    vals_.reserve(std::max<std::uint64_t>(k, 1) * 4);
    counter_.reserve(8);
  }

  void topk(const float* x, std::uint64_t n, float* o, const LayerContext& ctx, std::uint64_t stream,
            CompressInfo& info) {
    Stream s = stream_.get();
    const std::uint64_t k = plan_.k;
    reserve_sparse(n, k);
    auto* idx = idx_.as<std::uint32_t>();
    std::uint64_t kept = k;
    if (spec_.topk.selection == TopkSelection::kExact) {
      topk_exact(x, n, k, idx, ws_.data(), s);
    } else {
      topk_dgc(x, n, k, ctx.seed, stream, cpu::DgcSampling{}, idx, &kept, ws_.data(), s);
    }
    gather(x, idx, kept, vals_.as<float>(), s);
    scatter(idx, vals_.as<float>(), kept, 1.0f, o, n, s);
    // DGC may keep k' < k entries; the payload is padded to k (kernels/wire.hpp).
    const TopkEncoding enc = plan_.encoding;
    std::uint64_t bits = 0;
    if (enc == TopkEncoding::kDelta) {
      delta_gamma_bits(idx, kept, counter_.as<std::uint64_t>(), s);
      synchronize(s);
      copy_to_host(&bits, counter_.data(), sizeof bits);
    }
    info.encoding = enc;
    info.kept = kept;
    info.coded_bytes = topk_bytes(enc, n, kept, bits);
    if (spec_.topk.momentum > 0) {
      // ErrorFeedback masks DGC's velocity on the host at these indices.
      host_idx_.resize(kept);
      synchronize(s);
      if (kept > 0) copy_to_host(host_idx_.data(), idx, kept * 4);
      info.sent_indices = host_idx_;
    }
  }

  // Returns whether the reconstruction is in the device output buffer.
  bool powersgd(const float* x, std::uint64_t n, float* o, LayerState& state, const LayerContext& ctx,
                CompressInfo& info, std::span<float> host_out) {
    const PowerSgdParams& prm = spec_.powersgd;
    const MatrixView& v = plan_.view;
    info.kept = static_cast<std::uint64_t>(v.r_eff);
    Stream s = stream_.get();
    if (!v.compressed) {
      copy_on_device(o, x, n * 4, s);
      info.compressed = false;
      return true;
    }
    if (state.q_rows != v.m || state.q_cols != v.r_eff) state.q.clear();  // shape changed: redraw
    if (v.r_eff == 0) {
      std::fill(host_out.begin(), host_out.end(), 0.0f);
      state.q.clear();
      state.q_rows = v.m;
      state.q_cols = 0;
      return false;
    }
    const auto qsize = static_cast<std::size_t>(v.m * v.r_eff);
    if (!prm.warm_start || state.q.size() != qsize) {
      // First Q drawn on the host, as the reference does (device libm's normals could differ).
      const std::uint64_t t = prm.warm_start ? 0 : ctx.step;
      state.q.resize(qsize);
      const std::uint64_t rs = rng::stream_of(t, ctx.index);
      for (std::size_t i = 0; i < qsize; ++i) state.q[i] = static_cast<float>(rng::normal_at(prm.seed, rs, i));
    }
    if (!blas_) blas_ = std::make_unique<BlasHandle>();
    q_.reserve(qsize * 4);
    p_.reserve(static_cast<std::size_t>(v.n * v.r_eff) * 4);
    scratch_.reserve(orthogonalize_scratch_doubles(std::max(v.n, v.m), v.r_eff) * 8);
    copy_to_device(q_.data(), state.q.data(), qsize * 4);
    powersgd_step(*blas_, x, v.n, v.m, v.r_eff, prm, q_.as<float>(), p_.as<float>(), o, scratch_.as<double>(), s);
    synchronize(s);
    copy_to_host(state.q.data(), q_.data(), qsize * 4);
    state.q_rows = v.m;
    state.q_cols = v.r_eff;
    return true;
  }

  MethodSpec spec_;
  std::vector<std::int64_t> shape_;
  WirePlan plan_;
  StreamHandle stream_;
  std::unique_ptr<BlasHandle> blas_;
  DeviceBuffer x_, out_, codes_, scales_, counter_, ws_, idx_, vals_, q_, p_, scratch_;
  std::vector<std::uint32_t> host_idx_;
  std::uint64_t n_buckets_ = 1;
};

}  // namespace

std::string describe_backend() {
  const int n = device_count();
  if (n == 0) return "CUDA " + runtime_version() + " (built for this build's architectures), no usable device";
  return "CUDA " + runtime_version() + ", " + device_name(0);
}

std::unique_ptr<Compressor> make_compressor(const MethodSpec& spec) {
  if (device_count() == 0)
    throw CudaUnavailable("compressor '" + describe(spec) +
                          "' on backend cuda: no usable CUDA device on this machine (no device or driver too old)");
  return std::make_unique<CudaCompressor>(spec);
}

}  // namespace lgreco::kernels::cuda
