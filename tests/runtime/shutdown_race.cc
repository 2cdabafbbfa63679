// kolo_shutdown_race: kolo::shutdown() on one thread while another thread calls into
// kolo. Each call either reaches the runtime, which lives until the call returns, or finds
// kolo not initialised; it never reads the runtime while shutdown() takes it away. Under
// TSan (tools/sanitize.sh tsan) an unguarded read of the global runtime is a report, which
// ends this test with TSan's exit code; without TSan such a read shows, at times, as a
// crash on a freed runtime.
//
// One process, no mpirun: MPI starts as a singleton. The test owns MPI, so kolo starts and
// shuts down on MPI_COMM_WORLD several times in one run.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <mpi.h>

#include "kolo/kolo.h"
#include "kolo/kolo_mpi.h"

namespace {

// What the calling thread saw, each outcome counted.
struct Outcomes {
  std::atomic<int> summed{0};         // allreduce done, with the right sum
  std::atomic<int> shut_down{0};      // Aborted: the runtime was shutting down under the call
  std::atomic<int> not_initialised{0};  // InvalidArgument: kolo was not initialised
  std::atomic<int> wrong{0};          // anything else: a wrong sum, another code, a timeout
  std::string first_wrong;            // written once, by the calling thread, read after join
};

// Until `stop`: asks is_initialized(), allreduces a small tensor and waits for it with
// Handle::wait_for, and sorts what happened into `out`.
void call_until(const std::atomic<bool>& stop, Outcomes& out) {
  std::vector<float> data(8);
  for (int i = 0; !stop.load(); ++i) {
    const bool initialised = kolo::is_initialized();
    std::fill(data.begin(), data.end(), static_cast<float>(i));
    std::string problem;
    try {
      kolo::Handle handle = kolo::allreduce_async("shutdown_race/t", kolo::view(data));
      const kolo::Status status = handle.wait_for(std::chrono::seconds(30));
      if (!initialised) {
        // Within a round kolo shuts down once: after is_initialized() said no, no call reaches it.
        problem = "allreduce " + std::to_string(i) + " reached kolo after is_initialized() said no";
      } else if (status.ok()) {
        if (data == std::vector<float>(8, static_cast<float>(i))) ++out.summed;  // one rank: the sum is the input
        else problem = "allreduce " + std::to_string(i) + " gave " + std::to_string(data[0]);
      } else if (status.code() == kolo::StatusCode::Aborted) {
        ++out.shut_down;
      } else {
        problem = "allreduce " + std::to_string(i) + " failed: " + status.message();
      }
    } catch (const kolo::Error& e) {
      if (e.code() == kolo::StatusCode::InvalidArgument) ++out.not_initialised;
      else problem = std::string("unexpected error: ") + e.what();
    }
    if (!problem.empty() && out.wrong++ == 0) out.first_wrong = problem;
  }
}

// Waits (bounded) until `done` holds.
template <typename Done>
bool eventually(Done done) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace

TEST_CASE("shutdown on one thread while another calls kolo: every call reaches a live runtime or none",
          "[lifecycle]") {
  int provided = 0;
  REQUIRE(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) == MPI_SUCCESS);
  REQUIRE(provided == MPI_THREAD_MULTIPLE);
  constexpr int kRounds = 5;
  for (int round = 0; round < kRounds; ++round) {
    INFO("round " << round);
    kolo::init(MPI_COMM_WORLD);
    REQUIRE(kolo::is_initialized());
    Outcomes out;
    std::atomic<bool> stop{false};
    std::thread caller(call_until, std::cref(stop), std::ref(out));
    // The caller is inside kolo, round after round of allreduces, when shutdown() comes ...
    const bool called = eventually([&] { return out.summed.load() >= 3 || out.wrong.load() > 0; });
    kolo::shutdown();
    CHECK_FALSE(kolo::is_initialized());
    // ... and goes on calling a kolo that is shut down.
    const bool refused = eventually([&] { return out.not_initialised.load() >= 3 || out.wrong.load() > 0; });
    stop = true;
    caller.join();
    CHECK(called);
    CHECK(refused);
    CHECK(out.wrong.load() == 0);
    CHECK(out.first_wrong == "");
  }
  MPI_Finalize();
}
