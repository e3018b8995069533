#pragma once
/// Reader of nccl-tests results: the standard table printed by all_reduce_perf, all_gather_perf,
/// reduce_scatter_perf and broadcast_perf ('#' header lines; per row: size, count, type, [redop,
/// root,] then time/algbw/busbw/#wrong out-of-place and the same in-place), and the TSV form in
/// shared/data/nccl-tests ('#' comments, a header "size_bytes time_us algbw_GBps busbw_GBps", rows).
/// Times used: out-of-place. The collective and rank count are read from the comments when present
/// ("# command: all_reduce_perf ... -g 8", "#  Rank  3 Group ..." lines, "nThread 1 nGpus 8").
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "network_models/collectives.hpp"

namespace lgreco::net {

/// One measured size.
struct NcclTestsPoint {
  double size_bytes = 0;
  double time_s = 0;
};

/// A parsed run.
struct NcclTestsRun {
  std::string origin;
  std::optional<Collective> collective;  ///< when the file says
  std::optional<int> ranks;                  ///< when the file says
  /// GPUs one process drives (nccl-tests -g N, or "nGpus N" in the header), when the file says.
  std::optional<int> gpus_per_process;
  std::vector<NcclTestsPoint> points;        ///< in file order, size > 0
};

/// Parses text; InputError naming `origin`, the line number and the offending text.
NcclTestsRun parse_nccl_tests(const std::string& text, const std::string& origin);
/// Reads and parses a file.
NcclTestsRun load_nccl_tests(const std::filesystem::path& path);

}  // namespace lgreco::net
