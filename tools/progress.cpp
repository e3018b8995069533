#include "tools/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>


namespace lgreco::cli {
namespace {

std::atomic<bool> g_quiet{false};

double interval_from_env() {
  const char* v = std::getenv("LGRECO_PROGRESS_INTERVAL");
  if (!v || !*v) return 10;
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  return (end && *end == '\0' && s >= 0 && s <= 86400) ? s : 10;
}

std::string format_eta(double s) {
  char buf[64];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%.1f h", s / 3600);
  else if (s >= 120) std::snprintf(buf, sizeof buf, "%.0f min", s / 60);
  else std::snprintf(buf, sizeof buf, "%.0f s", s);
  return buf;
}

}  // namespace

void set_quiet(bool quiet) { g_quiet = quiet; }
bool quiet() { return g_quiet; }

ProgressLine::ProgressLine(std::string stage)
    : stage_(std::move(stage)), tty_(::isatty(2) == 1), interval_s_(interval_from_env()),
      start_(std::chrono::steady_clock::now()), last_(start_) {
  enabled_ = !quiet();
}

void ProgressLine::show(double fraction, const std::string& text) {
  if (!enabled_ || ended_) return;
  const bool end = fraction >= 1;
  const auto now = std::chrono::steady_clock::now();
  if (tty_) {
    std::string line = "\r" + stage_ + ": " + text + "   " + (end ? "\n" : "");
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
    printed_ = true;
  } else {
    const double since = std::chrono::duration<double>(now - last_).count();
    if ((end && printed_) || (!end && since >= interval_s_)) {
      const std::string line = "lgreco: " + stage_ + ": " + text + "\n";
      std::fwrite(line.data(), 1, line.size(), stderr);
      std::fflush(stderr);
      printed_ = true;
      last_ = now;
    }
  }
  if (end) ended_ = true;
}

void ProgressLine::count(std::int64_t done, std::int64_t total, const std::string& unit) {
  if (!enabled_ || ended_) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  char buf[256];
  if (total > 0) {
    const double frac = std::clamp(static_cast<double>(done) / static_cast<double>(total), 0.0, 1.0);
    const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
    const std::string eta = frac > 0 && frac < 1 ? ", ETA " + format_eta(elapsed * (1 - frac) / frac) : "";
    std::snprintf(buf, sizeof buf, "%lld/%lld %s (%.0f %%), %.3g/s%s", static_cast<long long>(done), static_cast<long long>(total),
                  unit.c_str(), 100 * frac, rate, eta.c_str());
    show(done >= total ? 1.0 : frac, buf);
  } else {
    std::snprintf(buf, sizeof buf, "%lld %s", static_cast<long long>(done), unit.c_str());
    show(-1, buf);
  }
}

std::function<void(const sim::ReplayProgress&)> stderr_progress() {
  if (quiet()) return {};
  auto line = std::make_shared<ProgressLine>("replay");
  return [line](const sim::ReplayProgress& p) {
    const double frac = (static_cast<double>(p.window) + static_cast<double>(p.layers_done) / std::max<std::size_t>(1, p.layers_total)) /
                        static_cast<double>(std::max<std::size_t>(1, p.windows));
    const double gbs = p.elapsed_s > 0 ? p.grad_bytes / p.elapsed_s / 1e9 : 0.0;
    char buf[256];
    const bool end = p.window + 1 == p.windows && p.layers_done == p.layers_total;
    std::snprintf(buf, sizeof buf, "window %zu/%zu, layers %zu/%zu (%.0f %%), %.2f GB/s%s%s", p.window + 1, p.windows, p.layers_done,
                  p.layers_total, 100 * frac, gbs, frac > 0 && !end ? ", ETA " : "",
                  frac > 0 && !end ? format_eta(p.elapsed_s * (1 - frac) / frac).c_str() : "");
    line->show(end ? 1.0 : std::min(frac, 0.999), buf);
  };
}

}  // namespace lgreco::cli
