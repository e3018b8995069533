// Bad input: missing, random-bytes, truncated and corrupted files; NaN/Inf counts; all-zero layers.
// (Wrong version, shape mismatch and missing datasets are written with h5py in
// tests/python/test_trace_validate.py, since only traces/*.cpp may use HDF5.)
#include <catch2/catch.hpp>

#include <fstream>
#include <limits>
#include <random>

#include "core/error.hpp"
#include "tests/traces/tmp_dir.hpp"
#include "traces/reader.hpp"
#include "traces/validate.hpp"
#include "traces/writer.hpp"

using namespace lgreco;
using namespace lgreco::traces;

namespace {

// Two layers, three steps; layer "b" gets `nan` NaNs and `inf` Infs at step 1, and step 2 of "a" is zero.
void write_trace(const std::filesystem::path& file, int nan, int inf, std::int64_t big = 4096) {
  TraceWriter w(file, {"m", 1, StorageDtype::kFloat32, "test", "", ""},
                {{"a", {64, 64}, 4096, LayerKind::kWeight, 0, 1, StorageDtype::kFloat32},
                 {"b", {big}, big, LayerKind::kBias, 0, 0, StorageDtype::kFloat32}},
                Overwrite::kRefuse);
  std::mt19937 gen(11);
  std::normal_distribution<float> nd;
  for (int t = 0; t < 3; ++t) {
    w.add_step(t);
    std::vector<float> a(4096), b(static_cast<std::size_t>(big));
    for (auto& x : a) x = t == 2 ? 0.0f : nd(gen);
    for (auto& x : b) x = nd(gen);
    if (t == 1) {
      for (int k = 0; k < nan; ++k) b[static_cast<std::size_t>(3 * k)] = std::numeric_limits<float>::quiet_NaN();
      for (int k = 0; k < inf; ++k) b[static_cast<std::size_t>(3 * k + 1)] = -std::numeric_limits<float>::infinity();
    }
    w.write(0, t, a);
    w.write(1, t, b);
  }
  w.finish();
}

std::string open_error(const std::filesystem::path& file) {
  try {
    TraceReader r(file);
  } catch (const TraceError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a clean trace validates with statistics", "[validate]") {
  test::TempDir dir;
  write_trace(dir / "ok.h5", 0, 0);
  const auto rep = validate_trace(dir / "ok.h5");
  CHECK(rep.ok);
  CHECK(rep.first_problem.empty());
  REQUIRE(rep.stats.size() == 2);
  CHECK(rep.stats[0].zero_steps == 1);
  REQUIRE(rep.warnings.size() == 1);
  CHECK(rep.warnings[0].find("layer 'a'") != std::string::npos);
  // Mean of three step norms where one is 0: for N(0,1) entries ‖g‖ ≈ √4096 = 64.
  CHECK(rep.stats[0].l2_norm_mean == Approx(2.0 / 3.0 * 64).epsilon(0.05));
  CHECK(rep.stats[0].l2_norm_max == Approx(64).epsilon(0.05));
}

TEST_CASE("NaN and Inf are counted per layer and make the trace invalid", "[validate]") {
  test::TempDir dir;
  write_trace(dir / "nan.h5", 5, 2);
  const auto rep = validate_trace(dir / "nan.h5");
  CHECK_FALSE(rep.ok);
  REQUIRE(rep.stats.size() == 2);
  CHECK(rep.stats[0].nan_count == 0);
  CHECK(rep.stats[1].nan_count == 5);
  CHECK(rep.stats[1].inf_count == 2);
  CHECK(rep.first_problem == "trace " + (dir / "nan.h5").string() + ": layer 'b' (/layers/000001/grad): 5 NaN and 2 Inf values");
}

TEST_CASE("files that are not traces give one-line errors naming the file", "[validate]") {
  test::TempDir dir;
  const auto missing = dir / "missing.h5";
  CHECK(open_error(missing) == "trace " + missing.string() + ": no such file");
  CHECK(open_error(dir.path()).find("is a directory") != std::string::npos);

  const auto noise = dir / "noise.h5";
  {
    std::ofstream out(noise, std::ios::binary);
    std::mt19937 gen(5);
    for (int k = 0; k < 100000; ++k) out.put(static_cast<char>(gen()));
  }
  const std::string e = open_error(noise);
  CHECK(e.rfind("trace " + noise.string() + ": not an HDF5 file", 0) == 0);
  CHECK(e.find('\n') == std::string::npos);
  const auto rep = validate_trace(noise);
  CHECK_FALSE(rep.ok);
  CHECK_FALSE(rep.structure_ok);
  CHECK(rep.first_problem == e);
}

TEST_CASE("a truncated trace is reported", "[validate]") {
  test::TempDir dir;
  const auto file = dir / "cut.h5";
  write_trace(file, 0, 0);
  const auto size = std::filesystem::file_size(file);
  const auto cut = GENERATE(as<double>{}, 0.9, 0.5, 0.01);
  CAPTURE(cut);
  std::filesystem::resize_file(file, static_cast<std::uintmax_t>(static_cast<double>(size) * cut));
  const auto rep = validate_trace(file);
  CHECK_FALSE(rep.ok);
  CHECK(rep.first_problem.rfind("trace " + file.string() + ": ", 0) == 0);
  CHECK(rep.first_problem.find('\n') == std::string::npos);
}

TEST_CASE("corrupted chunk data is reported with the dataset", "[validate]") {
  test::TempDir dir;
  const auto file = dir / "flip.h5";
  // Layer b of 1 M elements dominates the file: bytes in its middle belong to its compressed chunks.
  write_trace(file, 0, 0, 1 << 20);
  const auto size = std::filesystem::file_size(file);
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2));
    for (int k = 0; k < 64; ++k) f.put(static_cast<char>(0x5a));
  }
  const auto rep = validate_trace(file);
  CHECK_FALSE(rep.ok);
  CHECK(rep.structure_ok);
  CHECK(rep.first_problem.find("layer 'b' (/layers/000001/grad): cannot read step index") != std::string::npos);
}
