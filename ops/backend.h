// The narrow interface every collective backend implements: MPI (mpi_backend.cc), NCCL
// (cuda/nccl_backend.cc), host-staged MPI for device memory (staged_backend.cc) and the
// hierarchical collectives (hierarchical_backend.cc), which are built from the others. A
// backend moves and reduces flat buffers; it knows nothing of tensor names, negotiation
// or fusion. All calls are made from the runtime's single background thread, in the
// same order on every rank. Failures throw kolo::Error: CommFailure when MPI or NCCL
// fails or a rank is lost, DeviceError when the GPU fails, Unsupported for a count
// beyond what one MPI call can move.
//
// Buffers are in the memory of one device. A GPU backend enqueues its work on kolo's
// stream for that device and may return before the work is done: later work on the
// same stream (DeviceOps, the next collective) is ordered after it, and the executor
// records an event for the host (device.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "kolo/kolo.h"

namespace kolo::ops {

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;
  virtual bool supports(const Device& device) const = 0;

  // Element-wise reduction across ranks, multiplied by `scale` (1.0: not scaled). `op` is
  // Sum, Min, Max or Product; the runtime turns Average into Sum with a scale of 1/size
  // (times any postscale), and runs Adasum itself (ops/adasum.h) over sendrecv(). A
  // backend scales where it touches the result anyway (each piece of a pipelined
  // allreduce as it is written), never in a separate pass over the whole buffer where it
  // can avoid one. Floating dtypes only when scale != 1.
  // Every rank passes the same scale: a backend may scale on one rank a part of the
  // result that others receive. `input == output` is in place.
  //
  // The default argument is on this declaration only (overrides repeat none): every call
  // goes through Backend, and a call through a derived type without it does not compile.
  virtual void allreduce(const void* input, void* output, int64_t count, DType dtype,
                         ReduceOp op, double scale = 1.0) = 0;
  // allreduce() of every rank's input multiplied by `prescale` first, with the bits of
  // scaling each input in a pass of its own, where folds_prescale(): a backend that runs
  // the reduction steps itself (the MPI backend's ring) scales its input there as it reads
  // it. For the others the executor scales the input in a pass of its own first.
  virtual bool folds_prescale() const { return false; }
  virtual void allreduce_prescaled(const void* input, void* output, int64_t count, DType dtype, ReduceOp op,
                                   double prescale, double scale);
  // Rank r contributes counts[r] elements; output holds them all, rank by rank. `input`
  // may already be this rank's place in `output` (in place).
  virtual void allgatherv(const void* input, void* output, std::span<const int64_t> counts,
                          DType dtype) = 0;
  virtual void broadcast(void* data, int64_t count, DType dtype, int root) = 0;
  // send_counts[r] elements go to rank r; recv_counts[r] come from rank r.
  virtual void alltoallv(const void* input, std::span<const int64_t> send_counts, void* output,
                         std::span<const int64_t> recv_counts, DType dtype) = 0;
  // Reduces `input` (sum of counts elements) and leaves part r (counts[r] elements) on rank
  // r, multiplied by `scale` as in allreduce. `input` is never written.
  virtual void reducescatter(const void* input, void* output, std::span<const int64_t> counts,
                             DType dtype, ReduceOp op, double scale = 1.0) = 0;
  virtual void barrier() = 0;
  // Point to point: sends `send_bytes` to rank `peer` and receives `recv_bytes` from it,
  // for algorithms built from pairwise exchanges (Adasum, ops/adasum.h). The peer makes
  // the matching call (its send_bytes are this call's recv_bytes). Every rank of the
  // backend makes such a call at the same point, in pairs (the in-process backend meets
  // them all at once). Buffers must not overlap. By default Unsupported.
  virtual void sendrecv(const void* send, std::size_t send_bytes, void* recv, std::size_t recv_bytes,
                        int peer);

  // Size of the pieces a large allreduce is pipelined in, where the backend pipelines
  // (the autotuner changes it between cycles, on every rank at once).
  virtual void set_allreduce_chunk_bytes(int64_t bytes) {}
};

// The pipeline piece where KOLO_ALLREDUCE_CHUNK_BYTES is 0: this much a rank. Each piece
// costs two rendezvous per ring step; 1 MiB a rank ran the ResNet-50 gradient set 8-10 %
// faster than 256 KiB on an AMD EPYC and keeps a piece's working set (a few MiB a rank)
// inside any server CPU's last-level cache (docs/perf.md, "Where the host puts the vCPUs").
inline constexpr int64_t kDefaultPieceBytesPerRank = int64_t{1} << 20;

// The pipeline piece at `size` ranks: KOLO_ALLREDUCE_CHUNK_BYTES, or for 0 the default.
inline int64_t allreduce_piece_bytes(int64_t chunk_bytes, int size) {
  return chunk_bytes > 0 ? chunk_bytes : kDefaultPieceBytesPerRank * size;
}

// The small, latency-bound messages the runtime's negotiation exchanges every cycle.
class ControlChannel {
 public:
  virtual ~ControlChannel() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Bitwise AND of `words` across ranks, in place.
  virtual void allreduce_and(std::span<uint64_t> words) = 0;
  // Root receives every rank's message (index = rank); others receive nothing.
  virtual std::vector<std::string> gather(const std::string& message, int root) = 0;
  // Every rank ends with root's message.
  virtual void broadcast(std::string& message, int root) = 0;
};

}  // namespace kolo::ops
