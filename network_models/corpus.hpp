#pragma once
/// The measurement corpus (tests/data/network/*.tsv, docs/network-model.md "Measurement corpus"): published
/// collective timings of real machines, one file per (system, benchmark, topology).
///
/// File format (strict): '#' comment lines "# key: value" with the keys
///   system            the machine's name; files with the same system are one system for held-out tests
///   machine           what it is (free text)
///   topology          preset, cluster spec or topology JSON (relative to the file) the predictions use
///   benchmark         nccl-tests | pytorch
///   gpus_per_process  1 | node (one process drives all GPUs of a host) | unknown (taken as 1)
///   nccl              NCCL version as published, or "not stated"
///   source            where the figures were published (URL / repository, path and commit / issue)
///   derived           how time_us was obtained from the published figure
/// (required), and command, partial, not used, excluded (optional); the first line may be a comment without a
/// key. "excluded" gives the reason a published file is kept out of the fit: such files live in the corpus'
/// excluded/ folder, which load_corpus_dir does not read (tests/network_models/test_corpus.cpp holds both).
/// Then the header "collective ranks size_bytes time_us published" (tabs) and one row per measurement:
/// collective (allreduce, allgather, reducescatter, broadcast), ranks, size in nccl-tests' convention,
/// time in µs, and the published figure(s) as key=value pairs separated by ';' (time_us=, busbw_GBps=,
/// algbw_GBps=; other keys are annotations).
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "network_models/collectives.hpp"
#include "network_models/preset_constants.hpp"

namespace lgreco::net {

/// One published measurement.
struct CorpusRow {
  Collective collective = Collective::kAllreduce;
  int ranks = 0;
  double size_bytes = 0;
  double time_s = 0;
  std::optional<double> published_time_s, busbw_Bps, algbw_Bps;  ///< the published figure(s)
  std::string published;  ///< the column as written
  int line = 0;           ///< line number in the file
};

/// One corpus file.
struct CorpusFile {
  std::string origin;  ///< path as read
  std::string system, machine, topology, nccl, source, derived, command, partial, not_used, excluded;
  NcclEnv nccl_env;  ///< the run's NCCL_ALGO / NCCL_PROTO / ... (key "nccl_env"; nccl_env.hpp): predictions honour it
  Benchmark benchmark = Benchmark::kNcclTests;
  bool one_process_per_host = false;  ///< gpus_per_process: node
  std::vector<CorpusRow> rows;
  /// GPUs one benchmark process drives for a row (1, or the row's ranks per host).
  int gpus_per_process(int ranks_per_host) const { return one_process_per_host ? ranks_per_host : 1; }
};

/// Parses a corpus file's text; InputError naming `origin`, the line and the field.
CorpusFile parse_corpus(const std::string& text, const std::string& origin);
/// Reads and parses a corpus file.
CorpusFile load_corpus_file(const std::filesystem::path& path);
/// Every *.tsv in `dir`, sorted by name; InputError when there is none.
std::vector<CorpusFile> load_corpus_dir(const std::filesystem::path& dir);
/// The file's topology: a preset or cluster spec, else a JSON file relative to the corpus file.
Topology corpus_topology(const CorpusFile& f);
/// True when `text` looks like a corpus file (its first keyed comment is "# system:").
bool is_corpus_text(const std::string& text);

/// nccl-tests' bus bandwidth factor for `c` over `ranks` ranks (2(n−1)/n, (n−1)/n or 1).
double busbw_factor(Collective c, int ranks);

}  // namespace lgreco::net
