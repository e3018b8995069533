// NCCL's own constants (nccl_params, the prior of calibration) against the published figures in
// reference-network.md; the presets are held to the measurement corpus in test_corpus_holdout.cpp.
#include <catch2/catch.hpp>

#include "network_models/collectives.hpp"
#include "network_models/presets.hpp"

using namespace lgreco;
using namespace lgreco::net;

namespace {
// Times of NCCL's own model against measurements. Ring/allgather/reduce-scatter: within
// 5 % (the model's bus bandwidth is NCCL's 18 × 20.6 GB/s); NVLS: 15 % (NCCL's 5/6 ratio on the ring
// bandwidth overestimates the measured 480 GB/s); 3 hosts × 8 A100 with 4 × HDR: 15 % (one figure
// from an issue thread, size quoted as "128 MB").
constexpr double kRingTolerance = 0.05, kNvlsTolerance = 0.15, kClusterTolerance = 0.15;
constexpr double kGiB16 = 16.0 * 1073741824;

double measured_time(double busbw_GBps, double factor, double size) { return size / (busbw_GBps * 1e9 / factor); }
}  // namespace

TEST_CASE("hgx-h200 at 16 GiB against the measured busbw", "[reference]") {
  const Topology t = preset_topology("hgx-h200");
  const CollectiveModel m(t, 8, nccl_params(t, 8));
  const double ar = 2.0 * 7 / 8, ag = 7.0 / 8;
  const auto nvls = m.best(Collective::kAllreduce, kGiB16);
  CHECK(nvls.algorithm == Algorithm::kNvls);
  CHECK(nvls.time_s == Approx(measured_time(480.0, ar, kGiB16)).epsilon(kNvlsTolerance));
  const auto ring = m.evaluate(Collective::kAllreduce, Algorithm::kRing, Protocol::kSimple, kGiB16);
  CHECK(ring->time_s == Approx(measured_time(367.2, ar, kGiB16)).epsilon(kRingTolerance));
  CHECK(m.best(Collective::kAllgather, kGiB16).time_s == Approx(measured_time(361.4, ag, kGiB16)).epsilon(kRingTolerance));
  CHECK(m.best(Collective::kReduceScatter, kGiB16).time_s == Approx(measured_time(362.9, ag, kGiB16)).epsilon(kRingTolerance));
  // NCCL picks ring/LL up to 1 MiB and NVLS from 2 MiB on this machine.
  CHECK(m.best(Collective::kAllreduce, 1 << 20).protocol == Protocol::kLL);
  CHECK(m.best(Collective::kAllreduce, 2 << 20).algorithm == Algorithm::kNvls);
}

TEST_CASE("3 hosts x 8 A100 with 4 x HDR: 128 MB allreduce", "[reference]") {
  const Topology t = preset_topology("3x8xA100-4x200G");
  const CollectiveModel m(t, 24, nccl_params(t, 24));
  const auto ch = m.best(Collective::kAllreduce, 128e6);
  const double busbw = 128e6 / ch.time_s * m.busbw_factor(Collective::kAllreduce) / 1e9;
  CAPTURE(ch.time_s, busbw, to_string(ch.algorithm), to_string(ch.protocol));
  CHECK(ch.time_s == Approx(2.6e-3).epsilon(kClusterTolerance));
}

TEST_CASE("NCCL's model on dgx-a100 is optimistic at small sizes and close at large ones", "[reference]") {
  // reference-network.md: NCCL's model is within 2–4 % at ≥ 1 GiB, 1.2–3× too optimistic ≤ 256 MiB.
  const Topology t = preset_topology("dgx-a100");
  const CollectiveModel m(t, 8, nccl_params(t, 8));
  const double t1g = m.best(Collective::kAllreduce, 1073741824).time_s;
  CHECK(t1g == Approx(8203.9e-6).epsilon(0.05));
  CHECK(m.best(Collective::kAllreduce, 1048576).time_s < 101.9e-6 / 1.2);
}
