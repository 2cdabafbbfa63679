// Catch2's implementation, compiled once into kolo_catch_runner instead of once per test
// program (it takes 25-45 s to compile, longer than any test file: about 6 minutes of every
// build of the suite on 2 cores). Programs with a main of their own call run_catch
// (support/catch_session.h); the others link kolo_catch_main (catch_main.cc).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "support/catch_session.h"

namespace kolo_test {

int run_catch(int argc, char** argv, const std::string& report_file) {
  Catch::Session session;
  // A filter that matches no test case (a renamed tag, a name that ctest split) fails instead
  // of passing without running anything: as if every run had `-w NoTests`.
  session.configData().warnings = Catch::WarnAbout::NoTests;
  const int error = session.applyCommandLine(argc, argv);
  if (error != 0) return error;
  if (!report_file.empty()) session.configData().outputFilename = report_file;
  return session.run();
}

}  // namespace kolo_test
