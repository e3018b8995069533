#include <catch2/catch.hpp>

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
