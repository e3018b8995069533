#pragma once
/// Provenance recorded in every JSON document lgreco writes: tool version, git sha, build type,
/// whether CUDA was compiled in, the command line, the time, and the hashes of input files.
#include <cstdint>
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

/// Hex of a fast 64-bit content hash of a file ("fast64"): 4 lanes of 64-bit words, each
/// lane ← rotl(lane ^ (word · P1), 31) · P2, tail bytes zero-padded into a last word, then the lanes
/// and the length folded with a murmur-style finaliser. Not cryptographic: it identifies content
/// (any changed byte changes it with overwhelming probability) at memory speed, so that hashing a
/// multi-GB trace does not cost a core for the whole run as SHA-256 would.
std::string fast64_file(const std::filesystem::path& path);

/// Inputs up to this size are identified by SHA-256, larger ones by fast64.
constexpr std::uintmax_t kSha256MaxBytes = 64ull << 20;

/// {"tool", "version", "git_sha", "build_type", "cuda", "argv", "created_utc", "inputs": [...]}
/// with {"path", "size_bytes", and "sha256" (≤ kSha256MaxBytes) or "fast64"} per input file.
Json provenance_json(const std::vector<std::filesystem::path>& inputs = {});

/// Current UTC time as ISO 8601 ("2026-12-02T14:12:33Z").
std::string utc_now_iso8601();

}  // namespace lgreco
