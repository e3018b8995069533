// GPU benchmark of the compression kernels: a size sweep per method, every size validated against
// the CPU reference before it is timed, JSON with context, and optionally the measured device cost
// profile (kernels/profiles format, "estimate": false).
//
// Figures (definitions also written into the JSON):
//   input_GBps        = 4·n / time           (fp32 gradient bytes processed per second)
//   copy bandwidth    = 8·n / time_copy      (device-to-device copy: read 4 + write 4 per element)
//   fraction_of_copy  = input_GBps / copy bandwidth at the same n
// Usage: lgreco_bench_gpu --out bench.json [--profile profile.json] [--min-log2 12] [--max-log2 25]
//        [--repeats 15] [--warmup 3] [--device-key h200]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "bench/gpu/harness.hpp"
#include "bench/gpu/methods.hpp"
#include "core/build_info.hpp"

namespace {

using namespace lgreco::bench;

struct Options {
  std::string out, profile, device_key;
  int min_log2 = 12, max_log2 = 25, repeats = 15, warmup = 3;
  std::string argv;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "lgreco_bench_gpu: " << why
            << "\nusage: lgreco_bench_gpu --out FILE [--profile FILE] [--min-log2 N] [--max-log2 N] [--repeats N] "
               "[--warmup N] [--device-key NAME]\n";
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 0; i < argc; ++i) {
    if (i) o.argv += ' ';
    o.argv += argv[i];
  }
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    auto number = [&](int lo, int hi) {
      const std::string v = value();
      char* end = nullptr;
      const long x = std::strtol(v.c_str(), &end, 10);
      if (!end || *end || x < lo || x > hi) usage(a + " " + v + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
      return static_cast<int>(x);
    };
    if (a == "--out") o.out = value();
    else if (a == "--profile") o.profile = value();
    else if (a == "--device-key") o.device_key = value();
    else if (a == "--min-log2") o.min_log2 = number(4, 30);
    else if (a == "--max-log2") o.max_log2 = number(4, 30);
    else if (a == "--repeats") o.repeats = number(1, 1000);
    else if (a == "--warmup") o.warmup = number(0, 100);
    else usage("unknown argument '" + a + "'");
  }
  if (o.out.empty()) usage("--out is required");
  if (o.min_log2 > o.max_log2) usage("--min-log2 exceeds --max-log2");
  return o;
}

/// "NVIDIA H200" → "h200": the last word of the device name, lower case.
std::string default_key(const std::string& name) {
  std::string last = name.substr(name.find_last_of(' ') == std::string::npos ? 0 : name.find_last_of(' ') + 1);
  for (auto& c : last) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return last;
}

/// Datasheet HBM peaks (GB/s) for the profile's peak_bandwidth_GBps; unknown devices use the
/// measured copy bandwidth (said so in the description).
double datasheet_peak_GBps(const std::string& key) {
  static const std::map<std::string, double> peaks = {{"a100", 2039.0}, {"h100", 3350.0}, {"h200", 4800.0}, {"b200", 8000.0}};
  const auto it = peaks.find(key);
  return it == peaks.end() ? 0.0 : it->second;
}

void write_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    if (!f) throw std::runtime_error("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error("cannot rename " + tmp + " to " + path);
}

struct Point {
  std::uint64_t n;
  double compress_s, roundtrip_s, copy_s;
};

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  try {
    if (kc::device_count() == 0) {
      std::cerr << "lgreco_bench_gpu: no CUDA device\n";
      return 77;
    }
    const std::string device = kc::device_name(0);
    const std::string key = opt.device_key.empty() ? default_key(device) : opt.device_key;
    const std::uint64_t max_n = std::uint64_t{1} << opt.max_log2;
    Buffers buf(max_n);
    kc::StreamHandle stream;
    const kc::Stream s = stream.get();
    auto methods = all_methods();
    std::map<std::string, std::vector<Point>> points;
    std::map<std::string, std::string> invalid;
    std::vector<std::pair<std::uint64_t, double>> copy;
    for (int l = opt.min_log2; l <= opt.max_log2; ++l) {
      const std::uint64_t n = std::uint64_t{1} << l;
      const auto x = bench_data(n, 20261202 + l);
      kc::copy_to_device(buf.x.data(), x.data(), n * 4);
      const double copy_s =
          time_gpu([&] { kc::copy_on_device(buf.out.data(), buf.x.data(), n * 4, s); }, s, opt.warmup, opt.repeats).median_s;
      copy.push_back({n, copy_s});
      for (auto& m : methods) {
        if (invalid.count(m.name)) continue;
        const std::string err = m.validate(x, buf, s);
        if (!err.empty()) {
          invalid[m.name] = "n = " + std::to_string(n) + ": " + err;
          std::cerr << "INVALID " << m.name << " " << invalid[m.name] << "\n";
          continue;
        }
        const double tc = time_gpu([&] { m.compress(n, buf, s); }, s, opt.warmup, opt.repeats).median_s;
        const double tr = time_gpu([&] { m.roundtrip(n, buf, s); }, s, opt.warmup, opt.repeats).median_s;
        points[m.name].push_back({n, tc, tr, copy_s});
        std::fprintf(stderr, "%-9s n=2^%-2d compress %9.2f us (%7.1f GB/s, %.2f of copy)  roundtrip %9.2f us\n",
                     m.name.c_str(), l, tc * 1e6, 4.0 * n / tc / 1e9, (4.0 * n / tc) / (8.0 * n / copy_s), tr * 1e6);
      }
    }

    // ---- benchmark JSON ----
    std::string j = "{\n  \"schema_version\": 1,\n  \"kind\": \"lgreco-gpu-bench\",\n  \"context\": {";
    j += "\"git_sha\": " + jstr(lgreco::build_info::git_sha()) + ", \"build_type\": " + jstr(lgreco::build_info::build_type()) +
         ", \"cuda_runtime\": " + jstr(kc::runtime_version()) + ", \"device\": " + jstr(device) + ", \"device_key\": " +
         jstr(key) + ", \"date\": " + jstr(utc_now()) + ", \"command\": " + jstr(opt.argv) + ", \"repeats\": " +
         std::to_string(opt.repeats) + ", \"warmup\": " + std::to_string(opt.warmup) + ", \"statistic\": \"median\"},\n";
    j += "  \"definitions\": {\"input_GBps\": \"4*n/time (fp32 input bytes per second)\", \"copy_bandwidth_GBps\": "
         "\"8*n/time of a device-to-device copy (read + write)\", \"fraction_of_copy\": \"input_GBps / "
         "copy_bandwidth_GBps at the same n\", \"data\": \"approximately normal fp32 (Irwin-Hall of 4 Philox uniforms)\", "
         "\"validation\": \"every size is checked against the CPU reference before timing (codes, scales, indices "
         "exact; PowerSGD relative Frobenius error <= 1e-3)\"},\n";
    j += "  \"copy\": [";
    for (std::size_t i = 0; i < copy.size(); ++i)
      j += std::string(i ? ", " : "") + "{\"n\": " + std::to_string(copy[i].first) + ", \"time_us\": " + jnum(copy[i].second * 1e6) +
           ", \"input_GBps\": " + jnum(4.0 * copy[i].first / copy[i].second / 1e9) + ", \"copy_bandwidth_GBps\": " +
           jnum(8.0 * copy[i].first / copy[i].second / 1e9) + "}";
    j += "],\n  \"methods\": {";
    std::string prof = "";
    bool first = true;
    for (const auto& m : methods) {
      j += std::string(first ? "\n" : ",\n") + "    " + jstr(m.name) + ": {\"params\": " + jstr(m.params) +
           ", \"valid\": " + (invalid.count(m.name) ? "false, \"error\": " + jstr(invalid[m.name]) : std::string("true")) +
           ", \"bytes_per_element\": " + jnum(m.bytes_per_element) + ", \"formula\": " + jstr(m.formula) + ", \"points\": [";
      const auto& pts = points[m.name];
      std::vector<double> ns, ts;
      for (std::size_t i = 0; i < pts.size(); ++i) {
        const Point& p = pts[i];
        j += std::string(i ? ", " : "") + "{\"n\": " + std::to_string(p.n) + ", \"compress_us\": " + jnum(p.compress_s * 1e6) +
             ", \"roundtrip_us\": " + jnum(p.roundtrip_s * 1e6) + ", \"compress_input_GBps\": " +
             jnum(4.0 * p.n / p.compress_s / 1e9) + ", \"roundtrip_input_GBps\": " + jnum(4.0 * p.n / p.roundtrip_s / 1e9) +
             ", \"fraction_of_copy\": " + jnum((4.0 * p.n / p.compress_s) / (8.0 * p.n / p.copy_s)) + "}";
        ns.push_back(static_cast<double>(p.n));
        ts.push_back(p.roundtrip_s);
      }
      j += "]}";
      first = false;
      if (!invalid.count(m.name) && ns.size() >= 2) {
        const LineFit f = fit_line(ns, ts);
        const double thr = f.b > 0 ? 4.0 / f.b : 0.0;  // fp32 input bytes per second
        const double eff = thr * m.bytes_per_element / 4.0;
        prof += std::string(prof.empty() ? "\n" : ",\n") + "    " + jstr(m.name) + ": {\"overhead_us\": " +
                jnum(std::max(0.0, f.a) * 1e6) + ", \"bytes_per_element\": " + jnum(m.bytes_per_element) +
                ", \"effective_bandwidth_GBps\": " + jnum(eff / 1e9) + ", \"throughput_GBps\": " + jnum(thr / 1e9) +
                ", \"formula\": " + jstr(m.formula) + ", \"notes\": " +
                jstr("measured compress+decompress, " + m.params + "; least-squares fit over n = 2^" +
                     std::to_string(opt.min_log2) + "..2^" + std::to_string(opt.max_log2) + ", R^2 = " + jnum(f.r2)) +
                "}";
      }
    }
    j += "\n  }\n}\n";
    write_file(opt.out, j);

    if (!opt.profile.empty()) {
      std::vector<double> ns, ts;
      for (const auto& [n, t] : copy) {
        ns.push_back(static_cast<double>(n));
        ts.push_back(t);
      }
      const LineFit f = fit_line(ns, ts);
      const double copy_bw = f.b > 0 ? 8.0 / f.b : 0.0;
      prof = "\n    \"none\": {\"overhead_us\": " + jnum(std::max(0.0, f.a) * 1e6) +
             ", \"bytes_per_element\": 8, \"effective_bandwidth_GBps\": " + jnum(copy_bw / 1e9) +
             ", \"throughput_GBps\": " + jnum(copy_bw / 2e9) +
             ", \"formula\": \"copy: read 4 + write 4\", \"notes\": \"measured device-to-device copy, R^2 = " + jnum(f.r2) + "\"}" +
             (prof.empty() ? "" : ",") + prof;
      double peak = datasheet_peak_GBps(key);
      const std::string peak_note = peak > 0 ? "datasheet HBM peak" : "no datasheet entry: measured copy bandwidth";
      if (peak <= 0) peak = copy_bw / 1e9;
      std::string p = "{\n  \"schema_version\": 1,\n  \"kind\": \"lgreco-device-profile\",\n  \"device\": " + jstr(key) +
                      ",\n  \"estimate\": false,\n  \"peak_bandwidth_GBps\": " + jnum(peak) + ",\n  \"description\": " +
                      jstr("Measured compress+decompress cost per layer on " + device + " (peak_bandwidth_GBps: " +
                           peak_note + "; invalid methods are left out)") +
                      ",\n  \"derivation\": " +
                      jstr("time_s = overhead_us·1e-6 + numel·bytes_per_element / (effective_bandwidth_GBps·1e9), fitted "
                           "by least squares to the median compress+decompress time of a size sweep; throughput_GBps = "
                           "4/slope; effective_bandwidth_GBps = throughput_GBps·bytes_per_element/4 with bytes_per_element "
                           "from the written traffic formula. Written by bench/gpu (lgreco_bench_gpu --profile).") +
                      ",\n  \"provenance\": {\"date\": " + jstr(utc_now()) + ", \"command\": " + jstr(opt.argv) +
                      ", \"device\": " + jstr(device) + ", \"git_sha\": " + jstr(lgreco::build_info::git_sha()) +
                      ", \"cuda_runtime\": " + jstr(kc::runtime_version()) + "},\n  \"methods\": {" + prof + "\n  }\n}\n";
      write_file(opt.profile, p);
    }
    return invalid.empty() ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "lgreco_bench_gpu: error: " << e.what() << "\n";
    return 1;
  }
}
