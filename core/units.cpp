#include "core/units.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "core/text.hpp"

namespace lgreco::units {
namespace {

struct NumberAndUnit {
  double value;
  std::string unit;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

NumberAndUnit split(std::string_view text, const char* what, const char* forms) {
  const std::string s(trim(text));
  if (s.empty()) throw ConfigError(std::string("empty ") + what + ": expected " + forms);
  const char* begin = s.c_str();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(begin, &end);
  if (end == begin || errno == ERANGE || !std::isfinite(v)) {
    throw ConfigError(std::string("invalid ") + what + " '" + printable(s) + "': expected " + forms);
  }
  return {v, std::string(trim(std::string_view(end)))};
}

}  // namespace

std::string format_max_bytes() {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", kMaxBytes);
  return buf;
}

std::uint64_t parse_bytes(std::string_view text) {
  constexpr const char* kForms = "a number with B, KiB, MiB, GiB, TiB, kB, MB, GB, TB or nccl-tests' K, M, G, T";
  auto [v, unit] = split(text, "size", kForms);
  double mult = 0;
  if (unit.empty() || unit == "B") mult = 1;
  else if (unit == "K" || unit == "KiB" || unit == "k") mult = 1024.0;
  else if (unit == "M" || unit == "MiB") mult = 1024.0 * 1024;
  else if (unit == "G" || unit == "GiB") mult = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "TiB") mult = 1024.0 * 1024 * 1024 * 1024;
  else if (unit == "kB" || unit == "KB") mult = 1e3;
  else if (unit == "MB") mult = 1e6;
  else if (unit == "GB") mult = 1e9;
  else if (unit == "TB") mult = 1e12;
  else throw ConfigError("invalid size '" + printable(trim(text)) + "': unknown unit '" + printable(unit) + "', expected " + kForms);
  if (v < 0) throw ConfigError("invalid size '" + printable(trim(text)) + "': must not be negative");
  const double bytes = v * mult;
  if (bytes > kMaxBytes) throw ConfigError("invalid size '" + printable(trim(text)) + "': larger than " + format_max_bytes() + " bytes");
  if (std::floor(bytes) != bytes) {
    throw ConfigError("invalid size '" + printable(trim(text)) + "': not a whole number of bytes");
  }
  return static_cast<std::uint64_t>(bytes);
}

double parse_seconds(std::string_view text) {
  constexpr const char* kForms = "a number with ns, us, µs, ms or s";
  auto [v, unit] = split(text, "duration", kForms);
  double mult = 0;
  if (unit.empty() || unit == "s") mult = 1;
  else if (unit == "ms") mult = 1e-3;
  else if (unit == "us" || unit == "µs" || unit == "\xCE\xBCs") mult = 1e-6;
  else if (unit == "ns") mult = 1e-9;
  else throw ConfigError("invalid duration '" + printable(trim(text)) + "': unknown unit '" + printable(unit) + "', expected " + kForms);
  if (v < 0) throw ConfigError("invalid duration '" + printable(trim(text)) + "': must not be negative");
  return v * mult;
}

double parse_bandwidth_Bps(std::string_view text) {
  constexpr const char* kForms = "a number with bps, Kbps, Mbps, Gbps, Tbps (bits/s; also Gb/s, Gbit/s) or "
                                 "Bps, KBps, MBps, GBps, TBps (bytes/s; also GB/s)";
  auto [v, unit] = split(text, "bandwidth", kForms);
  if (unit.empty()) {
    // A bare number is ambiguous (bits or bytes? per second at which prefix?): a unit is required.
    throw ConfigError("invalid bandwidth '" + printable(trim(text)) + "': needs a unit, e.g. " + printable(trim(text)) +
                      "Gbps; expected " + kForms);
  }
  double prefix = 1;
  std::string rest = unit;
  switch (unit[0]) {
    case 'k': case 'K': prefix = 1e3; rest = unit.substr(1); break;
    case 'M': prefix = 1e6; rest = unit.substr(1); break;
    case 'G': prefix = 1e9; rest = unit.substr(1); break;
    case 'T': prefix = 1e12; rest = unit.substr(1); break;
    default: break;
  }
  double per_unit = 0;
  if (rest == "bps" || rest == "b/s" || rest == "bit/s" || rest == "bits/s") per_unit = 1.0 / kBitsPerByte;
  else if (rest == "Bps" || rest == "B/s") per_unit = 1.0;
  else throw ConfigError("invalid bandwidth '" + printable(trim(text)) + "': unknown unit '" + printable(unit) + "', expected " + kForms);
  if (v <= 0) throw ConfigError("invalid bandwidth '" + printable(trim(text)) + "': must be positive");
  return v * prefix * per_unit;
}

std::string format_bytes(double bytes) {
  static const char* kNames[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int i = 0;
  double v = bytes;
  while (std::fabs(v) >= 1024.0 && i < 5) {
    v /= 1024.0;
    ++i;
  }
  char buf[64];
  if (i == 0) std::snprintf(buf, sizeof buf, "%.0f %s", v, kNames[i]);
  else std::snprintf(buf, sizeof buf, "%.3g %s", v, kNames[i]);
  return buf;
}

std::string format_bytes_exact(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (u < 3 && bytes >= 1024 && std::fmod(bytes, 1024) == 0) bytes /= 1024, ++u;
  return std::to_string(static_cast<long long>(bytes)) + " " + units[u];
}

std::string format_seconds(double s) {
  char buf[64];
  const double a = std::fabs(s);
  if (a == 0) std::snprintf(buf, sizeof buf, "0 s");
  else if (a < 1e-6) std::snprintf(buf, sizeof buf, "%.3g ns", s * 1e9);
  else if (a < 1e-3) std::snprintf(buf, sizeof buf, "%.3g us", s * 1e6);
  else if (a < 1) std::snprintf(buf, sizeof buf, "%.3g ms", s * 1e3);
  else std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

std::string format_bandwidth(double Bps) {
  char buf[64];
  const double gbps = Bps_to_gbps(Bps);
  if (gbps >= 1) std::snprintf(buf, sizeof buf, "%.4g Gb/s", gbps);
  else std::snprintf(buf, sizeof buf, "%.4g Mb/s", gbps * 1e3);
  return buf;
}

}  // namespace lgreco::units
