// NamesInFlight, the set of names a runtime has accepted and not finished: against
// std::set as the reference, through growth and erases from the middle of probe runs.
#include <catch2/catch.hpp>
#include <deque>
#include <random>
#include <set>
#include <string>

#include "runtime/names_in_flight.h"

TEST_CASE("a name is claimed once until it is freed, whoever holds an equal string", "[names-in-flight]") {
  kolo::NamesInFlight names;
  const std::string a = "grad/fc.weight", a_again = "grad/fc.weight", b = "grad/fc.bias";
  CHECK(names.insert(&a));
  CHECK_FALSE(names.insert(&a_again));
  CHECK(names.insert(&b));
  CHECK(names.size() == 2);
  names.erase(&a);
  CHECK(names.insert(&a_again));
  CHECK_FALSE(names.insert(&b));
  CHECK(names.size() == 2);
}

TEST_CASE("claims and frees in any order agree with std::set, through growth", "[names-in-flight]") {
  kolo::NamesInFlight names;
  std::deque<std::string> storage;  // the entries' names: they stay where they are
  std::set<std::string> reference;
  std::vector<const std::string*> held;
  std::mt19937 rng(7);
  for (int step = 0; step < 20000; ++step) {
    if (held.empty() || rng() % 3 != 0) {
      // Names from a small pool, so that many collide with held ones, and many hashes share
      // a probe run once the set is full enough.
      storage.push_back("t/" + std::to_string(rng() % 3000));
      const std::string* name = &storage.back();
      const bool claimed = names.insert(name);
      REQUIRE(claimed == reference.insert(*name).second);
      if (claimed) held.push_back(name);
    } else {
      const std::size_t k = rng() % held.size();
      names.erase(held[k]);
      reference.erase(*held[k]);
      held[k] = held.back();
      held.pop_back();
    }
    REQUIRE(names.size() == reference.size());
  }
  // Everything still held is found, everything freed is free.
  for (const std::string* name : held) {
    const std::string copy = *name;
    CHECK_FALSE(names.insert(&copy));
  }
  CHECK(reference.size() > 1000);  // the set grew well past its first 64 slots
}
