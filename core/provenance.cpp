#include "core/provenance.hpp"

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>

#include "core/build_info.hpp"

namespace lgreco {
namespace {

std::vector<std::string>& argv_storage() {
  static std::vector<std::string> v;
  return v;
}

// FIPS 180-4 SHA-256.
class Sha256 {
 public:
  void update(const unsigned char* p, std::size_t n) {
    total_ += n;
    while (n > 0) {
      const std::size_t take = std::min<std::size_t>(64 - fill_, n);
      std::memcpy(buf_ + fill_, p, take);
      fill_ += take;
      p += take;
      n -= take;
      if (fill_ == 64) {
        block(buf_);
        fill_ = 0;
      }
    }
  }
  std::string hex() {
    const std::uint64_t bits = total_ * 8;
    const unsigned char pad = 0x80;
    update(&pad, 1);
    const unsigned char zero = 0;
    while (fill_ != 56) update(&zero, 1);
    unsigned char len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(bits >> (56 - 8 * i));
    update(len, 8);
    static const char* kHex = "0123456789abcdef";
    std::string out;
    for (std::uint32_t w : h_) {
      for (int i = 7; i >= 0; --i) out += kHex[(w >> (4 * i)) & 0xF];
    }
    return out;
  }

 private:
  static std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
  void block(const unsigned char* p) {
    static constexpr std::uint32_t k[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
    std::uint32_t w[64];
    for (int i = 0; i < 16; ++i) {
      w[i] = (std::uint32_t(p[4 * i]) << 24) | (std::uint32_t(p[4 * i + 1]) << 16) |
             (std::uint32_t(p[4 * i + 2]) << 8) | std::uint32_t(p[4 * i + 3]);
    }
    for (int i = 16; i < 64; ++i) {
      const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    std::uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
    for (int i = 0; i < 64; ++i) {
      const std::uint32_t s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
      const std::uint32_t ch = (e & f) ^ (~e & g);
      const std::uint32_t t1 = h + s1 + ch + k[i] + w[i];
      const std::uint32_t s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
      const std::uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
      const std::uint32_t t2 = s0 + maj;
      h = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    h_[0] += a; h_[1] += b; h_[2] += c; h_[3] += d; h_[4] += e; h_[5] += f; h_[6] += g; h_[7] += h;
  }

  std::array<std::uint32_t, 8> h_ = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                     0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  unsigned char buf_[64] = {};
  std::size_t fill_ = 0;
  std::uint64_t total_ = 0;
};

}  // namespace

void set_command_line(std::vector<std::string> argv) { argv_storage() = std::move(argv); }
const std::vector<std::string>& command_line() { return argv_storage(); }

std::string sha256_hex(const std::string& bytes) {
  Sha256 s;
  s.update(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  return s.hex();
}

std::string sha256_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path.string() + ": cannot open for hashing");
  Sha256 s;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    s.update(reinterpret_cast<const unsigned char*>(buf.data()), static_cast<std::size_t>(in.gcount()));
  }
  return s.hex();
}

std::string fast64_file(const std::filesystem::path& path) {
  constexpr std::uint64_t kP1 = 0x9E3779B185EBCA87ull, kP2 = 0xC2B2AE3D27D4EB4Full;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path.string() + ": cannot open for hashing");
  std::uint64_t lane[4] = {kP1, kP2, kP1 ^ kP2, 0x165667B19E3779F9ull};
  std::uint64_t total = 0;
  std::vector<std::uint64_t> buf(1 << 17);  // 1 MiB
  auto mix = [&](std::uint64_t& l, std::uint64_t w) {
    l ^= w * kP1;
    l = (l << 31) | (l >> 33);
    l *= kP2;
  };
  while (in) {
    in.read(reinterpret_cast<char*>(buf.data()), static_cast<std::streamsize>(buf.size() * 8));
    const auto got = static_cast<std::size_t>(in.gcount());
    total += got;
    const std::size_t words = (got + 7) / 8;
    if (got % 8) {  // zero-pad the tail of the last word
      auto* bytes = reinterpret_cast<unsigned char*>(buf.data());
      for (std::size_t i = got; i < words * 8; ++i) bytes[i] = 0;
    }
    std::size_t i = 0;
    for (; i + 4 <= words; i += 4) {
      mix(lane[0], buf[i]);
      mix(lane[1], buf[i + 1]);
      mix(lane[2], buf[i + 2]);
      mix(lane[3], buf[i + 3]);
    }
    for (; i < words; ++i) mix(lane[i & 3], buf[i]);
  }
  std::uint64_t h = total * kP1;
  for (std::uint64_t l : lane) {
    h ^= l;
    h = ((h << 27) | (h >> 37)) * kP2;
  }
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  h *= 0xC4CEB9FE1A85EC53ull;
  h ^= h >> 33;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

std::string utc_now_iso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Json provenance_json(const std::vector<std::filesystem::path>& inputs) {
  Json in = Json::array();
  for (const auto& p : inputs) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(p, ec);
    Json entry = {{"path", p.string()}, {"size_bytes", ec ? 0 : size}};
    if (!ec && size > kSha256MaxBytes) entry["fast64"] = fast64_file(p);
    else entry["sha256"] = sha256_file(p);
    in.push_back(entry);
  }
  return {{"tool", "lgreco"},
          {"version", build_info::version()},
          {"git_sha", build_info::git_sha()},
          {"build_type", build_info::build_type()},
          {"cuda", build_info::cuda()},
          {"argv", command_line()},
          {"created_utc", utc_now_iso8601()},
          {"inputs", in}};
}

}  // namespace lgreco
