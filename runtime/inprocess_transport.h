// Ranks as threads of one process. An InProcessWorld is shared by `size` ranks; each rank's
// transport(rank) serves the Runtime of that rank, on its own thread. Every collective,
// control message or data, is a rendezvous between the ranks' threads: each rank copies its
// part in, waits until every rank's part is there, and computes its own result from them
// (reductions with ops::reduce_into, every dtype and op, in rank order, so that every rank
// gets the same bits). It serves tests (many ranks in one process, with a ManualClock
// standing in for time) and simulation.
//
// Every wait is bounded by InProcessOptions::timeout on the world's clock. A rank that
// never arrives makes the others fail with CommFailure and the same message the MPI
// transport gives; from then on every call on the world fails alike, as a communicator
// that has failed. Ranks that call different collectives at the same point (a bug: the
// runtime calls them in the same order on every rank) fail alike with Internal, naming
// what each called. Host memory only: GPU tensors fail with an error saying so
// (Unsupported).
// subset() makes a world of the listed ranks; the hierarchical collectives run over such
// subsets, on the node layout of InProcessOptions::local_size.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "clock.h"
#include "transport.h"

namespace kolo {

struct InProcessOptions {
  // How long a rank waits for the others, on the world's clock, before it fails with
  // CommFailure (KOLO_CONTROL_TIMEOUT_SECONDS's role).
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};
  // > 0: consecutive groups of this many ranks act as nodes (as KOLO_TEST_LOCAL_SIZE);
  // 0: every rank on one node.
  int local_size = 0;
};

// The calls a rank makes, as counted by InProcessWorld::completed().
enum class InProcessCall : int {
  ControlAllreduce,  // the negotiation's AND of words
  ControlGather,     // the slow path: requests by name to rank 0
  ControlBroadcast,
  Allreduce,
  Allgather,
  Broadcast,
  Alltoall,
  Reducescatter,
  Barrier,
  Sendrecv,  // every rank at once, in pairs (Adasum's exchanges)
  Subset,
};

class InProcessWorld {
 public:
  // `clock` must outlive the world and its transports.
  InProcessWorld(int size, const Clock& clock, InProcessOptions options = {});

  int size() const;
  // Rank `rank`'s transport; it keeps the world's state alive.
  std::unique_ptr<Transport> transport(int rank);
  // From now on `rank` takes part in nothing, as a hung process would, here and in the
  // subsets made from this world: its calls wait until the other ranks give up (the
  // timeout), then fail as theirs do.
  void stop_taking_part(int rank);
  // `rank` stops taking part (as above) when it next makes a call of kind `call`: a rank
  // that hangs inside, say, the set-up of a process set (InProcessCall::Subset).
  void stop_taking_part_at(int rank, InProcessCall call);
  // From now on `damage` may rewrite every negotiation message a rank sends (its requests
  // on their way to rank 0, rank 0's responses on their way out) before any other rank
  // reads it, as a damaged link or a lying peer would. For tests of the checks a rank
  // makes on what others send it; it runs on the sender's thread.
  using MessageDamage = std::function<void(InProcessCall call, int sender, std::string& message)>;
  void damage_messages(MessageDamage damage);
  // The rank whose watchdog ended the job (Transport::end_job), if one has.
  std::optional<int> ended_by() const;
  // How many calls of this kind `rank` has completed on this world (not its subsets).
  int64_t completed(int rank, InProcessCall call) const;

  struct State;  // inprocess_transport.cc

 private:
  std::shared_ptr<State> state_;
};

}  // namespace kolo
