// The Catch2 main of the single test binary (compiled once, apart from the tests).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
