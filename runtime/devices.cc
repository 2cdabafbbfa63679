#include "devices.h"

#include <algorithm>

#include "kolo/check.h"

namespace kolo {

void* current_cuda_stream();  // cuda_streams.cc

ops::GpuOperations resolve_gpu_operations(GpuOperationsSetting setting, bool nccl_built) {
  switch (setting) {
    case GpuOperationsSetting::Mpi: return ops::GpuOperations::Mpi;
    case GpuOperationsSetting::Nccl:
      KOLO_CHECK(nccl_built, StatusCode::Unsupported,
                 "kolo: KOLO_GPU_OPERATIONS=NCCL, but this build of kolo has no NCCL "
                 "(it was not found at build time): use MPI, or rebuild with NCCL");
      return ops::GpuOperations::Nccl;
    default: return nccl_built ? ops::GpuOperations::Nccl : ops::GpuOperations::Mpi;
  }
}

Devices::Devices(Transport& transport, const Config& config, std::atomic<uint64_t>* progress)
    : transport_(transport) {
  data_.allreduce_chunk_bytes = config.allreduce_chunk_bytes;
  data_.progress = progress;
  data_.hierarchical = {config.hierarchical_allreduce, config.hierarchical_allgather};
  host_ops_ = ops::make_cpu_ops();
  host_backend_ = transport.make_host_backend(data_);
  parts_ = transport.make_gpu_parts(config.test_host_gpu, data_);
  if (parts_) gpu_operations_ = resolve_gpu_operations(config.gpu_operations, parts_->has_nccl());
}

Devices::~Devices() = default;

Devices::Path Devices::path(const Device& device) {
  if (device.is_cpu()) return host();
  if (!gpu_) {
    if (gpu_failure_) throw GpuSetupError(gpu_failure_->code(), gpu_failure_->message());
    if (!parts_) throw GpuSetupError(StatusCode::Unsupported, "kolo: this build of kolo has no GPU support");
    int ordinal = process_device_.load();
    if (ordinal < 0) {  // a rank with no GPU tensor of its own (joined): its local GPU
      int count = 1;
      try {
        count = std::max(1, parts_->device_count());
      } catch (const std::exception&) {
      }
      ordinal = transport_.topology().local_rank % count;
    }
    try {
      gpu_ = std::make_unique<ops::GpuPath>(transport_.make_gpu_path(*parts_, ordinal, gpu_operations_, data_));
    } catch (const Error& e) {
      // A failed set-up leaves the ranks in step (make_gpu_path agrees on it across them):
      // only GPU tensors fail. CommFailure: the ranks could not reach each other, and the
      // runtime stops.
      if (e.code() == StatusCode::CommFailure) throw;
      gpu_failure_ = Status(e.code(), e.what());
      throw GpuSetupError(e.code(), e.what());
    }
    if (chunk_bytes_) gpu_->backend->set_allreduce_chunk_bytes(*chunk_bytes_);
  }
  return {*gpu_->backend, *gpu_->ops};
}

Status Devices::check(const TensorView& view) {
  if (!parts_)
    return Status(StatusCode::Unsupported, "this build of kolo has no GPU support (it was built without CUDA)");
  if (std::string problem = parts_->check(view); !problem.empty()) return Status(StatusCode::InvalidArgument, problem);
  int expected = -1;
  if (!process_device_.compare_exchange_strong(expected, view.device.index) && expected != view.device.index)
    return Status(StatusCode::InvalidArgument,
                  "kolo uses one GPU per process, and this process's earlier GPU tensors are on cuda:" +
                      std::to_string(expected));
  return Status::OK();
}

std::shared_ptr<ops::Event> Devices::record_ready(const Device& device) {
  return parts_->record_ready(device, current_cuda_stream());
}

void Devices::copy_result(void* dst, const TensorView& result) {
  KOLO_CHECK(parts_, StatusCode::Unsupported, "kolo: this build of kolo has no GPU support");
  parts_->copy(dst, result.data, result.num_bytes());
}

void Devices::set_allreduce_chunk_bytes(int64_t bytes) {
  chunk_bytes_ = bytes;
  host_backend_->set_allreduce_chunk_bytes(bytes);
  if (gpu_) gpu_->backend->set_allreduce_chunk_bytes(bytes);
}

std::string Devices::describe_gpu() const {
  if (!parts_) return "none (built without CUDA)";
  return parts_->name() + ", collectives: " + ops::gpu_operations_name(gpu_operations_) +
         (data_.hierarchical.allreduce ? ", hierarchical allreduce" : "") +
         (data_.hierarchical.allgather ? ", hierarchical allgather" : "");
}

}  // namespace kolo
