// Built when kolo is built without CUDA: there are no GPU parts, and GPU tensors are
// refused at submission ("this build of kolo has no GPU support").
#include "gpu_path.h"

namespace kolo::ops {

std::unique_ptr<GpuParts> make_cuda_parts() { return nullptr; }

}  // namespace kolo::ops
