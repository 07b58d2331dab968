// Catch2 main for verl_tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
