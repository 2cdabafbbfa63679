// The public functions on the caller's CUDA streams (include/kolo/kolo.h): the calling
// thread's stream, on which its GPU tensors' readiness is recorded (set_cuda_stream), and
// a framework's stream made to wait for an operation without the host (wait_on_stream).
#include "gpu_state.h"
#include "kolo/kolo.h"
#include "tensor_queue.h"

namespace kolo {
namespace {

thread_local void* t_cuda_stream = nullptr;

}  // namespace

void* current_cuda_stream() { return t_cuda_stream; }

void set_cuda_stream(void* cuda_stream) { t_cuda_stream = cuda_stream; }

Status Handle::wait_on_stream(void* cuda_stream) const {
  if (!state_) return Status(StatusCode::InvalidArgument, "kolo: wait_on_stream() on an empty handle");
  if (!state_->gpu) return wait();
  detail::note_caller_waits();
  std::shared_ptr<ops::Event> done = state_->gpu->wait_published(*state_);
  if (!done) return wait();  // completed without reaching the device: its status says why
  try {
    done->block_stream(cuda_stream);
  } catch (const Error& e) {
    return Status(e.code(), e.what());
  }
  return Status::OK();
}

}  // namespace kolo
