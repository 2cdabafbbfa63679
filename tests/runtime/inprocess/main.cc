// kolo_inprocess_tests: many ranks in one process (ranks as threads over the in-process
// transport, kolo's time simulated), no mpirun.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
