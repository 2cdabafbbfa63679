// kolo_runtime_unit_tests: single-process tests of the runtime's pure logic (no mpirun).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
