#include "devices.h"

#include <algorithm>

#include "ops/hierarchical_backend.h"

namespace kolo {

void* current_cuda_stream();  // gpu_api.cc

ops::GpuOperations resolve_gpu_operations(GpuOperationsSetting setting, bool nccl_built) {
  switch (setting) {
    case GpuOperationsSetting::Mpi: return ops::GpuOperations::Mpi;
    case GpuOperationsSetting::Nccl:
      if (!nccl_built)
        throw Error(StatusCode::InvalidArgument,
                    "kolo: KOLO_GPU_OPERATIONS=NCCL, but this build of kolo has no NCCL "
                    "(it was not found at build time): use MPI, or rebuild with NCCL");
      return ops::GpuOperations::Nccl;
    default: return nccl_built ? ops::GpuOperations::Nccl : ops::GpuOperations::Mpi;
  }
}

Devices::Devices(const ops::MpiContext& context, const Config& config) : context_(context) {
  mpi_.allreduce_chunk_bytes = config.allreduce_chunk_bytes;
  mpi_.control_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(config.control_timeout_seconds * 1000.0));
  host_ops_ = ops::make_cpu_ops();
  const ops::HierarchicalRoutes hierarchical{config.hierarchical_allreduce, config.hierarchical_allgather};
  // The allreduce's cross-node step pairs local rank i of every node; the allgather's
  // involves only local rank 0, so it takes nodes of any size.
  if (hierarchical.allreduce && !context.homogeneous())
    throw Error(StatusCode::InvalidArgument,
                "kolo: KOLO_HIERARCHICAL_ALLREDUCE needs the same number of ranks on every node, but nodes "
                "run from " + std::to_string(context.smallest_node()) + " to " +
                    std::to_string(context.largest_node()) + " ranks");
  if (hierarchical.any()) {
    ops::HierarchicalParts h;
    h.local = ops::make_mpi_backend(context.local_comm(), mpi_);
    h.cross = ops::make_mpi_backend(context.cross_comm(), mpi_);
    h.flat = ops::make_mpi_backend(context, mpi_);
    h.memory = host_ops_.get();
    h.placement = context.placement();
    h.routes = hierarchical;
    host_backend_ = ops::make_hierarchical_backend(std::move(h));
  } else {
    host_backend_ = ops::make_mpi_backend(context, mpi_);
  }

  parts_ = config.test_host_gpu ? ops::make_host_stand_in_parts(mpi_) : ops::make_cuda_parts();
  if (parts_) gpu_options_.operations = resolve_gpu_operations(config.gpu_operations, parts_->has_nccl());
  gpu_options_.hierarchical = hierarchical;
  gpu_options_.mpi = mpi_;
  gpu_options_.timeout = mpi_.control_timeout;
}

Devices::~Devices() = default;

Devices::Path Devices::path(const Device& device) {
  if (device.is_cpu()) return host();
  if (!gpu_) {
    if (gpu_failure_) throw GpuSetupError(StatusCode::InvalidArgument, *gpu_failure_);
    if (!parts_)
      throw GpuSetupError(StatusCode::InvalidArgument, "kolo: this build of kolo has no GPU support");
    int ordinal = process_device_.load();
    if (ordinal < 0) {  // a rank with no GPU tensor of its own (joined): its local GPU
      int count = 1;
      try {
        count = std::max(1, parts_->device_count());
      } catch (const std::exception&) {
      }
      ordinal = context_.local_rank() % count;
    }
    try {
      gpu_ = std::make_unique<ops::GpuPath>(ops::make_gpu_path(*parts_, context_, ordinal, gpu_options_));
    } catch (const Error& e) {
      if (e.code() != StatusCode::InvalidArgument) throw;  // a communication failure
      gpu_failure_ = e.what();
      throw GpuSetupError(StatusCode::InvalidArgument, e.what());
    }
    if (chunk_bytes_) gpu_->backend->set_allreduce_chunk_bytes(*chunk_bytes_);
  }
  return {*gpu_->backend, *gpu_->ops};
}

std::string Devices::check(const TensorView& view) {
  if (!parts_) return "this build of kolo has no GPU support (it was built without CUDA)";
  if (std::string problem = parts_->check(view); !problem.empty()) return problem;
  int expected = -1;
  if (!process_device_.compare_exchange_strong(expected, view.device.index) && expected != view.device.index)
    return "kolo uses one GPU per process, and this process's earlier GPU tensors are on cuda:" +
           std::to_string(expected);
  return "";
}

std::shared_ptr<ops::Event> Devices::record_ready(const Device& device) {
  return parts_->record_ready(device, current_cuda_stream());
}

void Devices::copy_result(void* dst, const TensorView& result) {
  if (!parts_) throw Error(StatusCode::InvalidArgument, "kolo: this build of kolo has no GPU support");
  parts_->copy(dst, result.data, result.num_bytes());
}

void Devices::set_allreduce_chunk_bytes(int64_t bytes) {
  chunk_bytes_ = bytes;
  host_backend_->set_allreduce_chunk_bytes(bytes);
  if (gpu_) gpu_->backend->set_allreduce_chunk_bytes(bytes);
}

std::string Devices::describe_gpu() const {
  if (!parts_) return "none (built without CUDA)";
  return parts_->name() + ", collectives: " + ops::gpu_operations_name(gpu_options_.operations) +
         (gpu_options_.hierarchical.allreduce ? ", hierarchical allreduce" : "") +
         (gpu_options_.hierarchical.allgather ? ", hierarchical allgather" : "");
}

}  // namespace kolo
