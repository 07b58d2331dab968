// verl::Error hierarchy and VERL_CHECK.
#include <catch2/catch.hpp>

#include "verl/core/error.h"

TEST_CASE("VERL_CHECK throws InvalidArgument with the streamed message") {
  const int got = 3;
  try {
    VERL_CHECK(got == 4, "expected 4, got ", got);
    FAIL("no exception");
  } catch (const verl::InvalidArgument& e) {
    CHECK(std::string(e.what()) == "expected 4, got 3");
  }
}

TEST_CASE("VERL_CHECK passes silently when the condition holds") { CHECK_NOTHROW([] { VERL_CHECK(1 + 1 == 2, "math"); }()); }

TEST_CASE("error classes derive from verl::Error and std::runtime_error") {
  CHECK_THROWS_AS([] { VERL_CHECK_AS(ConfigTypeError, false, "x"); }(), verl::ConfigError);
  CHECK_THROWS_AS([] { VERL_CHECK_AS(ConfigError, false, "x"); }(), verl::Error);
  CHECK_THROWS_AS([] { VERL_CHECK_AS(DataError, false, "x"); }(), verl::Error);
  CHECK_THROWS_AS([] { VERL_CHECK_AS(CheckpointError, false, "x"); }(), std::runtime_error);
  CHECK_THROWS_AS([] { VERL_CHECK_AS(TypeMismatch, false, "x"); }(), verl::Error);
}
