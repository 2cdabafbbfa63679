// Backend's defaults for what not every backend can do.
#include "backend.h"

namespace kolo::ops {

void Backend::allreduce_prescaled(const void*, void*, int64_t, DType, ReduceOp, double, double) {
  throw Error(StatusCode::Internal, "kolo: the " + name() + " backend does not fold a prescale (folds_prescale())");
}

void Backend::sendrecv(const void*, std::size_t, void*, std::size_t, int) {
  throw Error(StatusCode::Unsupported,
              "kolo: the " + name() + " backend has no point-to-point exchange (which Adasum needs)");
}

}  // namespace kolo::ops
