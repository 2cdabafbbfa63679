// Helpers shared by the multi-rank tests.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

#include <mpi.h>

#include "kolo/kolo.h"
#include "support/values.h"

namespace kolo_test {

// No operation in these tests may take longer; a hang fails the test instead.
inline constexpr std::chrono::seconds kOpTimeout{60};

inline const char* code_name(kolo::StatusCode c) {
  switch (c) {
    case kolo::StatusCode::Ok: return "Ok";
    case kolo::StatusCode::Pending: return "Pending";
    case kolo::StatusCode::InvalidArgument: return "InvalidArgument";
    case kolo::StatusCode::Mismatch: return "Mismatch";
    case kolo::StatusCode::Stalled: return "Stalled";
    case kolo::StatusCode::Aborted: return "Aborted";
    case kolo::StatusCode::CommFailure: return "CommFailure";
  }
  return "?";
}

// Waits (bounded) for the handle; fails the test if it is still pending.
inline kolo::Status finish(const kolo::Handle& h,
                           std::chrono::milliseconds timeout = kOpTimeout) {
  REQUIRE(h.valid());
  const kolo::Status s = h.wait_for(timeout);
  if (s.code() == kolo::StatusCode::Pending) FAIL("operation did not finish within the time bound");
  return s;
}

inline void require_ok(const kolo::Handle& h, const std::string& what = "") {
  const kolo::Status s = finish(h);
  INFO(what << " status " << code_name(s.code()) << ": " << s.message());
  REQUIRE(s.ok());
}

// A handle that failed before it was enqueued is already done when returned.
inline kolo::Status immediate_failure(const kolo::Handle& h) {
  REQUIRE(h.valid());
  REQUIRE(h.ready());
  return h.wait();
}

inline int rank() { return kolo::rank(); }
inline int size() { return kolo::size(); }

// Keeps ranks in step between phases of a test (outside kolo, on MPI_COMM_WORLD).
inline void world_barrier() { MPI_Barrier(MPI_COMM_WORLD); }

}  // namespace kolo_test
