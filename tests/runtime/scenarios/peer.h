// A scenario is a multi-rank test written once and run two ways: in-process, with ranks as
// threads of one process and kolo's time simulated (tests/runtime/inprocess/, at 2, 3, 4
// and 8 ranks), and under mpirun with the public API and real time
// (tests/runtime/mpi/scenarios_test.cc). Each rank runs the same scenario function with
// its own Peer. Operations are submitted through the public API (kolo::allreduce_async,
// ...), which reaches this rank's runtime either way; everything that depends on how the
// ranks run goes through the Peer: waiting (bounded in kolo's time), meeting the other
// ranks outside kolo, letting time pass, reading kolo's log, and checks.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <sstream>
#include <string>

#include "kolo/kolo.h"
#include "runtime/config.h"

namespace kolo_scenarios {

// How long any operation of a scenario may take, in kolo's time.
inline constexpr std::chrono::milliseconds kBound = std::chrono::seconds(90);

class Peer {
 public:
  virtual ~Peer() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The settings of this rank's runtime (rank 0's shared ones, this rank's stall times, ...).
  virtual const kolo::Config& settings() const = 0;

  // Waits for `handle` up to `bound` of kolo's time. An operation still running after that
  // ends the test run (its buffers are still kolo's, and the ranks are out of step).
  virtual kolo::Status wait(const kolo::Handle& handle, std::chrono::milliseconds bound = kBound) = 0;
  // Waits up to `bound`; Pending if the operation is still running.
  virtual kolo::Status wait_up_to(const kolo::Handle& handle, std::chrono::milliseconds bound) = 0;
  // kolo::join(), bounded like wait(); `last`, if given, gets the rank that joined last.
  virtual kolo::Status join(int* last = nullptr) = 0;
  // Runs a blocking kolo call (add_process_set(), broadcast_bytes(), ...) while kolo's
  // time may pass.
  virtual void blocking(const std::function<void()>& call) = 0;
  // Returns once every rank has called it (outside kolo), bounded.
  virtual void sync() = 0;
  // Lets `duration` of kolo's time pass.
  virtual void sleep(std::chrono::milliseconds duration) = 0;
  // kolo's clock, in seconds.
  virtual double seconds() const = 0;

  // From now on kolo's log lines are kept instead of printed, until captured_log() returns
  // them.
  virtual void capture_log() = 0;
  virtual std::string captured_log() = 0;

  // Whether this way of running can make a rank hang (stop taking part in anything) and
  // carry on afterwards: in-process only.
  virtual bool can_stop_taking_part() const = 0;
  virtual void stop_taking_part() = 0;

  // Negotiation rounds by name (the slow path), and allreduce calls on the data path, this
  // rank has been through so far; nullopt where they are not counted (mpirun).
  virtual std::optional<int64_t> named_negotiations() const = 0;
  virtual std::optional<int64_t> data_allreduces() const = 0;

  // A check: passes or records a failure naming this rank, the place and the context.
  virtual void check(bool ok, const char* expression, const char* file, int line, const std::string& context) = 0;
};

}  // namespace kolo_scenarios

// PEER_CHECK(peer, v == 3, "v is " << v);  -- the context is built only when the check fails.
#define PEER_CHECK(peer, condition, context)                                                         \
  do {                                                                                               \
    const bool kolo_check_ok = static_cast<bool>(condition);                                         \
    std::ostringstream kolo_check_context;                                                           \
    if (!kolo_check_ok) kolo_check_context << context;                                               \
    (peer).check(kolo_check_ok, #condition, __FILE__, __LINE__, kolo_check_context.str());           \
  } while (0)
