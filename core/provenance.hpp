#pragma once
/// Provenance recorded in every JSON document lgreco writes: tool version, git sha, build type,
/// whether CUDA was compiled in, the command line, the time, and the hashes of input files.
#include <filesystem>
#include <string>
#include <vector>

#include "core/json_util.hpp"

namespace lgreco {

/// The process-wide command line, set once by tools/main.cpp (library code never reads argv).
void set_command_line(std::vector<std::string> argv);
/// The command line set above (empty in tests).
const std::vector<std::string>& command_line();

/// Hex SHA-256 of a file's bytes (streamed). Throws ConfigError if it cannot be read.
std::string sha256_file(const std::filesystem::path& path);
/// Hex SHA-256 of a byte string.
std::string sha256_hex(const std::string& bytes);

/// {"tool", "version", "git_sha", "build_type", "cuda", "argv", "created_utc", "inputs": [...]}
/// with {"path", "size_bytes", "sha256"} per input file.
Json provenance_json(const std::vector<std::filesystem::path>& inputs = {});

/// Current UTC time as ISO 8601 ("2026-12-02T14:12:33Z").
std::string utc_now_iso8601();

}  // namespace lgreco
