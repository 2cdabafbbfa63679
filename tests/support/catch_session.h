// Runs the program's Catch tests for a main of its own (support/mpi_main.cc,
// models/gpu/main.cc, catch_main.cc): Catch's implementation, Catch::Session included, is
// compiled once, in support/catch_runner.cc. Takes the command line's options, writes the
// report to `report_file` when it is not empty, and returns the number of failed tests
// (or Catch's error code for a bad command line).
#pragma once

#include <string>

namespace kolo_test {

int run_catch(int argc, char** argv, const std::string& report_file = "");

}  // namespace kolo_test
