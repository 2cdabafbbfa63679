// The seam between the runtime and the wire: everything the background thread needs from
// the other ranks. The runtime (runtime.cc, coordinator, fusion, cache, executor) knows
// ranks only through this interface:
//
//   - who: this rank, the number of ranks, and where they sit on the nodes (topology());
//   - the control messages of negotiation (control(): AND-allreduce of words, gather,
//     broadcast), which also carry the settings record at start-up (settings_record.h);
//   - the data collectives, as ops::Backends built by the transport: for host memory, and
//     for GPU memory (built at the first GPU operation).
//
// Implementations: MpiTransport (mpi_transport.h: kolo's own duplicate of an MPI
// communicator, NCCL and host-staged MPI for GPU memory) and the in-process one
// (inprocess_transport.h: ranks as threads of one process, for tests and simulation).
//
// Every call is made from one thread at a time per rank (the runtime's constructor, then
// its background thread), in the same order on every rank, except the three calls of the
// watchdog (watchdog.h), which come from its own thread at any time. Failures throw kolo::Error:
// CommFailure when the other ranks cannot be reached within the control timeout, or when
// the transport itself fails.
//
// Process sets and re-formed membership. A set of ranks gets its own transport, made by
// subset() from a parent transport, and its own Runtime over that transport: the
// coordinator, cache and fusion see only the set's ranks (numbered 0..n-1 within the
// set), so nothing in them changes. A membership that changes while a job runs (ranks
// leaving or joining) fits the same way: the runtime is stopped at a point every member
// agrees on, a transport for the new membership is made (by subset() of a larger one, or
// by a transport's own rendezvous), and a new Runtime starts over it. The runtime never
// holds a rank number that outlives its transport.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "ops/backend.h"
#include "ops/gpu_path.h"
#include "ops/hierarchical_backend.h"

namespace kolo {

// Where this rank sits. The local ranks share a node; the cross ranks are those with the
// same local rank, one per node.
struct Topology {
  int rank = 0, size = 1;
  int local_rank = 0, local_size = 1;
  int cross_rank = 0, cross_size = 1;
  bool homogeneous = true;  // every node runs the same number of ranks
};

// What the data collectives are built with (the runtime's agreed settings).
struct DataOptions {
  int64_t allreduce_chunk_bytes = 0;  // pipeline piece; 0: 1 MiB per rank
  ops::HierarchicalRoutes hierarchical;
  // Counted up by every piece of a data collective that completes (ops::MpiOptions), for
  // the watchdog. Not owned; nullptr: not counted.
  std::atomic<uint64_t>* progress = nullptr;
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual const Topology& topology() const = 0;
  int rank() const { return topology().rank; }
  int size() const { return topology().size; }

  // The negotiation's messages. Its waits end with CommFailure after the control timeout.
  virtual ops::ControlChannel& control() = 0;

  // The collectives on host memory. Collective: every rank calls it at the same point.
  virtual std::unique_ptr<ops::Backend> make_host_backend(const DataOptions& options) = 0;
  // What GPU tensors need on the caller's side (checks, readiness events); nullptr where
  // this build has no GPU support. `host_stand_in`: host memory standing in for a GPU
  // (KOLO_TEST_HOST_GPU).
  virtual std::unique_ptr<ops::GpuParts> make_gpu_parts(bool host_stand_in, const DataOptions& options) = 0;
  // The collectives on GPU memory of `device`. Collective; throws kolo::Error on every rank
  // when the path cannot be set up (DeviceError, Unsupported, ...), CommFailure only when
  // the ranks cannot reach each other.
  virtual ops::GpuPath make_gpu_path(ops::GpuParts& parts, int device, ops::GpuOperations operations,
                                     const DataOptions& options) = 0;

  // The transport of the ranks listed (ranks of this transport, ascending, no repeats), in
  // which they are numbered 0..n-1 in that order; nullptr on a rank not listed.
  // Collective over this transport: every rank calls it with the same list.
  virtual std::unique_ptr<Transport> subset(std::span<const int> ranks) = 0;

  // After a communication failure an operation may still be pending inside the transport.
  // True when it cannot be cancelled (MPI): the runtime then never frees this transport,
  // nor the backends it made, so that nothing is freed under the pending operation.
  virtual bool pending_after_failure() const = 0;

  // ---- when the job cannot go on (watchdog.h); called from the watchdog's thread ----
  // Asks every other rank whether it still answers and returns, ascending, those that did
  // not answer within `bound`. The others answer from their answer_roll_call().
  virtual std::vector<int> roll_call(std::chrono::milliseconds bound) = 0;
  // Answers the roll calls other ranks have made since the last call. Never blocks.
  virtual void answer_roll_call() = 0;
  // Whether a failure ends the job (the watchdog ends it after the grace time). False in an
  // elastic job, whose program recovers from failures (it re-forms the job: elastic.md).
  virtual bool failures_end_job() const { return true; }
  // Ends every process of the job with `exit_code`: MPI_Abort, which makes mpirun or srun
  // kill every rank, a stopped one included; it does not return. The in-process transport
  // records it (InProcessWorld::ended_by()) and returns.
  virtual void end_job(int exit_code) = 0;
};

// Throws kolo::Error(InvalidArgument) unless `ranks` is a valid argument of subset() on a
// transport of `size` ranks.
void check_subset(std::span<const int> ranks, int size);

}  // namespace kolo
