// The backend and DeviceOps for each kind of memory. The transport builds the backends: the
// host path at init(), the GPU path at the first GPU operation the ranks run. Every rank
// runs the same responses in the same order, so they all reach it together, which NCCL's
// collective set-up needs.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "config.h"
#include "kolo/kolo.h"
#include "ops/gpu_path.h"
#include "transport.h"

namespace kolo {

// The GPU path could not be set up (no device, NCCL failed, ...), with the code of what
// failed (DeviceError, Unsupported, ...; never CommFailure: then the ranks can no longer
// agree, and the error stops the runtime). Every rank throws it at the same response, so
// the runtime fails that response's handles and carries on.
class GpuSetupError : public Error {
 public:
  using Error::Error;
};

class Devices {
 public:
  // `transport` must outlive this.
  // `progress` counts the data collectives' completed pieces (DataOptions::progress).
  Devices(Transport& transport, const Config& config, std::atomic<uint64_t>* progress = nullptr);
  ~Devices();

  struct Path {
    ops::Backend& backend;
    ops::DeviceOps& ops;
  };
  Path host() { return {*host_backend_, *host_ops_}; }
  // The path for tensors on `device` (its kind): builds the GPU path on first use; throws
  // GpuSetupError when it cannot.
  Path path(const Device& device);

  // ---- the caller's side (any thread) ----
  // OK if a GPU view can be used, else why not (without the tensor's name): InvalidArgument
  // for a tensor this machine cannot use, Unsupported in a build without GPU support.
  Status check(const TensorView& view);
  // Records the tensor's readiness on the calling thread's stream.
  std::shared_ptr<ops::Event> record_ready(const Device& device);
  bool gpu_available() const { return parts_ != nullptr; }
  // Copies a GPU result to `dst` (host or device memory) and waits for it.
  void copy_result(void* dst, const TensorView& result);

  void set_allreduce_chunk_bytes(int64_t bytes);
  std::string describe_gpu() const;

 private:
  Transport& transport_;
  DataOptions data_;
  ops::GpuOperations gpu_operations_ = ops::GpuOperations::Nccl;
  std::unique_ptr<ops::DeviceOps> host_ops_;
  std::unique_ptr<ops::Backend> host_backend_;
  std::unique_ptr<ops::GpuParts> parts_;
  std::unique_ptr<ops::GpuPath> gpu_;
  std::optional<Status> gpu_failure_;  // the set-up's failure: set once, on every rank
  std::atomic<int> process_device_{-1};     // the one GPU this process uses
  std::optional<int64_t> chunk_bytes_;
};

// The running runtime's Devices::copy_result (api.cc), for the C API.
void copy_gpu_result(void* dst, const TensorView& result);

// Resolves KOLO_GPU_OPERATIONS against what the build has; throws kolo::Error
// (Unsupported) naming the variable when NCCL is asked for and missing.
ops::GpuOperations resolve_gpu_operations(GpuOperationsSetting setting, bool nccl_built);

}  // namespace kolo
