#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "core/provenance.hpp"

TEST_CASE("sha256 matches the FIPS 180-4 examples") {
  CHECK(lgreco::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(lgreco::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(lgreco::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST_CASE("provenance records the build and the command line") {
  lgreco::set_command_line({"lgreco", "plan", "--trace", "x.h5"});
  const auto p = lgreco::provenance_json();
  CHECK(p.at("tool") == "lgreco");
  CHECK(p.at("argv").size() == 4);
  CHECK(p.at("git_sha").get<std::string>().size() > 0);
  CHECK(p.at("cuda").is_boolean());
  CHECK(p.at("created_utc").get<std::string>().back() == 'Z');
}

TEST_CASE("fast64 identifies content: equal files hash equal, one changed byte changes it") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("lgreco_fast64_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string content(3 * 1024 * 1024 + 13, '\0');  // spans buffer refills and a ragged tail
  for (std::size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>((i * 2654435761u) >> 13);
  auto write = [&](const fs::path& p, const std::string& c) { std::ofstream(p, std::ios::binary) << c; };
  write(dir / "a", content);
  write(dir / "b", content);
  std::string changed = content;
  changed[changed.size() - 1] ^= 1;  // last byte, inside the zero-padded tail word
  write(dir / "c", changed);
  std::string longer = content + std::string(1, '\0');  // same words after padding, longer length
  write(dir / "d", longer);
  const auto a = lgreco::fast64_file(dir / "a");
  CHECK(a.size() == 16);
  CHECK(a == lgreco::fast64_file(dir / "b"));
  CHECK(a != lgreco::fast64_file(dir / "c"));
  CHECK(a != lgreco::fast64_file(dir / "d"));
  fs::remove_all(dir);
}
