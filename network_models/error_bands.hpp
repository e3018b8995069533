#pragma once
/// How far the presets' predictions land from measurements on systems they were not fitted on: the
/// leave-one-system-out errors of the measurement corpus (corpus_fit.hpp), summarised per prediction class
/// and size band. A what-if is a prediction for a cluster nobody measured, so this is the error to expect
/// of it; the tools print it next to the predictions they make with the presets.
///
/// Class of a prediction: on one host, the intra-host path its ring takes (NVLink or PCIe, Embedding's
/// intra_class); across hosts, the network transport. Size bands: < 1 MiB (issue 13's small-message bar),
/// 1-64 MiB (where the protocols and algorithms switch; DDP's 25 MiB buckets) and ≥ 64 MiB (bandwidth-bound).
/// Each band gives quantiles of |ln(predicted / measured)| over the held-out rows of its class: the value
/// below which floor(q·n) of the n rows lie (q = 0.5: the upper median, as corpus_totals), printed as a
/// factor exp(·) ("within × or ÷ 1.23").
///
/// The shipped table (shipped_error_bands) is generated from `lgreco net validate DIR --holdout
/// --write-error-bands FILE` into error_bands_table.cpp; the leave-one-system-out test recomputes it and
/// fails when the two differ, so the figures the tools print are the held-out run's.
#include <array>
#include <string>
#include <vector>

#include "network_models/cost.hpp"
#include "network_models/topology.hpp"

namespace lgreco::net {

enum class PredictionClass { kOneHostNvlink, kOneHostPcie, kRdma, kEfa, kTcpx, kTcpxo, kSocket };
inline constexpr int kNumPredictionClasses = 7;

/// The class of a prediction for `t` with embedding `e`.
PredictionClass prediction_class(const Topology& t, const Embedding& e);
/// Short name ("one-host-nvlink", "rdma", ...), used in JSON and in the generated table.
const char* to_string(PredictionClass c);
/// Words for a sentence ("one host over NVLink", "across hosts over RDMA verbs (InfiniBand, RoCE)", ...).
const char* describe(PredictionClass c);

inline constexpr double kMiB = 1048576.0;
enum class SizeBand { kBelow1MiB, k1To64MiB, kAtLeast64MiB };
inline constexpr int kNumSizeBands = 3;
/// The band of a collective of `size_bytes` (nccl-tests size).
SizeBand size_band(double size_bytes);
/// JSON key ("below_1MiB", "1MiB_to_64MiB", "at_least_64MiB").
const char* to_string(SizeBand b);
/// Words ("< 1 MiB", "1-64 MiB", ">= 64 MiB").
const char* describe(SizeBand b);
/// Every band, smallest first.
std::vector<SizeBand> all_size_bands();

/// Quantiles of |ln(predicted / measured)| over the held-out rows of one class and size band.
struct ErrorBand {
  int systems = 0, rows = 0;  ///< 0 rows: the corpus has none in this band
  double median = 0, p80 = 0, p90 = 0, max = 0;
  bool operator==(const ErrorBand&) const = default;
};
/// The size bands of a class, by SizeBand.
using ClassErrorBands = std::array<ErrorBand, kNumSizeBands>;
using ErrorBands = std::array<ClassErrorBands, kNumPredictionClasses>;
/// The band of class `c` and size band `s`.
inline const ErrorBand& band_of(const ErrorBands& b, PredictionClass c, SizeBand s) {
  return b[static_cast<int>(c)][static_cast<int>(s)];
}

/// The table generated from the corpus' leave-one-system-out run (error_bands_table.cpp).
const ErrorBands& shipped_error_bands();
/// What that run was: the corpus directory, its systems and rows.
struct ErrorBandsOrigin {
  std::string corpus;
  int systems = 0, rows = 0;
};
const ErrorBandsOrigin& shipped_error_bands_origin();

/// The source text of error_bands_table.cpp for `b` (values to 6 decimals of ln, as the test compares them).
std::string error_bands_source(const ErrorBands& b, const ErrorBandsOrigin& origin);

/// One line for a reader: "one host over NVLink, >= 64 MiB: off by a factor 1.07 (median), 1.14 (80 % of rows),
/// 1.17 (90 %), 1.54 (worst) on 9 systems held out (73 rows)"; a band without rows says so.
std::string describe_band(const ErrorBand& b, PredictionClass c, SizeBand s);

/// The band as JSON fields (factors, not logs): systems, rows, median_factor, p80_factor, p90_factor, max_factor.
Json error_band_json(const ErrorBand& b);

/// The bands of class `c` in `b` for the size bands in `sizes`, keyed by to_string(SizeBand).
Json class_bands_json(const ErrorBands& b, PredictionClass c, const std::vector<SizeBand>& sizes);

/// The network as it would be if the presets were off the way the `p80` of the held-out rows were: every
/// collective of `base` takes its time times (direction +1: slower) or divided by (−1: faster) the 80 % factor of
/// its class and size band (nccl-tests size: the buffer for allreduce, reduce-scatter and broadcast, every
/// rank's payload together for allgather). All collectives move together because a system's errors do: a
/// cluster the model gets too fast at one size it mostly gets too fast at the others. A band without rows
/// leaves the time as it is.
class BandScaledCost : public CollectiveCost {
 public:
  BandScaledCost(const CollectiveCost& base, PredictionClass c, int ranks, int direction, const ErrorBands& bands = shipped_error_bands());
  double time_s(Collective c, double bytes_per_rank) const override;

 private:
  const CollectiveCost& base_;
  const ErrorBands& bands_;
  PredictionClass class_;
  int ranks_, direction_;
};

/// What the tools say of their predictions with the presets, for the classes in `classes` (each once, in order
/// of first appearance) and the size bands in `sizes` (each once, smallest first): describe_band lines under a
/// heading naming the basis, and the same as JSON {"basis": ..., "classes": {"rdma": {"below_1MiB": {...}, ...}}}.
std::vector<std::string> expected_error_lines(const std::vector<PredictionClass>& classes, const std::vector<SizeBand>& sizes);
Json expected_error_json(const std::vector<PredictionClass>& classes, const std::vector<SizeBand>& sizes);

}  // namespace lgreco::net
