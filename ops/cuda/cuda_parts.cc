// GpuParts over CUDA (and NCCL when kolo was built with it): what ops/gpu_path.cc composes
// into the GPU path.
#include <string>

#include "cuda_check.h"
#include "cuda_device.h"
#include "device_guard.h"
#include "ops/gpu_path.h"
#ifdef KOLO_WITH_NCCL
#include "nccl_backend.h"
#endif

namespace kolo::ops {
namespace {

class CudaParts final : public GpuParts {
 public:
  std::string name() const override {
    int runtime = 0;
    (void)cudaRuntimeGetVersion(&runtime);
    return "CUDA " + std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10);
  }

  bool has_nccl() const override {
#ifdef KOLO_WITH_NCCL
    return true;
#else
    return false;
#endif
  }

  int device_count() override {
    int count = 0;
    cuda::check_cuda(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    return count;
  }

  void copy(void* dst, const void* src, std::size_t bytes) override {
    cuda::check_cuda(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "cudaMemcpy (a result on the GPU)");
  }

  std::string check(const TensorView& view) override {
    int count = 0;
    if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess)
      return "no CUDA device is usable (" + cuda::describe_cuda_error(e) + ")";
    if (view.device.index < 0 || view.device.index >= count)
      return "this machine has " + std::to_string(count) + " CUDA device(s)";
    cudaPointerAttributes attributes{};
    if (cudaError_t e = cudaPointerGetAttributes(&attributes, view.data); e != cudaSuccess)
      return "CUDA does not know its data pointer (" + cuda::describe_cuda_error(e) + ")";
    if (attributes.type == cudaMemoryTypeManaged) return "";
    if (attributes.type != cudaMemoryTypeDevice) return "its data is host memory, not memory of that device";
    if (attributes.device != view.device.index)
      return "its data is memory of cuda:" + std::to_string(attributes.device);
    return "";
  }

  std::shared_ptr<Event> record_ready(const Device& device, void* stream) override {
    cuda::DeviceGuard guard(device.index);
    return cuda::record_event(static_cast<cudaStream_t>(stream));
  }

  std::unique_ptr<DeviceOps> make_ops(int device) override { return cuda::make_cuda_ops(device); }
  std::unique_ptr<StagingCopier> make_copier(DeviceOps& ops) override { return cuda::make_cuda_copier(ops); }

  std::unique_ptr<Backend> make_collectives(MPI_Comm comm, DeviceOps& ops, std::chrono::milliseconds timeout) override {
#ifdef KOLO_WITH_NCCL
    return cuda::make_nccl_backend(comm, ops, timeout);
#else
    throw Error(StatusCode::Unsupported, "kolo: this build of kolo has no NCCL");
#endif
  }
};

}  // namespace

std::unique_ptr<GpuParts> make_cuda_parts() { return std::make_unique<CudaParts>(); }

}  // namespace kolo::ops
