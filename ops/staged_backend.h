// Collectives on device memory through a host backend (MPI), for GPU tensors when NCCL
// is unavailable or disabled (KOLO_GPU_OPERATIONS=MPI), and for the cross-node step of
// the hierarchical allreduce. Data is copied to pinned host memory, reduced there, and
// copied back. A large allreduce is pipelined in pieces: every piece's copy to the host
// is enqueued at once, and piece i is reduced while piece i+1 is still being copied in
// and piece i-1 copied back, so that the copies overlap the communication.
//
// The copies are a StagingCopier, so that the pipeline is tested with host memory
// standing in for the device (a memcpy copier) and runs unchanged with CUDA's.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>

#include "backend.h"
#include "device.h"

namespace kolo::ops {

class StagingCopier {
 public:
  virtual ~StagingCopier() = default;
  // Host memory the copies go through (pinned for a GPU): at least `bytes`, reused from
  // call to call. Growing it waits for the copies still using the old one.
  virtual std::byte* host_buffer(std::size_t bytes) = 0;
  // Enqueue a copy. Copies run in the order enqueued, after the device work enqueued
  // before them (a tensor's readiness, the fusion copies).
  virtual void to_host(void* host, const void* device, std::size_t bytes) = 0;
  virtual void to_device(void* device, const void* host, std::size_t bytes) = 0;
  // Reached once every copy enqueued so far is done.
  virtual std::shared_ptr<Event> mark() = 0;
};

// Copies with memcpy, at once: host memory standing in for a device.
std::unique_ptr<StagingCopier> make_host_copier();

struct StagingOptions {
  int rank = 0;                   // this rank in the host backend's communicator
  int64_t piece_bytes = 4 << 20;  // allreduce pipeline piece
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};  // for one copy
};

std::unique_ptr<Backend> make_staged_backend(std::unique_ptr<Backend> host,
                                             std::unique_ptr<StagingCopier> copier,
                                             const StagingOptions& options);

}  // namespace kolo::ops
