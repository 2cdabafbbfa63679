// The MPI control channel's checks on what other ranks send: a gather's lengths are another
// rank's words, and must not size a buffer before they are checked (issue 33).
#include <catch2/catch.hpp>

#include <climits>

#include "ops/mpi_backend.h"

using Catch::Matchers::Contains;

namespace {

std::string refused(const std::vector<int>& lengths) {
  try {
    kolo::ops::message_offsets(lengths);
  } catch (const kolo::Error& e) {
    CHECK(e.code() == kolo::StatusCode::CommFailure);
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("control channel: message offsets of a gather, with the total last", "[control]") {
  CHECK(kolo::ops::message_offsets({}) == std::vector<int>{0});
  CHECK(kolo::ops::message_offsets({3, 0, 5}) == std::vector<int>{0, 3, 3, 8});
  CHECK(kolo::ops::message_offsets({INT_MAX}) == std::vector<int>{0, INT_MAX});
}

TEST_CASE("control channel: a negative length or a total past INT_MAX is a damaged message", "[control]") {
  CHECK_THAT(refused({4, -1, 2}), Contains("damaged negotiation message") && Contains("rank 1") && Contains("-1"));
  // The last rank's length used to go unchecked into the buffer's size.
  CHECK_THAT(refused({8, INT_MIN}), Contains("rank 1"));
  CHECK_THAT(refused({INT_MAX, 1}), Contains("add up to 2147483648 bytes"));
  CHECK_THAT(refused({INT_MAX / 2 + 1, INT_MAX / 2 + 1}), Contains("more than one gather can carry"));
}
