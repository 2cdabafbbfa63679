// The GPU side of kolo for one device: the DeviceOps GPU tensors use (kolo's stream, the
// fusion and cast kernels, buffers, events) and their backend, composed according to
// KOLO_GPU_OPERATIONS and KOLO_HIERARCHICAL_ALLREDUCE / _ALLGATHER from the parts a GPU
// provides:
//
//   NCCL:                NCCL over every rank
//   NCCL, hierarchical:  NCCL in the node, host-staged MPI across nodes, NCCL for the rest
//   MPI:                 host-staged MPI over every rank
//   MPI, hierarchical:   host-staged (MPI in the node, MPI across, MPI for the rest)
//
// GpuParts is the seam between this composition (plain C++, tested here) and CUDA
// (ops/cuda/, compiled only with CUDA). The host stand-in implements GpuParts with host
// memory, MPI in place of NCCL and memcpy in place of cudaMemcpyAsync, so that the whole
// GPU path of the runtime runs in tests on machines without a GPU (KOLO_TEST_HOST_GPU).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "backend.h"
#include "device.h"
#include "hierarchical_backend.h"
#include "mpi_backend.h"
#include "staged_backend.h"

namespace kolo::ops {

enum class GpuOperations { Nccl, Mpi };
const char* gpu_operations_name(GpuOperations operations);

class GpuParts {
 public:
  virtual ~GpuParts() = default;

  virtual std::string name() const = 0;
  virtual bool has_nccl() const = 0;

  // ---- on the caller's thread, at submission ----
  // "" if `view` can be used (an existing device, device memory), else why not.
  virtual std::string check(const TensorView& view) = 0;
  // Records on `stream` (a cudaStream_t; nullptr: the legacy default stream) the point
  // where the tensor on `device` is ready.
  virtual std::shared_ptr<Event> record_ready(const Device& device, void* stream) = 0;
  virtual int device_count() = 0;
  // Copies `bytes` between any two pointers (host or device; the runtime infers which),
  // and waits for the copy. For results read through the C API.
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;

  // ---- on the background thread ----
  virtual std::unique_ptr<DeviceOps> make_ops(int device) = 0;
  virtual std::unique_ptr<StagingCopier> make_copier(DeviceOps& ops) = 0;
  // Device collectives (NCCL) over the ranks of `comm`, on the stream of `ops`. Collective:
  // every rank of `comm` calls it at the same point.
  virtual std::unique_ptr<Backend> make_collectives(MPI_Comm comm, DeviceOps& ops,
                                                    std::chrono::milliseconds timeout) = 0;
};

// CUDA (and NCCL where found) when kolo was built with CUDA; nullptr otherwise.
std::unique_ptr<GpuParts> make_cuda_parts();
// Host memory standing in for device memory, MPI for NCCL (tests).
std::unique_ptr<GpuParts> make_host_stand_in_parts(const MpiOptions& mpi);

struct GpuPathOptions {
  GpuOperations operations = GpuOperations::Nccl;
  HierarchicalRoutes hierarchical;  // which collectives run hierarchically
  MpiOptions mpi;
  int64_t staging_piece_bytes = 1 << 20;
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};
};

struct GpuPath {
  std::unique_ptr<DeviceOps> ops;
  std::unique_ptr<DeviceOps> host_ops;  // the hierarchical MPI collectives' host scratch
  std::unique_ptr<Backend> backend;
};

// Collective over the context's ranks. Every rank first sets up its device; if any rank
// fails, every rank throws kolo::Error (never some ranks waiting for others in NCCL's
// set-up): a rank that failed its own error (DeviceError from a CUDA call, ...), the
// others the highest code of the failed ranks.
GpuPath make_gpu_path(GpuParts& parts, const MpiContext& context, int device, const GpuPathOptions& options);

}  // namespace kolo::ops
