// Candidate tables in HDF5: round trip with the JSON form, atomic output, and bad files (truncated,
// missing or unknown members, wrong lengths, bad indices, NaN) rejected with file, field and value.
#include <catch2/catch.hpp>
#include <hdf5.h>

#include <cmath>
#include <fstream>
#include <limits>

#include "core/error.hpp"
#include "planner/tables.hpp"
#include "sample_tables.hpp"
#include "../traces/tmp_dir.hpp"

using namespace lgreco::planner;
using lgreco::Json;
using lgreco::planner::testing::sample_tables;

namespace {

// Every optional field present somewhere: kernel times, compute times, allgather, a 0-d tensor,
// several methods, settings shared across windows.
Tables rich_tables() {
  Tables t = sample_tables();
  t.error_mode = "trajectory";
  t.acc_steps = 7;
  t.provenance = Json{{"producer", "test"}, {"argv", {"a", "b"}}};
  for (Window& w : t.windows) {
    w.layers[0].compute_time_s = 2.5e-4;
    w.layers[0].candidates[2].kernel_time_s = 1.25e-5;
    LayerTable s;
    s.name = "logit_scale";
    s.kind = "norm";
    s.numel = 1;
    s.bucket = 1;
    s.backward_order = 3;
    const Candidate none = make_candidate(lgreco::kernels::MethodSpec{}, s.shape, 0.0);
    REQUIRE(none.bytes == 4);  // a scalar ([]): one fp32 value
    Candidate topk = make_candidate(lgreco::kernels::parse_method("topk", {{"density", "0.5"}}), s.shape, 0.1);
    REQUIRE(topk.bytes == 5);  // k = 1: a 1-byte bitmap and one value beat a (value, index) pair
    REQUIRE(topk.collective == lgreco::Collective::kAllgather);
    topk.kernel_time_s = 0.0;
    s.candidates = {none, topk};
    s.default_index = 1;
    w.layers.push_back(s);
  }
  return t;
}

// Small edits of a written file through the HDF5 API.
struct H5Edit {
  hid_t file;
  explicit H5Edit(const std::filesystem::path& p) : file(H5Fopen(p.string().c_str(), H5F_ACC_RDWR, H5P_DEFAULT)) {
    REQUIRE(file >= 0);
  }
  ~H5Edit() { H5Fclose(file); }
  void remove(const std::string& path) { REQUIRE(H5Ldelete(file, path.c_str(), H5P_DEFAULT) >= 0); }
  void put_doubles(const std::string& path, const std::vector<double>& v) {
    const hsize_t dims[1] = {v.size()};
    const hid_t space = H5Screate_simple(1, dims, nullptr);
    const hid_t d = H5Dcreate2(file, path.c_str(), H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(d >= 0);
    if (!v.empty()) REQUIRE(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) >= 0);
    H5Dclose(d);
    H5Sclose(space);
  }
  void overwrite_int64(const std::string& path, const std::vector<std::int64_t>& v) {
    const hid_t d = H5Dopen2(file, path.c_str(), H5P_DEFAULT);
    REQUIRE(d >= 0);
    REQUIRE(H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) >= 0);
    H5Dclose(d);
  }
};

std::string read_error(const std::filesystem::path& p) {
  try {
    read_tables(p);
  } catch (const lgreco::Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("HDF5 tables round-trip to the same document as JSON", "[tables][h5]") {
  lgreco::test::TempDir dir;
  const Tables t = rich_tables();
  write_tables_h5(t, dir / "t.h5", "t.h5");
  CHECK(is_hdf5_file(dir / "t.h5"));
  const Tables back = read_tables(dir / "t.h5");
  CHECK(tables_to_json(back) == tables_to_json(t));
  CHECK(back.windows[0].layers[3].shape.empty());
  CHECK(back.windows[1].layers[3].candidates[1].collective == lgreco::Collective::kAllgather);
  CHECK(back.windows[0].layers[0].candidates[2].kernel_time_s == Approx(1.25e-5));
  CHECK_FALSE(back.windows[0].layers[1].candidates[2].kernel_time_s.has_value());
  CHECK_FALSE(back.windows[0].layers[1].compute_time_s.has_value());

  // The format is told by the signature, not by the name.
  std::filesystem::copy_file(dir / "t.h5", dir / "named.json");
  CHECK(tables_to_json(read_tables(dir / "named.json")) == tables_to_json(t));
  std::ofstream(dir / "plain.h5") << tables_to_json(t).dump();
  CHECK_FALSE(is_hdf5_file(dir / "plain.h5"));
  CHECK(tables_to_json(read_tables(dir / "plain.h5")) == tables_to_json(t));
}

TEST_CASE("PendingTables writes HDF5 or JSON by name, and nothing until commit", "[tables][h5]") {
  lgreco::test::TempDir dir;
  const Tables t = rich_tables();
  for (const char* name : {"out.h5", "out.hdf5", "out.json"}) {
    CAPTURE(name);
    {
      PendingTables p(t, dir / name, lgreco::Overwrite::kRefuse);
      CHECK_FALSE(std::filesystem::exists(dir / name));
    }
    CHECK(dir.entries() == 0);  // dropped: no output, no temporary
    PendingTables p(t, dir / name, lgreco::Overwrite::kRefuse);
    p.commit();
    CHECK(is_hdf5_file(dir / name) == wants_hdf5(dir / name));
    CHECK(tables_to_json(read_tables(dir / name)) == tables_to_json(t));
    CHECK_THROWS_AS(PendingTables(t, dir / name, lgreco::Overwrite::kRefuse), lgreco::ConfigError);
    std::filesystem::remove(dir / name);
  }
}

TEST_CASE("bad HDF5 tables are rejected naming the file, the member and the value", "[tables][h5][errors]") {
  lgreco::test::TempDir dir;
  const Tables t = rich_tables();
  const auto fresh = [&](const std::string& name) {
    write_tables_h5(t, dir / name, name);
    return dir / name;
  };

  SECTION("truncated") {
    const auto p = fresh("cut.h5");
    std::filesystem::resize_file(p, std::filesystem::file_size(p) / 2);
    CHECK_THAT(read_error(p), Catch::Contains("cut.h5") && Catch::Contains("truncated or corrupt"));
  }
  SECTION("NaN error names window, layer and candidate") {
    Tables bad = t;
    bad.windows[1].layers[0].candidates[3].error = std::numeric_limits<double>::quiet_NaN();
    write_tables_h5(bad, dir / "nan.h5", "nan.h5");
    CHECK_THAT(read_error(dir / "nan.h5"), Catch::Contains("nan.h5") && Catch::Contains("window 1") &&
                                               Catch::Contains("fc2.weight") && Catch::Contains("candidate 3") &&
                                               Catch::Contains("error is NaN (not finite)"));
  }
  SECTION("missing dataset") {
    const auto p = fresh("miss.h5");
    H5Edit(p).remove("windows/1/candidate_bytes");
    CHECK_THAT(read_error(p), Catch::Contains("miss.h5: windows/1") && Catch::Contains("missing dataset 'candidate_bytes'"));
  }
  SECTION("wrong length") {
    const auto p = fresh("len.h5");
    {
      H5Edit e(p);
      e.remove("windows/0/candidate_bytes");
      e.put_doubles("windows/0/candidate_bytes", {1.0, 2.0});
    }
    CHECK_THAT(read_error(p), Catch::Contains("windows/0/candidate_bytes: 2 elements; expected 11"));
  }
  SECTION("unknown member") {
    const auto p = fresh("extra.h5");
    H5Edit(p).put_doubles("windows/0/candidate_colour", {1.0});
    CHECK_THAT(read_error(p), Catch::Contains("unknown dataset 'candidate_colour'"));
  }
  SECTION("setting index out of range") {
    const auto p = fresh("idx.h5");
    std::vector<std::int64_t> setting(11, 0);
    setting[4] = 99;
    H5Edit(p).overwrite_int64("windows/0/candidate_setting", setting);
    CHECK_THAT(read_error(p), Catch::Contains("layer 1 ('fc1.weight'), candidate 0") &&
                                  Catch::Contains("candidate_setting = 99"));
  }
  SECTION("a window missing from the sequence") {
    const auto p = fresh("gap.h5");
    H5Edit(p).remove("windows/0");
    CHECK_THAT(read_error(p), Catch::Contains("no window '0'"));
  }
  SECTION("not tables") {
    const auto p = dir / "other.h5";
    const hid_t f = H5Fcreate(p.string().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(f >= 0);
    H5Fclose(f);
    CHECK_THAT(read_error(p), Catch::Contains("other.h5") && Catch::Contains("'kind' is missing"));
  }
}
