#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <sys/stat.h>
#include <unistd.h>

#include "core/atomic_file.hpp"
#include "core/cancel.hpp"
#include "core/error.hpp"

namespace fs = std::filesystem;

namespace {
fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("lgreco_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}
std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
std::size_t count_files(const fs::path& d) {
  std::size_t n = 0;
  for ([[maybe_unused]] auto& e : fs::directory_iterator(d)) ++n;
  return n;
}
}  // namespace

TEST_CASE("committed output appears only at commit, with no temporary left") {
  const auto d = fresh_dir("atomic1");
  const auto dest = d / "out.json";
  {
    lgreco::AtomicFile f(dest, lgreco::Overwrite::kRefuse);
    f.stream() << "hello";
    CHECK_FALSE(fs::exists(dest));
    f.commit();
  }
  CHECK(slurp(dest) == "hello");
  CHECK(count_files(d) == 1);
  fs::remove_all(d);
}

TEST_CASE("an abandoned output leaves neither the file nor a temporary") {
  const auto d = fresh_dir("atomic2");
  const auto dest = d / "out.json";
  try {
    lgreco::AtomicFile f(dest, lgreco::Overwrite::kRefuse);
    f.stream() << "partial";
    throw std::runtime_error("simulated failure");
  } catch (const std::runtime_error&) {
  }
  CHECK_FALSE(fs::exists(dest));
  CHECK(count_files(d) == 0);
  fs::remove_all(d);
}

TEST_CASE("an existing file is kept unless overwriting is allowed") {
  const auto d = fresh_dir("atomic3");
  const auto dest = d / "keep.txt";
  lgreco::write_file_atomic(dest, "user data", lgreco::Overwrite::kRefuse);
  CHECK_THROWS_WITH(lgreco::write_file_atomic(dest, "new", lgreco::Overwrite::kRefuse),
                    Catch::Contains("keep.txt") && Catch::Contains("exists"));
  CHECK(slurp(dest) == "user data");
  // A failed run with overwriting allowed still leaves the old content.
  try {
    lgreco::AtomicFile f(dest, lgreco::Overwrite::kAllow);
    f.stream() << "half";
    throw std::runtime_error("boom");
  } catch (const std::runtime_error&) {
  }
  CHECK(slurp(dest) == "user data");
  lgreco::write_file_atomic(dest, "new", lgreco::Overwrite::kAllow);
  CHECK(slurp(dest) == "new");
  fs::remove_all(d);
}

TEST_CASE("an output is never an input, by name, by another spelling or by link; two outputs are never one file") {
  const auto d = fresh_dir("atomic_inputs");
  const auto in = d / "trace.h5";
  lgreco::write_file_atomic(in, "recorded", lgreco::Overwrite::kRefuse);
  fs::create_symlink(in, d / "link.h5");
  for (const fs::path& out : {in, d / "." / "trace.h5", d / "link.h5"})
    CHECK_THROWS_AS(lgreco::refuse_output_over_inputs(out, {"", "hgx-h100", in}), lgreco::UsageError);
  CHECK_THROWS_WITH(lgreco::refuse_output_over_inputs(in, {d / "link.h5"}), Catch::Contains("link.h5") && Catch::Contains("is the input"));
  lgreco::refuse_output_over_inputs(d / "new.json", {in});  // a new file is no input
  lgreco::refuse_output_over_inputs("", {in});              // no output
  CHECK(slurp(in) == "recorded");
  CHECK_THROWS_AS(lgreco::refuse_same_outputs(d / "o.json", d / "." / "o.json"), lgreco::UsageError);
  lgreco::refuse_same_outputs(d / "o.json", d / "t.h5");
  lgreco::refuse_same_outputs(d / "o.json", "");
  fs::remove_all(d);
}

TEST_CASE("a missing destination folder is a ConfigError naming it") {
  CHECK_THROWS_AS(lgreco::AtomicPath("/nonexistent-lgreco-dir/x.json", lgreco::Overwrite::kRefuse), lgreco::ConfigError);
}

TEST_CASE("a cancellation requested before commit discards the output") {
  const auto d = fresh_dir("atomic4");
  const auto dest = d / "out.txt";
  lgreco::write_file_atomic(dest, "old", lgreco::Overwrite::kRefuse);
  lgreco::AtomicFile f(dest, lgreco::Overwrite::kAllow);
  f.stream() << "new";
  lgreco::request_cancel(2);
  CHECK_THROWS_AS(f.commit(), lgreco::Cancelled);
  lgreco::reset_cancel();
  CHECK(slurp(dest) == "old");
  CHECK(count_files(d) == 1);  // no temporary left
  fs::remove_all(d);
}

TEST_CASE("discard_pending_outputs removes the temporaries of pending outputs only") {
  const auto d = fresh_dir("atomic5");
  lgreco::AtomicFile committed(d / "done.txt", lgreco::Overwrite::kRefuse);
  committed.stream() << "done";
  committed.commit();
  lgreco::AtomicFile pending(d / "pending.txt", lgreco::Overwrite::kRefuse);
  pending.stream() << "half" << std::flush;
  CHECK(count_files(d) == 2);  // done.txt and pending.txt's temporary
  lgreco::discard_pending_outputs();
  CHECK(count_files(d) == 1);
  CHECK(slurp(d / "done.txt") == "done");
  fs::remove_all(d);
}

TEST_CASE("outputs get the mode of a plainly created file (0666 minus the umask)") {
  const auto d = fresh_dir("atomic6");
  const mode_t old = ::umask(022);
  lgreco::write_file_atomic(d / "a.txt", "x", lgreco::Overwrite::kRefuse);
  ::umask(077);
  lgreco::write_file_atomic(d / "b.txt", "x", lgreco::Overwrite::kRefuse);
  ::umask(old);
  CHECK((fs::status(d / "a.txt").permissions() & fs::perms::all) ==
        (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read));
  CHECK((fs::status(d / "b.txt").permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write));
  fs::remove_all(d);
}

TEST_CASE("an output that is a device or a folder is refused") {
  CHECK_THROWS_WITH(lgreco::check_writable_destination("/dev/null", lgreco::Overwrite::kAllow),
                    Catch::Contains("/dev/null") && Catch::Contains("not a regular file"));
  CHECK_THROWS_WITH(lgreco::check_writable_destination("/tmp", lgreco::Overwrite::kAllow), Catch::Contains("directory"));
  CHECK_THROWS_WITH(lgreco::check_writable_destination("", lgreco::Overwrite::kAllow), Catch::Contains("empty"));
}
