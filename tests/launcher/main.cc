// kolo_launcher_tests: kolorun's parsing and command construction called directly, and
// kolorun itself run as a program (it starts mpirun; no mpirun around the tests).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
