// Small helpers shared by the scenarios (peer.h).
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "kolo/kolo.h"
#include "scenarios/peer.h"
#include "support/values.h"

namespace kolo_scenarios {

inline std::string describe(const kolo::Status& s) { return std::string(kolo::status_code_name(s.code())) + ": " + s.message(); }

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// "rank 1" or "ranks 1, 2, 3": how the coordinator names the ranks listed.
inline std::string ranks_phrase(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

inline std::vector<int> ranks_from(int first, int size) {
  std::vector<int> ranks;
  for (int r = first; r < size; ++r) ranks.push_back(r);
  return ranks;
}

// Waits for every handle before anything is checked (a failed check must not leave an
// operation running on memory the scenario is about to free), then checks each is ok.
inline void wait_all_ok(Peer& peer, const std::vector<kolo::Handle>& handles, const std::string& what) {
  std::vector<kolo::Status> status;
  for (const kolo::Handle& h : handles) status.push_back(peer.wait(h));
  for (std::size_t i = 0; i < status.size(); ++i)
    PEER_CHECK(peer, status[i].ok(), what << " handle " << i << ": " << describe(status[i]));
}

// This rank's count of negotiations by name, read while every rank is between steps of
// the scenario: a negotiation is collective, and another rank already on its next step
// would start one that this rank then counts as its own.
inline std::optional<int64_t> named_negotiations_between_steps(Peer& peer) {
  if (!peer.named_negotiations()) return std::nullopt;
  peer.sync();
  const std::optional<int64_t> count = peer.named_negotiations();
  peer.sync();
  return count;
}

// `got` equals `want`, exactly or (inexact results) within one rounding of the dtype.
inline bool close_enough(double got, double want, kolo::DType dtype, bool exact) {
  if (exact) return got == want;
  return std::fabs(got - want) <= kolo_test::rounding_tolerance(dtype) * std::max(1.0, std::fabs(want));
}

}  // namespace kolo_scenarios
