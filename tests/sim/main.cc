// kolo_sim_unit_tests: the simulator's cost model, calibration and hardware files, in one
// process.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
