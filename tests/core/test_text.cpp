#include <catch2/catch.hpp>

#include <string>

#include "core/text.hpp"

using lgreco::printable;

TEST_CASE("printable escapes control characters and broken UTF-8, keeps the rest") {
  CHECK(printable("fc.weight") == "fc.weight");
  CHECK(printable("a\nb\tc\rd") == "a\\nb\\tc\\rd");
  CHECK(printable(std::string("x\0y", 3)) == "x\\x00y");
  CHECK(printable("\x1b[31mred") == "\\x1B[31mred");
  CHECK(printable("\x7f") == "\\x7F");
  CHECK(printable("gr\xc3\xbc\xc3\x9f") == "gr\xc3\xbc\xc3\x9f");       // "grüß": valid UTF-8 kept
  CHECK(printable("\xe2\x82\xac") == "\xe2\x82\xac");                   // €
  CHECK(printable("\x89HDF") == "\\x89HDF");                            // a lone continuation byte
  CHECK(printable("\xc3") == "\\xC3");                                  // truncated sequence
  CHECK(printable("\xc0\xaf") == "\\xC0\\xAF");                         // overlong encoding of '/'
  CHECK(printable("\xed\xa0\x80") == "\\xED\\xA0\\x80");                // UTF-16 surrogate
  CHECK(lgreco::quote_name("a\nb") == "'a\\nb'");
}

TEST_CASE("the result of printable never holds a byte below 0x20") {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  const std::string out = printable(all);
  for (const char c : out) CHECK(static_cast<unsigned char>(c) >= 0x20);
}
