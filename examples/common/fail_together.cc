#include "common/fail_together.h"

#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "common/example_main.h"
#include "kolo/kolo.h"

namespace kolo::examples {

void fail_together(const std::function<void()>& work) {
  std::string message;
  bool failed = false;
  try {
    work();
  } catch (const std::exception& e) {
    failed = true;
    message = e.what();
  }
  // Slot r is 1 if rank r failed: after the sum, every rank knows who did.
  std::vector<int32_t> failures(static_cast<std::size_t>(kolo::size()), 0);
  failures[static_cast<std::size_t>(kolo::rank())] = failed ? 1 : 0;
  kolo::allreduce("examples/fail_together", kolo::view(failures), {.op = kolo::ReduceOp::Sum});
  for (std::size_t r = 0; r < failures.size(); ++r) {
    if (failures[r] == 0) continue;
    if (static_cast<int>(r) == kolo::rank()) report_error(message);
    throw ReportedFailure();
  }
}

}  // namespace kolo::examples
