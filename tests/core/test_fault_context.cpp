#include <catch2/catch.hpp>

#include <string>

#include "core/fault_context.hpp"

using lgreco::FaultContext;
using lgreco::fault_context;

TEST_CASE("fault context: the outermost live scope's text, none outside") {
  CHECK(fault_context() == nullptr);
  {
    const FaultContext outer("trace run.h5");
    REQUIRE(fault_context() != nullptr);
    CHECK(std::string(fault_context()) == "trace run.h5");
    {
      const FaultContext inner("trace other.h5");
      CHECK(std::string(fault_context()) == "trace run.h5");
    }
    CHECK(std::string(fault_context()) == "trace run.h5");
  }
  CHECK(fault_context() == nullptr);
  const FaultContext long_one(std::string(2000, 'x'));
  CHECK(std::string(fault_context()).size() == 511);
}
