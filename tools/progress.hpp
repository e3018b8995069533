#pragma once
// Progress of long work on stderr, one rule for every command:
// - on a terminal, one line redrawn in place;
// - otherwise (a pipe, `make demo | tee log`, a batch job's log), a plain line at most every
//   interval (10 s; LGRECO_PROGRESS_INTERVAL=<seconds> changes it), and a last line when the work
//   that printed lines ends;
// - nothing with `lgreco --quiet <command>` (main sets it) or under an MPI rank other than 0.
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "sim/replay.hpp"

namespace lgreco::cli {

/// Silences every progress line (lgreco --quiet).
void set_quiet(bool quiet);
bool quiet();

/// One piece of long work ("trace synth", "replay").
class ProgressLine {
 public:
  explicit ProgressLine(std::string stage);
  /// Reports `text` with `fraction` of the work done (in [0, 1]; negative when unknown): shown at
  /// once on a terminal, at the interval otherwise; a fraction of 1 ends the line.
  void show(double fraction, const std::string& text);
  /// "done/total unit (p %), rate/s, ETA s" for counted work (total <= 0: unknown).
  void count(std::int64_t done, std::int64_t total, const std::string& unit);

 private:
  std::string stage_;
  bool tty_ = false, enabled_ = true, printed_ = false, ended_ = false;
  double interval_s_ = 10;
  std::chrono::steady_clock::time_point start_, last_;
};

/// Progress printer for replays (sim::ReplayProgress: window, layers, GB/s, ETA).
std::function<void(const sim::ReplayProgress&)> stderr_progress();

}  // namespace lgreco::cli
