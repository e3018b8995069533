// Trace streaming benchmark (a plain program: its peak memory is measured from outside with
// /usr/bin/time -v, see bench/trace_stream.sh and docs/performance.md).
//
//   lgreco_bench_trace_stream write FILE [MODEL STEPS DTYPE]   synthesise (lgreco trace synth's path)
//   lgreco_bench_trace_stream read  FILE [MODEL STEPS DTYPE]   read every layer × step back
//   lgreco_bench_trace_stream gen        [MODEL STEPS]         generator alone, no file
//
// Throughput is reported two ways: fp32-equivalent bytes (4·Σnumel·T, what the simulator consumes)
// and bytes on disk (file size). `read` checks its output: it regenerates a sample of layers with
// the same options and compares every value bit for bit after the storage rounding.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "traces/half.hpp"
#include "traces/presets.hpp"
#include "traces/reader.hpp"
#include "traces/synth.hpp"

using namespace lgreco;
using namespace lgreco::traces;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU seconds of the process (all threads): on a shared machine wall time overstates the cost.
double cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

float stored(float v, StorageDtype d) {
  if (d == StorageDtype::kFloat16) return half_to_float(float_to_half(v));
  if (d == StorageDtype::kBFloat16) return bfloat16_to_float(float_to_bfloat16(v));
  return v;
}

void report(const char* mode, const std::string& model, double seconds, double cpu_seconds, double fp32_bytes,
            double disk_bytes) {
  std::printf("{\"bench\": \"trace_stream\", \"mode\": \"%s\", \"model\": \"%s\", \"seconds\": %.3f, "
              "\"cpu_seconds\": %.3f, \"fp32_bytes\": %.0f, \"disk_bytes\": %.0f, \"fp32_MBps\": %.1f, "
              "\"disk_MBps\": %.1f, \"fp32_MB_per_cpu_s\": %.1f, \"disk_MB_per_cpu_s\": %.1f}\n",
              mode, model.c_str(), seconds, cpu_seconds, fp32_bytes, disk_bytes, fp32_bytes / seconds / 1e6,
              disk_bytes / seconds / 1e6, fp32_bytes / cpu_seconds / 1e6, disk_bytes / cpu_seconds / 1e6);
}

// Regenerates layer `l` for all steps and compares with the file; returns mismatching values.
std::int64_t verify_layer(const TraceReader& r, const ModelPreset& m, const SynthOptions& o, std::size_t l) {
  LayerGenerator g(m.tensors, l, o);
  const auto n = static_cast<std::size_t>(r.layers()[l].numel);
  std::vector<float> expect(n), got(n);
  std::int64_t bad = 0;
  for (std::size_t t = 0; t < r.steps().size(); ++t) {
    g.generate(r.steps()[t], expect);
    r.read(l, t, got);
    for (std::size_t k = 0; k < n; ++k) {
      const float e = stored(expect[k], o.dtype);
      bad += std::memcmp(&e, &got[k], 4) != 0;
    }
  }
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s write|read FILE [MODEL STEPS DTYPE] | gen [MODEL STEPS]\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  const int base = mode == "gen" ? 2 : 3;
  const std::string file = mode == "gen" ? "" : (argc > 2 ? argv[2] : "");
  const std::string model = argc > base ? argv[base] : "gpt2";
  SynthOptions o;
  o.steps = argc > base + 1 ? std::stoll(argv[base + 1]) : 8;
  o.dtype = parse_storage_dtype(argc > base + 2 ? argv[base + 2] : "float16");
  try {
    const ModelPreset& m = find_model_preset(model);
    const double fp32_bytes = 4.0 * static_cast<double>(m.parameters()) * static_cast<double>(o.steps);
    if (mode == "gen") {
      const double t0 = now_s(), c0 = cpu_s();
      std::vector<float> buf;
      double checksum = 0;
      const auto ids = synth_step_ids(o);
      for (std::size_t l = 0; l < m.tensors.size(); ++l) {
        LayerGenerator g(m.tensors, l, o);
        buf.resize(static_cast<std::size_t>(numel_of(m.tensors[l].shape)));
        for (auto id : ids) {
          g.generate(id, buf);
          checksum += static_cast<double>(buf[buf.size() / 2]);
        }
      }
      report("gen", model, now_s() - t0, cpu_s() - c0, fp32_bytes, 0);
      return std::isfinite(checksum) ? 0 : 1;
    }
    if (file.empty()) throw ConfigError("FILE is required");
    if (mode == "write") {
      const double t0 = now_s(), c0 = cpu_s();
      synthesize_trace(m, o, file, Overwrite::kRefuse);
      const double secs = now_s() - t0, cpu = cpu_s() - c0;
      const TraceReader r(file);  // the result must open as a valid trace of the right size
      if (r.layers().size() != m.tensors.size() || static_cast<std::int64_t>(r.steps().size()) != o.steps) return 1;
      report("write", model, secs, cpu, fp32_bytes, static_cast<double>(r.file_size_bytes()));
      return 0;
    }
    if (mode == "read") {
      const TraceReader r(file);
      std::int64_t max_numel = 0;
      for (const auto& l : r.layers()) max_numel = std::max(max_numel, l.numel);
      std::vector<float> buf(static_cast<std::size_t>(max_numel));
      double sumsq = 0;
      const double t0 = now_s(), c0 = cpu_s();
      for (std::size_t l = 0; l < r.layers().size(); ++l) {
        const auto n = static_cast<std::size_t>(r.layers()[l].numel);
        for (std::size_t t = 0; t < r.steps().size(); ++t) {
          r.read(l, t, std::span<float>(buf.data(), n));
          for (std::size_t k = 0; k < n; k += 4096) sumsq += static_cast<double>(buf[k]) * buf[k];
        }
      }
      const double secs = now_s() - t0, cpu = cpu_s() - c0;
      buf = std::vector<float>();
      // Output check (not timed): layers 1-3, one in the middle and the last, regenerated. (Layer 0 is
      // the largest in several presets; regenerating it would dominate the peak memory measured.)
      std::int64_t bad = 0;
      const std::size_t L = r.layers().size();
      for (std::size_t l : {std::size_t{1} % L, std::size_t{2} % L, std::size_t{3} % L, L / 2, L - 1}) {
        bad += verify_layer(r, m, o, l);
      }
      report("read", model, secs, cpu, 4.0 * static_cast<double>(m.parameters()) * static_cast<double>(r.steps().size()),
             static_cast<double>(r.file_size_bytes()));
      std::printf("{\"check\": \"regenerated sample layers\", \"mismatches\": %lld, \"sumsq_sample\": %.6g}\n",
                  static_cast<long long>(bad), sumsq);
      return bad == 0 && std::isfinite(sumsq) ? 0 : 1;
    }
    std::fprintf(stderr, "unknown mode '%s'\n", mode.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trace_stream: %s\n", e.what());
    return 1;
  }
}
