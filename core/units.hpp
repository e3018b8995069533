#pragma once
/// Units: parsing of human-written quantities into SI (bytes, seconds, bytes/second) and formatting.
///
/// Accepted forms (whitespace between number and unit allowed, case of the unit as written below):
/// - sizes:      "4096", "4096B", "64KiB"/"64MiB"/"1GiB"/"2TiB" (binary), "64kB"/"64KB"/"64MB"/"1GB"/
///               "2TB" (decimal), and nccl-tests' bare "32K"/"16M"/"16G"/"1T" (binary, as
///               `all_reduce_perf -b 32K` means 32768 bytes). Results must be whole bytes.
/// - durations:  "1.5us", "1.5µs", "10ns", "3ms", "2s", "2" (seconds).
/// - bandwidths: "25Gbps", "25Gb/s", "25Gbit/s" (bits: ÷8), "12GBps", "12GB/s" (bytes), with prefixes
///               k/K, M, G, T (decimal, as link rates are quoted); a unit is required ("10" is an error).
/// Errors throw ConfigError naming the text and the accepted forms.
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace lgreco::units {

/// Parses a size in bytes; throws ConfigError for negative, fractional-byte or unknown units.
std::uint64_t parse_bytes(std::string_view text);
/// Parses a duration into seconds (>= 0).
double parse_seconds(std::string_view text);
/// Parses a bandwidth into bytes per second (> 0).
double parse_bandwidth_Bps(std::string_view text);

/// "64 MiB", "1.50 GiB", "512 B": binary units, three significant digits.
std::string format_bytes(double bytes);
/// "2 MiB", "256 B", "24117256 B": exact, in the largest binary unit (up to GiB) that divides the size (the
/// corpus docs' size names).
std::string format_bytes_exact(double bytes);
/// "1.50 us", "12.3 ms", "2.00 s".
std::string format_seconds(double seconds);
/// "25 Gb/s" style, from bytes/second.
std::string format_bandwidth(double bytes_per_s);

/// Shared constants (one definition: several modules need them, and a unity build sees them together).
inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kGB = 1e9;  ///< decimal gigabyte (link and memory rates are quoted in GB/s)
/// The largest size in bytes any option or input file may give (parse_bytes, the corpus and nccl-tests readers):
/// just below 2^64, so every accepted size converts to std::uint64_t.
inline constexpr double kMaxBytes = 1.8e19;
/// kMaxBytes as messages print it ("1.8e+19").
std::string format_max_bytes();

/// Conversions used in JSON keys that carry their unit.
constexpr double kBitsPerByte = 8.0;
constexpr double gbps_to_Bps(double gbps) { return gbps * 1e9 / kBitsPerByte; }
constexpr double Bps_to_gbps(double bps) { return bps * kBitsPerByte / 1e9; }
constexpr double us_to_s(double us) { return us * 1e-6; }
constexpr double s_to_us(double s) { return s * 1e6; }

}  // namespace lgreco::units
