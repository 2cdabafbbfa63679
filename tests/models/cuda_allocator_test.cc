// The caching device allocator's bookkeeping (models/cuda/caching_allocator.h), on a fake
// device made of host memory: runs without a GPU.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <functional>
#include <map>
#include <set>

#include "kolo/kolo.h"
#include "models/cuda/caching_allocator.h"

using kolo::models::cuda::CachingAllocator;
using kolo::models::cuda::DeviceMemory;
using kolo::models::cuda::EventId;
using kolo::models::cuda::StreamId;

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;

// Host memory with a capacity, and events the test reaches by hand.
class FakeDevice : public DeviceMemory {
 public:
  explicit FakeDevice(std::size_t capacity) : capacity_(capacity) {}
  ~FakeDevice() override { CHECK(live_.empty()); }
  void* allocate(std::size_t bytes) override {
    ++malloc_calls;
    if (used_ + bytes > capacity_) return nullptr;
    void* p = std::malloc(bytes);
    live_[p] = bytes;
    used_ += bytes;
    return p;
  }
  void free(void* p) override {
    REQUIRE(live_.count(p) == 1);
    used_ -= live_[p];
    live_.erase(p);
    std::free(p);
  }
  EventId record(StreamId stream) override {
    recorded_on.push_back(stream);
    return ++last_event_;
  }
  bool done(EventId event) override { return reached.count(event) > 0; }
  void destroy(EventId event) override { destroyed.insert(event); }
  std::string describe() override { return "the fake device"; }

  std::size_t used() const { return used_; }
  int malloc_calls = 0;
  std::vector<StreamId> recorded_on;
  std::set<EventId> reached, destroyed;

 private:
  std::size_t capacity_, used_ = 0;
  std::map<void*, std::size_t> live_;
  EventId last_event_ = 0;
};

constexpr StreamId kStream = 1, kOtherStream = 2;

}  // namespace

TEST_CASE("allocator rounds sizes to 512 bytes and picks segment sizes by request", "[cuda-allocator]") {
  CHECK(CachingAllocator::round_size(1) == 512);
  CHECK(CachingAllocator::round_size(512) == 512);
  CHECK(CachingAllocator::round_size(513) == 1024);
  CHECK(CachingAllocator::segment_size(512) == 2 * MiB);
  CHECK(CachingAllocator::segment_size(1 * MiB) == 2 * MiB);
  CHECK(CachingAllocator::segment_size(1 * MiB + 512) == 20 * MiB);
  CHECK(CachingAllocator::segment_size(10 * MiB - 512) == 20 * MiB);
  CHECK(CachingAllocator::segment_size(10 * MiB) == 10 * MiB);
  CHECK(CachingAllocator::segment_size(11 * MiB + 512) == 12 * MiB);

  FakeDevice device(64 * MiB);
  CachingAllocator allocator(device);
  CHECK(allocator.allocate(0, kStream) == nullptr);
  void* p = allocator.allocate(1, kStream);
  CHECK(allocator.stats().in_use_bytes == 512);
  CHECK(allocator.stats().reserved_bytes == 2 * MiB);
  allocator.free(p);
}

TEST_CASE("allocator reuses a freed block for the next request of the same stream", "[cuda-allocator]") {
  FakeDevice device(64 * MiB);
  CachingAllocator allocator(device);
  void* a = allocator.allocate(1000, kStream);
  allocator.free(a);
  CHECK(allocator.allocate(900, kStream) == a);
  CHECK(allocator.stats().device_allocations == 1);
  CHECK(device.malloc_calls == 1);
  allocator.free(a);
}

TEST_CASE("allocator splits segments and merges free neighbours back", "[cuda-allocator]") {
  FakeDevice device(64 * MiB);
  CachingAllocator allocator(device);
  char* a = static_cast<char*>(allocator.allocate(1000, kStream));
  char* b = static_cast<char*>(allocator.allocate(1000, kStream));
  char* c = static_cast<char*>(allocator.allocate(3000, kStream));
  CHECK(b == a + 1024);  // carved from the same 2 MiB segment
  CHECK(c == b + 1024);
  CHECK(allocator.stats().device_allocations == 1);
  CHECK(allocator.stats().in_use_bytes == 1024 + 1024 + 3072);
  allocator.free(b);
  allocator.free(a);
  allocator.free(c);
  // Merged into one 2 MiB block again: a 1 MiB request starts at the segment's base.
  CHECK(allocator.stats().cached_bytes == 2 * MiB);
  void* big = allocator.allocate(1 * MiB, kStream);
  CHECK(big == a);
  CHECK(allocator.stats().device_allocations == 1);
  allocator.free(big);

  SECTION("large requests share a 20 MiB segment under 10 MiB, and get their own above") {
    char* x = static_cast<char*>(allocator.allocate(5 * MiB, kStream));
    char* y = static_cast<char*>(allocator.allocate(5 * MiB, kStream));
    CHECK(y == x + 5 * MiB);
    CHECK(allocator.stats().reserved_bytes == 2 * MiB + 20 * MiB);
    void* z = allocator.allocate(11 * MiB + 1, kStream);
    CHECK(allocator.stats().reserved_bytes == 2 * MiB + 20 * MiB + 12 * MiB);
    CHECK(allocator.stats().device_allocations == 3);
    // A remainder of 1 MiB or less is not split off a large block: the request gets it all.
    allocator.free(z);
    void* w = allocator.allocate(11 * MiB, kStream);
    CHECK(w == z);
    CHECK(allocator.stats().in_use_bytes == 5 * MiB + 5 * MiB + 12 * MiB);
    for (void* p : {static_cast<void*>(x), static_cast<void*>(y), w}) allocator.free(p);
  }
}

TEST_CASE("allocator keeps blocks on their stream", "[cuda-allocator]") {
  FakeDevice device(64 * MiB);
  CachingAllocator allocator(device);
  void* a = allocator.allocate(4096, kStream);
  allocator.free(a);
  void* b = allocator.allocate(4096, kOtherStream);
  CHECK(b != a);
  CHECK(allocator.stats().device_allocations == 2);
  allocator.free(b);
}

TEST_CASE("a block used on another stream is reused only after that stream's event", "[cuda-allocator]") {
  FakeDevice device(64 * MiB);
  CachingAllocator allocator(device);
  void* a = allocator.allocate(1 * MiB, kStream);  // half of a 2 MiB segment
  allocator.record_stream(a, kOtherStream);
  allocator.record_stream(a, kOtherStream);  // once is enough
  allocator.record_stream(a, kStream);       // its own stream needs no event
  allocator.free(a);
  REQUIRE(device.recorded_on == std::vector<StreamId>{kOtherStream});
  void* b = allocator.allocate(1 * MiB, kStream);
  CHECK(b != a);  // the other half of the segment: `a` is still pending
  allocator.free(b);
  device.reached.insert(1);
  void* c = allocator.allocate(1 * MiB, kStream);
  CHECK(c == a);  // event reached: a is free again
  CHECK(device.destroyed.count(1) == 1);
  CHECK(allocator.stats().device_allocations == 1);
  allocator.free(c);
}

TEST_CASE("allocator tracks in-use, reserved and peak bytes", "[cuda-allocator]") {
  FakeDevice device(256 * MiB);
  CachingAllocator allocator(device);
  void* a = allocator.allocate(30 * MiB, kStream);
  void* b = allocator.allocate(40 * MiB, kStream);
  allocator.free(a);
  void* c = allocator.allocate(10 * MiB, kStream);  // from a's 30 MiB segment
  auto s = allocator.stats();
  CHECK(s.in_use_bytes == 50 * MiB);
  CHECK(s.peak_in_use_bytes == 70 * MiB);
  CHECK(s.reserved_bytes == 70 * MiB);
  CHECK(s.cached_bytes == 20 * MiB);
  CHECK(s.requests == 3);
  allocator.reset_peak();
  CHECK(allocator.stats().peak_in_use_bytes == 50 * MiB);
  allocator.free(b);
  allocator.free(c);
  CHECK(allocator.stats().in_use_bytes == 0);
  CHECK(allocator.stats().peak_in_use_bytes == 50 * MiB);
}

TEST_CASE("release_cached returns whole free segments and keeps those in use", "[cuda-allocator]") {
  FakeDevice device(256 * MiB);
  CachingAllocator allocator(device);
  void* a = allocator.allocate(30 * MiB, kStream);
  void* b = allocator.allocate(1000, kStream);
  void* c = allocator.allocate(1000, kStream);
  allocator.free(a);
  allocator.free(b);  // c keeps the small segment
  allocator.release_cached();
  auto s = allocator.stats();
  CHECK(s.reserved_bytes == 2 * MiB);
  CHECK(s.device_frees == 1);
  CHECK(device.used() == 2 * MiB);
  allocator.free(c);
  allocator.release_cached();
  CHECK(device.used() == 0);
}

TEST_CASE("allocator makes no device allocation in the steady state", "[cuda-allocator]") {
  FakeDevice device(1024 * MiB);
  CachingAllocator allocator(device);
  const std::vector<std::size_t> step_sizes = {3 * MiB, 100, 12 * MiB, 4096, 50 * MiB, 700 * 1024, 3 * MiB};
  int64_t after_first = 0;
  for (int step = 0; step < 50; ++step) {
    std::vector<void*> live;
    for (std::size_t bytes : step_sizes) live.push_back(allocator.allocate(bytes, kStream));
    for (std::size_t i = 0; i < live.size(); i += 2) allocator.free(live[i]);  // some die early
    live.push_back(allocator.allocate(5 * MiB, kStream));
    for (std::size_t i = 1; i < live.size(); i += 2) allocator.free(live[i]);
    if (step == 0) after_first = allocator.stats().device_allocations;
    CHECK(allocator.stats().in_use_bytes == 0);
  }
  CHECK(allocator.stats().device_allocations == after_first);
  CHECK(allocator.stats().requests == 50 * 8);
}

TEST_CASE("out of device memory: the cache is released and the request retried, then a clear error",
          "[cuda-allocator]") {
  FakeDevice device(30 * MiB);
  CachingAllocator allocator(device);
  void* a = allocator.allocate(20 * MiB, kStream);
  allocator.free(a);  // cached: 20 of the device's 30 MiB
  void* b = allocator.allocate(25 * MiB, kOtherStream);
  REQUIRE(b != nullptr);
  CHECK(allocator.stats().cache_releases == 1);
  CHECK(allocator.stats().device_frees == 1);
  CHECK(allocator.stats().reserved_bytes == 26 * MiB);
  try {
    allocator.allocate(25 * MiB, kStream);
    FAIL("no error");
  } catch (const kolo::Error& e) {
    const std::string what = e.what();
    CHECK(e.code() == kolo::StatusCode::DeviceError);
    CHECK_THAT(what, Catch::Contains("out of device memory"));
    CHECK_THAT(what, Catch::Contains("25.0 MiB"));
    CHECK_THAT(what, Catch::Contains("the fake device"));
    CHECK_THAT(what, Catch::Contains("26.0 MiB in use"));
  }
  // The failure left the allocator usable.
  allocator.free(b);
  void* c = allocator.allocate(25 * MiB, kStream);
  CHECK(c != nullptr);
  allocator.free(c);
}

TEST_CASE("allocator rejects pointers it did not hand out as kolo's own error", "[cuda-allocator]") {
  FakeDevice device(8 * MiB);
  CachingAllocator allocator(device);
  int x = 0;
  const auto code_of = [](const std::function<void()>& call) {
    try {
      call();
    } catch (const kolo::Error& e) {
      return e.code();
    }
    return kolo::StatusCode::Ok;  // no error
  };
  CHECK(code_of([&] { allocator.free(&x); }) == kolo::StatusCode::Internal);
  CHECK(code_of([&] { allocator.record_stream(&x, kStream); }) == kolo::StatusCode::Internal);
  allocator.free(nullptr);  // as free(): nothing
}

TEST_CASE("allocator returns everything to the device when destroyed", "[cuda-allocator]") {
  FakeDevice device(64 * MiB);
  {
    CachingAllocator allocator(device);
    allocator.allocate(1000, kStream);  // still out
    void* b = allocator.allocate(12 * MiB, kStream);
    allocator.record_stream(b, kOtherStream);
    allocator.free(b);  // pending
  }
  CHECK(device.used() == 0);
  CHECK(device.destroyed.count(1) == 1);
}
