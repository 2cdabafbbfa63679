// kolo_ops_unit_tests: single-process tests of the collective backends' host-side logic
// (dtypes, the host DeviceOps, the hierarchical and host-staged backends, the CUDA error
// checks), with fakes standing in for devices and peers; no mpirun.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
