#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "core/units.hpp"

using namespace lgreco::units;

TEST_CASE("sizes parse to bytes with binary, decimal and nccl-tests units") {
  CHECK(parse_bytes("4096") == 4096);
  CHECK(parse_bytes("4096B") == 4096);
  CHECK(parse_bytes("64MiB") == 64ull * 1024 * 1024);
  CHECK(parse_bytes("64 MiB") == 64ull * 1024 * 1024);
  CHECK(parse_bytes("32K") == 32768);  // all_reduce_perf -b 32K
  CHECK(parse_bytes("16G") == 16ull << 30);
  CHECK(parse_bytes("1.5GiB") == 3ull << 29);
  CHECK(parse_bytes("2MB") == 2000000);
  CHECK(parse_bytes("3kB") == 3000);
}

TEST_CASE("bad sizes are ConfigErrors that quote the text") {
  CHECK_THROWS_AS(parse_bytes(""), lgreco::ConfigError);
  CHECK_THROWS_AS(parse_bytes("-1"), lgreco::ConfigError);
  CHECK_THROWS_AS(parse_bytes("1.5B"), lgreco::ConfigError);
  CHECK_THROWS_WITH(parse_bytes("64MeB"), Catch::Contains("64MeB") && Catch::Contains("MeB"));
  CHECK_THROWS_AS(parse_bytes("abc"), lgreco::ConfigError);
  CHECK(parse_bytes("18000000000000000000") == 18000000000000000000ULL);
  CHECK_THROWS_WITH(parse_bytes("16EiB"), Catch::Contains("16EiB"));
  CHECK_THROWS_WITH(parse_bytes("20000000000000000000"), Catch::Contains("20000000000000000000") && Catch::Contains("1.8e+19"));
}

TEST_CASE("durations parse to seconds") {
  CHECK(parse_seconds("1.5us") == Approx(1.5e-6));
  CHECK(parse_seconds("1.5µs") == Approx(1.5e-6));
  CHECK(parse_seconds("10ns") == Approx(1e-8));
  CHECK(parse_seconds("3ms") == Approx(3e-3));
  CHECK(parse_seconds("2s") == 2.0);
  CHECK(parse_seconds("2") == 2.0);
  CHECK_THROWS_AS(parse_seconds("2 minutes"), lgreco::ConfigError);
  CHECK_THROWS_AS(parse_seconds("-1s"), lgreco::ConfigError);
}

TEST_CASE("bandwidths parse to bytes per second; bits are divided by 8") {
  CHECK(parse_bandwidth_Bps("25Gbps") == Approx(25e9 / 8));
  CHECK(parse_bandwidth_Bps("25Gb/s") == Approx(25e9 / 8));
  CHECK(parse_bandwidth_Bps("400Gbit/s") == Approx(50e9));
  CHECK(parse_bandwidth_Bps("12GBps") == Approx(12e9));
  CHECK(parse_bandwidth_Bps("12GB/s") == Approx(12e9));
  CHECK(parse_bandwidth_Bps("100Mbps") == Approx(12.5e6));
  CHECK(parse_bandwidth_Bps("1e9Bps") == Approx(1e9));
  CHECK_THROWS_WITH(parse_bandwidth_Bps("10"), Catch::Contains("needs a unit"));  // 10 what?
  CHECK_THROWS_AS(parse_bandwidth_Bps("0Gbps"), lgreco::ConfigError);
  CHECK_THROWS_AS(parse_bandwidth_Bps("25Gbsp"), lgreco::ConfigError);
  CHECK(gbps_to_Bps(Bps_to_gbps(123.0)) == Approx(123.0));
}

TEST_CASE("formatting picks a readable unit") {
  CHECK(format_bytes(512) == "512 B");
  CHECK(format_bytes(64.0 * 1024 * 1024) == "64 MiB");
  CHECK(format_bytes_exact(2097152) == "2 MiB");
  CHECK(format_bytes_exact(24117256) == "24117256 B");  // not a whole KiB: exact in bytes
  CHECK(format_bytes_exact(3.0 * 1024 * 1024 * 1024 * 1024) == "3072 GiB");  // no unit above GiB
  CHECK(format_seconds(1.5e-6) == "1.5 us");
  CHECK(format_bandwidth(25e9 / 8) == "25 Gb/s");
}
