// GPU completion bookkeeping (runtime/completion_watcher.h) with events the test reaches
// by hand: handles complete only once their event is reached, in order; a device error
// fails them with DeviceError, an event never reached with CommFailure; shutdown finishes
// the rest.
#include <catch2/catch.hpp>

#include <mutex>
#include <thread>
#include <vector>

#include "runtime/completion_watcher.h"
#include "runtime/gpu_state.h"
#include "support/fake_devices.h"

using Catch::Matchers::Contains;
using kolo::testing::ManualEvent;
using namespace std::chrono_literals;

namespace {

std::shared_ptr<kolo::detail::HandleState> handle() { return std::make_shared<kolo::detail::HandleState>(); }

bool done_within(const std::shared_ptr<kolo::detail::HandleState>& h, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!h->done && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
  return h->done;
}

}  // namespace

TEST_CASE("GPU handles complete when their event is reached, not before", "[gpu-completion]") {
  kolo::CompletionWatcher watcher(10s);
  auto event = std::make_shared<ManualEvent>();
  auto a = handle(), b = handle();
  watcher.add(event, {a, b});
  std::this_thread::sleep_for(20ms);
  CHECK_FALSE(a->done);
  CHECK_FALSE(b->done);
  CHECK(watcher.pending() == 1);
  event->reached = true;
  REQUIRE(done_within(a, 5000ms));
  REQUIRE(done_within(b, 5000ms));
  CHECK(a->status.ok());
  watcher.drain();
  CHECK(watcher.pending() == 0);
}

TEST_CASE("GPU handles complete in the order their work was enqueued", "[gpu-completion]") {
  kolo::CompletionWatcher watcher(10s);
  auto first = std::make_shared<ManualEvent>(), second = std::make_shared<ManualEvent>();
  auto h1 = handle(), h2 = handle();
  watcher.add(first, {h1});
  watcher.add(second, {h2});
  second->reached = true;  // a later operation cannot overtake an earlier one on the stream
  std::this_thread::sleep_for(20ms);
  CHECK_FALSE(h2->done);
  first->reached = true;
  watcher.drain();
  CHECK(h1->done);
  CHECK(h2->done);
}

TEST_CASE("a device error fails the GPU handles with DeviceError and the watcher goes on", "[gpu-completion]") {
  kolo::CompletionWatcher watcher(10s);
  auto bad = std::make_shared<ManualEvent>(), good = std::make_shared<ManualEvent>();
  bad->failed = true;
  good->reached = true;
  auto h1 = handle(), h2 = handle();
  watcher.add(bad, {h1});
  watcher.add(good, {h2});
  watcher.drain();
  CHECK(h1->status.code() == kolo::StatusCode::DeviceError);
  CHECK_THAT(h1->status.message(), Contains("illegal memory access"));
  CHECK(h2->status.ok());
}

TEST_CASE("an event never reached fails its handles after the timeout, and reports the failure", "[gpu-completion]") {
  std::mutex mutex;
  std::vector<kolo::StatusCode> reported;
  kolo::CompletionWatcher watcher(50ms, kolo::steady_clock(), [&](const kolo::Status& s) {
    std::lock_guard<std::mutex> lock(mutex);
    reported.push_back(s.code());
  });
  auto reached = std::make_shared<ManualEvent>();
  reached->reached = true;
  auto never = std::make_shared<ManualEvent>();
  auto ok = handle(), h = handle();
  watcher.add(reached, {ok});
  watcher.add(never, {h});
  REQUIRE(done_within(h, 5000ms));
  CHECK(ok->status.ok());
  CHECK(h->status.code() == kolo::StatusCode::CommFailure);
  CHECK_THAT(h->status.message(), Contains("did not finish"));
  watcher.drain();
  std::lock_guard<std::mutex> lock(mutex);
  CHECK(reported == std::vector<kolo::StatusCode>{kolo::StatusCode::CommFailure});  // the failure only
}

TEST_CASE("destroying the watcher completes the operations still pending", "[gpu-completion]") {
  auto h = handle();
  auto event = std::make_shared<ManualEvent>();
  {
    kolo::CompletionWatcher watcher(10s);
    watcher.add(event, {h});
    std::thread reach([event] {
      std::this_thread::sleep_for(20ms);
      event->reached = true;
    });
    reach.join();
  }
  CHECK(h->done);
  CHECK(h->status.ok());
}

TEST_CASE("a published completion event is what a stream waits on", "[gpu-completion]") {
  auto h = handle();
  h->gpu = std::make_shared<kolo::detail::GpuState>();
  auto event = std::make_shared<ManualEvent>();
  std::thread enqueue([&] {
    std::this_thread::sleep_for(10ms);
    h->gpu->publish(event);
  });
  const auto published = h->gpu->wait_published(*h);
  enqueue.join();
  CHECK(published == event);
  CHECK(kolo::Handle(h).wait_on_stream(nullptr).ok());
  CHECK(event->blocked_streams == 1);  // the framework's stream waits on kolo's event

  auto failed = handle();  // completed without ever reaching the device
  failed->gpu = std::make_shared<kolo::detail::GpuState>();
  failed->complete(kolo::Status(kolo::StatusCode::Aborted, "kolo is shut down"));
  CHECK(failed->gpu->wait_published(*failed) == nullptr);
}
