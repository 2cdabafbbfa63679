#include "common/example_main.h"

#include <cstdio>
#include <exception>
#include <new>

#include "common/fail_together.h"
#include "kolo/kolo.h"

namespace kolo::examples {
namespace {

std::string& program_name() {
  static std::string name = "kolo";
  return name;
}

}  // namespace

void report_error(const std::string& message) {
  const bool other_rank = kolo::is_initialized() && kolo::rank() != 0;
  std::fprintf(stderr, "%s: error%s: %s\n", program_name().c_str(),
               other_rank ? (" on rank " + std::to_string(kolo::rank())).c_str() : "", message.c_str());
  std::fflush(stderr);
}

int example_main(const std::string& program, int argc, char** argv, const std::function<int(int, char**)>& body) {
  program_name() = program;
  int status = 1;
  try {
    kolo::init();
  } catch (const std::exception& e) {
    report_error(e.what());
    return 1;
  }
  try {
    status = body(argc, argv);
  } catch (const ReportedFailure&) {
    status = 1;
  } catch (const std::bad_alloc&) {  // its what() says only "std::bad_alloc"
    report_error("out of memory: the batch size, image size or model needs more than this machine has");
    status = 1;
  } catch (const std::exception& e) {
    report_error(e.what());
    status = 1;
  }
  // A rank that failed alone stops kolo on every rank: the others' pending operations fail
  // with Aborted at once instead of waiting for a partner that will not come.
  kolo::shutdown();
  return status;
}

}  // namespace kolo::examples
