// The cycle's shared decisions (runtime/cycle_decisions.h), which Runtime::cycle and
// kolo-sim both call: the cached tensors' plan in slot order, and what the slow path keeps.
#include <catch2/catch.hpp>

#include "kolo/kolo.h"
#include "runtime/cycle_decisions.h"

namespace {

kolo::Request req(std::string name, int64_t n = 4, kolo::OpType type = kolo::OpType::Allreduce) {
  kolo::Request r;
  r.name = std::move(name);
  r.type = type;
  r.shape = {n};
  return r;
}

kolo::FusionOptions fuse_up_to(int64_t bytes) {
  kolo::FusionOptions o;
  o.threshold_bytes = bytes;
  o.unfused_min_bytes = int64_t{1} << 30;
  return o;
}

}  // namespace

TEST_CASE("cached tensors run in slot order, fused, whatever order they were put in", "[cycle]") {
  kolo::ResponseCache cache(128);
  for (const char* name : {"a", "b", "c"}) cache.put(req(name));  // slots 0, 1, 2
  cache.put(req("far", 8));                                       // slot 3
  std::vector<uint64_t> ready(2, 0);
  ready[0] = (uint64_t{1} << 2) | (uint64_t{1} << 0) | (uint64_t{1} << 3);  // c, a, far
  std::vector<uint32_t> visited;
  kolo::for_each_slot(ready, [&](uint32_t slot) { visited.push_back(slot); });
  CHECK(visited == std::vector<uint32_t>{0, 2, 3});

  const std::vector<kolo::Response> fused = kolo::plan_cached(cache, ready, fuse_up_to(32), /*named=*/true);
  REQUIRE(fused.size() == 2);  // a and c fill 32 bytes; far opens the next buffer
  CHECK(fused[0].names == std::vector<std::string>{"a", "c"});
  CHECK(fused[1].names == std::vector<std::string>{"far"});
  const std::vector<kolo::Response> unnamed = kolo::plan_cached(cache, ready, fuse_up_to(32), /*named=*/false);
  REQUIRE(unnamed.size() == 2);
  CHECK(unnamed[0].element_counts == std::vector<int64_t>{4, 4});
}

TEST_CASE("the slow path's responses are kept in the cache, and an eviction names the slot it freed", "[cycle]") {
  kolo::ResponseCache cache(2);
  std::vector<kolo::Response> responses;
  for (const char* name : {"a", "b", "c"}) responses.push_back(kolo::response_for(req(name), name));
  responses.push_back(kolo::response_for(req("gathered", 4, kolo::OpType::Allgather), "gathered"));
  kolo::Response refused = kolo::response_for(req("refused"), "refused");
  refused.kind = kolo::Response::Kind::Error;
  responses.push_back(refused);

  const auto request_of = [](const kolo::Response& r, std::size_t i) { return req(r.names[i], r.element_counts[i]); };
  const std::vector<uint32_t> evicted = kolo::record_in_cache(cache, responses, request_of);
  CHECK(evicted == std::vector<uint32_t>{0});  // a's slot, now c's
  CHECK_FALSE(cache.find("a").has_value());
  REQUIRE(cache.find("c").has_value());
  CHECK(*cache.find("c") == 0u);
  CHECK(cache.at(0) == req("c"));
  CHECK(cache.find("b").has_value());
  CHECK_FALSE(cache.find("gathered").has_value());  // an allgather's first dimension may change
  CHECK_FALSE(cache.find("refused").has_value());
}
