// A step that may fail on some ranks only (reading a file, writing a checkpoint on rank 0),
// made to fail on all of them together: one message, and every rank stops, instead of one
// rank leaving while the others wait for it in the next collective.
#pragma once

#include <functional>
#include <stdexcept>

namespace kolo::examples {

// Thrown on every rank once a failure has been reported; example_main() exits with 1.
class ReportedFailure : public std::runtime_error {
 public:
  ReportedFailure() : std::runtime_error("failure already reported") {}
};

// Runs work on this rank, then all ranks compare outcomes (one small allreduce). If it threw
// on any rank, the lowest such rank prints its message and every rank throws ReportedFailure.
void fail_together(const std::function<void()>& work);

}  // namespace kolo::examples
