// Checks that every rank holds the same thing before a collective that needs it, so a
// mismatch fails on every rank with a message instead of leaving some ranks waiting
// (private to models/distributed).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kolo::models::distributed_detail {

// Gathers one value from every rank (a collective named `name`) and returns the ranks
// whose value differs from root's. Throws kolo::Error if the gather fails.
std::vector<int> ranks_differing_from_root(int64_t value, int root, const std::string& name);

// "1, 3" for {1, 3}.
std::string rank_list(const std::vector<int>& ranks);

// Throws kolo::Error (InvalidArgument) naming `what` unless 0 <= root < size().
void check_root(int root, const std::string& what);

// FNV-1a over bytes, to fingerprint names and shapes.
class Fingerprint {
 public:
  void add(const void* data, std::size_t bytes);
  void add(const std::string& s);
  void add(int64_t v) { add(&v, sizeof v); }
  int64_t value() const { return static_cast<int64_t>(hash_); }

 private:
  uint64_t hash_ = 14695981039346656037ull;
};

}  // namespace kolo::models::distributed_detail
