#pragma once
// Shared helpers of the network model tests.
#include <cstdlib>
#include <filesystem>
#include <string>

namespace lgreco::net::testing {

/// shared/ next to the repository (LGRECO_SHARED_DIR, set by tests/CMakeLists.txt).
inline std::filesystem::path shared_dir() {
  const char* env = std::getenv("LGRECO_SHARED_DIR");
  return env ? std::filesystem::path(env) : std::filesystem::path("../shared");
}

inline std::filesystem::path a100_sweep() { return shared_dir() / "data" / "nccl-tests" / "a100x8-nvswitch-allreduce.tsv"; }

/// The repository (LGRECO_SOURCE_DIR, set by tests/CMakeLists.txt).
inline std::filesystem::path source_dir() {
  const char* env = std::getenv("LGRECO_SOURCE_DIR");
  return env ? std::filesystem::path(env) : std::filesystem::path(".");
}

/// The measurement corpus, tests/data/network.
inline std::filesystem::path corpus_dir() { return source_dir() / "tests" / "data" / "network"; }

}  // namespace lgreco::net::testing
