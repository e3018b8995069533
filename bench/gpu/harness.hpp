#pragma once
// Small benchmark harness for the GPU kernels (no third-party library, so that it builds on the GPU
// machine with only the CUDA toolkit): CUDA-event timing with warm-up and the median of repeats,
// a least-squares fit of time = overhead + n / rate, and a minimal JSON writer.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/rng.hpp"
#include "kernels/cuda/device.hpp"

namespace lgreco::bench {

namespace kc = lgreco::kernels::cuda;

/// Median and minimum of the timed repeats, in seconds.
struct Timing {
  double median_s = 0;
  double min_s = 0;
  int repeats = 0;
};

/// Runs `f` (which enqueues work on `s`) `warmup` times untimed, then `repeats` times, each timed
/// on the GPU with CUDA events; returns the median and the minimum.
inline Timing time_gpu(const std::function<void()>& f, kc::Stream s, int warmup, int repeats) {
  for (int i = 0; i < warmup; ++i) f();
  kc::synchronize(s);
  kc::EventTimer timer;
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    timer.start(s);
    f();
    t.push_back(timer.stop_s(s));
  }
  std::sort(t.begin(), t.end());
  Timing r;
  r.repeats = repeats;
  r.min_s = t.front();
  r.median_s = t.size() % 2 ? t[t.size() / 2] : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]);
  return r;
}

/// Least-squares line t = a + b·n over the points (n_i, t_i).
struct LineFit {
  double a = 0;   ///< intercept: fixed overhead, seconds
  double b = 0;   ///< slope: seconds per element
  double r2 = 0;  ///< coefficient of determination
};

inline LineFit fit_line(const std::vector<double>& n, const std::vector<double>& t) {
  LineFit f;
  const double k = static_cast<double>(n.size());
  if (n.size() < 2) return f;
  double sn = 0, st = 0, snn = 0, snt = 0;
  for (std::size_t i = 0; i < n.size(); ++i) {
    sn += n[i];
    st += t[i];
    snn += n[i] * n[i];
    snt += n[i] * t[i];
  }
  const double den = k * snn - sn * sn;
  f.b = (k * snt - sn * st) / den;
  f.a = (st - f.b * sn) / k;
  const double mean = st / k;
  double ss_res = 0, ss_tot = 0;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const double e = t[i] - (f.a + f.b * n[i]);
    ss_res += e * e;
    ss_tot += (t[i] - mean) * (t[i] - mean);
  }
  f.r2 = ss_tot > 0 ? 1.0 - ss_res / ss_tot : 1.0;
  return f;
}

/// Approximately normal test data (Irwin-Hall of the 4 uniforms of one Philox block, scaled to
/// unit variance), filled by all host threads: a pure function of (seed, i).
inline std::vector<float> bench_data(std::uint64_t n, std::uint64_t seed) {
  std::vector<float> x(n);
  const unsigned threads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (std::uint64_t i = t; i < n; i += threads) {
        const rng::Block b = rng::block_at(seed, 1, i);
        float s = 0;
        for (std::uint32_t w : b.v) s += rng::word_to_unit_float(w);
        x[i] = (s - 2.0f) * 1.7320508f;
      }
    });
  for (auto& th : pool) th.join();
  return x;
}

/// JSON string literal with escapes.
inline std::string jstr(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          o += buf;
        } else {
          o += c;
        }
    }
  }
  return o + "\"";
}

/// JSON number (finite; non-finite becomes null).
inline std::string jnum(double v) {
  if (!std::isfinite(v)) return "null";
  std::ostringstream os;
  os.precision(9);
  os << v;
  return os.str();
}

/// UTC time as ISO 8601.
inline std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace lgreco::bench
