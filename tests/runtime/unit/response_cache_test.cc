// ResponseCache: deterministic slots, LRU eviction, erase and refind.
#include <catch2/catch.hpp>

#include "kolo/kolo.h"
#include "runtime/response_cache.h"

namespace {

kolo::Request req(std::string name, int64_t n = 4) {
  kolo::Request r;
  r.name = std::move(name);
  r.shape = {n};
  return r;
}

}  // namespace

TEST_CASE("cache assigns the lowest free slots in insertion order", "[cache]") {
  kolo::ResponseCache c(4);
  CHECK(c.capacity() == 4);
  CHECK_FALSE(c.put(req("a")).has_value());
  CHECK_FALSE(c.put(req("b")).has_value());
  CHECK_FALSE(c.put(req("c")).has_value());
  CHECK(c.find("a") == 0u);
  CHECK(c.find("b") == 1u);
  CHECK(c.find("c") == 2u);
  CHECK_FALSE(c.find("d").has_value());
  CHECK(c.at(1) == req("b"));
  CHECK(c.occupied(2));
  CHECK_FALSE(c.occupied(3));
  CHECK_FALSE(c.occupied(99));
}

TEST_CASE("cache evicts the least recently used entry and returns its slot", "[cache]") {
  kolo::ResponseCache c(3);
  c.put(req("a"));
  c.put(req("b"));
  c.put(req("c"));
  auto evicted = c.put(req("d"));  // a is the oldest
  REQUIRE(evicted.has_value());
  CHECK(*evicted == 0u);
  CHECK_FALSE(c.find("a").has_value());
  CHECK(c.find("d") == 0u);  // the freed slot is reused

  c.touch(*c.find("b"));     // order now: c, d, b
  evicted = c.put(req("e"));
  REQUIRE(evicted.has_value());
  CHECK(*evicted == 2u);     // c
  CHECK_FALSE(c.find("c").has_value());
  CHECK(c.find("e") == 2u);
  CHECK(c.find("b") == 1u);
}

TEST_CASE("cache put of a known name refreshes it in place without evicting", "[cache]") {
  kolo::ResponseCache c(2);
  c.put(req("a", 4));
  c.put(req("b", 4));
  CHECK_FALSE(c.put(req("a", 8)).has_value());  // refresh: a becomes most recent
  CHECK(c.find("a") == 0u);
  CHECK(c.at(0).shape == std::vector<int64_t>{8});
  const auto evicted = c.put(req("c"));
  REQUIRE(evicted.has_value());
  CHECK(*evicted == 1u);  // b, not the refreshed a
}

TEST_CASE("cache erase frees the slot and the name can be found again after put", "[cache]") {
  kolo::ResponseCache c(3);
  c.put(req("a"));
  c.put(req("b"));
  c.erase(0);
  CHECK_FALSE(c.find("a").has_value());
  CHECK_FALSE(c.occupied(0));
  c.erase(0);  // erasing a free slot is harmless
  CHECK(c.find("b") == 1u);
  CHECK_FALSE(c.put(req("a")).has_value());
  CHECK(c.find("a") == 0u);
  CHECK(c.occupied(0));
  // All three slots in use; nothing was lost by the double erase.
  CHECK_FALSE(c.put(req("x")).has_value());
  CHECK(c.find("x") == 2u);
  const auto evicted = c.put(req("y"));
  REQUIRE(evicted.has_value());
  CHECK(*evicted == 1u);  // b is the least recently used now
}

TEST_CASE("caches fed the same operations agree on every slot", "[cache]") {
  kolo::ResponseCache a(16), b(16);
  std::vector<std::optional<uint32_t>> evicted_a, evicted_b;
  for (int i = 0; i < 500; ++i) {
    const std::string name = "t" + std::to_string((i * 7919) % 41);
    evicted_a.push_back(a.put(req(name)));
    evicted_b.push_back(b.put(req(name)));
    if (i % 5 == 0) {
      if (auto s = a.find("t3")) a.touch(*s);
      if (auto s = b.find("t3")) b.touch(*s);
    }
    if (i % 11 == 0) {
      if (auto s = a.find("t5")) a.erase(*s);
      if (auto s = b.find("t5")) b.erase(*s);
    }
  }
  CHECK(evicted_a == evicted_b);
  for (int k = 0; k < 41; ++k) {
    const std::string name = "t" + std::to_string(k);
    CHECK(a.find(name) == b.find(name));
  }
}

TEST_CASE("cache of capacity 0 stores nothing", "[cache]") {
  kolo::ResponseCache c(0);
  CHECK_FALSE(c.put(req("a")).has_value());
  CHECK_FALSE(c.find("a").has_value());
  CHECK_FALSE(c.occupied(0));
}

TEST_CASE("cache of capacity 1 evicts on every new name", "[cache]") {
  kolo::ResponseCache c(1);
  CHECK_FALSE(c.put(req("a")).has_value());
  CHECK(c.put(req("b")) == std::optional<uint32_t>(0u));
  CHECK(c.find("b") == 0u);
  CHECK_FALSE(c.find("a").has_value());
}
