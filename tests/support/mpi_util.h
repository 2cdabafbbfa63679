// Helpers shared by the tests that run under mpirun (their main is support/mpi_main.cc).
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <mpi.h>

#include "kolo/kolo.h"
#include "support/values.h"

namespace kolo_test {

// No operation in these tests may take longer; a hang fails the test instead.
inline constexpr std::chrono::seconds kOpTimeout{90};

// An operation still running after its time bound: the test cannot go on (its buffers
// are still in use by kolo, and the ranks are out of step), so the whole job stops here
// with a message instead of hanging or reading freed memory.
[[noreturn]] inline void abort_on_timeout(const std::string& what) {
  int r = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  std::fprintf(stderr,
               "rank %d: FAILED: %s did not finish within %lld s (test case '%s'); "
               "aborting the job\n",
               r, what.c_str(), static_cast<long long>(kOpTimeout.count()),
               Catch::getResultCapture().getCurrentTestName().c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 4);
  std::abort();
}

// Waits (bounded) for the handle; stops the job if it is still pending.
inline kolo::Status finish(const kolo::Handle& h,
                           std::chrono::milliseconds timeout = kOpTimeout) {
  REQUIRE(h.valid());
  const kolo::Status s = h.wait_for(timeout);
  if (s.code() == kolo::StatusCode::Pending) abort_on_timeout("an operation");
  return s;
}

inline void require_ok(const kolo::Handle& h, const std::string& what = "") {
  const kolo::Status s = finish(h);
  INFO(what << " status " << kolo::status_code_name(s.code()) << ": " << s.message());
  REQUIRE(s.ok());
}

// Waits for every handle before anything is checked, so that a failed check never leaves
// an operation in flight on memory that the test is about to free. Then requires all ok.
inline void require_all_ok(const std::vector<kolo::Handle>& handles, const std::string& what = "") {
  const auto deadline = std::chrono::steady_clock::now() + kOpTimeout;
  std::vector<kolo::Status> status;
  for (const kolo::Handle& h : handles) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    status.push_back(h.valid() ? h.wait_for(std::max(left, std::chrono::milliseconds(1)))
                               : kolo::Status(kolo::StatusCode::InvalidArgument, "invalid handle"));
  }
  for (std::size_t i = 0; i < status.size(); ++i)
    if (status[i].code() == kolo::StatusCode::Pending)
      abort_on_timeout(what + " handle " + std::to_string(i) + " of " + std::to_string(status.size()));
  for (std::size_t i = 0; i < status.size(); ++i) {
    INFO(what << " handle " << i << " of " << status.size() << ": " << kolo::status_code_name(status[i].code()) << " "
              << status[i].message());
    REQUIRE(status[i].ok());
  }
}

// A handle that failed before it was enqueued is already done when returned.
inline kolo::Status immediate_failure(const kolo::Handle& h) {
  REQUIRE(h.valid());
  REQUIRE(h.ready());
  return h.wait();
}

inline int rank() { return kolo::rank(); }
inline int size() { return kolo::size(); }

// A stall shuts kolo down on every rank (docs/reliability.md): a test that made one
// starts it again for the tests after it.
inline void restart_kolo_after_stall() {
  kolo::shutdown();
  kolo::init();
}

// Keeps ranks in step between phases of a test (outside kolo, on MPI_COMM_WORLD). Bounded:
// if another rank left the test early, this one fails instead of waiting forever.
inline void world_barrier(std::chrono::seconds timeout = 2 * kOpTimeout) {
  MPI_Request request;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int done = 0;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    if (std::chrono::steady_clock::now() > deadline) FAIL("the other ranks did not reach the barrier in time");
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// kolo::join() blocks until every rank has joined; bound it so that a rank that failed
// early cannot hang the others for good (shutdown aborts a join left behind).
inline void bounded_join() {
  auto done = std::make_shared<std::promise<std::string>>();
  std::future<std::string> result = done->get_future();
  std::thread([done] {
    try {
      kolo::join();
      done->set_value("");
    } catch (const std::exception& e) {
      done->set_value(e.what());
    }
  }).detach();
  if (result.wait_for(kOpTimeout) != std::future_status::ready) FAIL("join() did not return in time");
  const std::string error = result.get();
  INFO(error);
  REQUIRE(error.empty());
}

}  // namespace kolo_test
