// The NCCL backend: collectives on device memory over one NCCL communicator, created from
// an MPI communicator (rank 0's unique id is broadcast over MPI), enqueued on the stream
// of the device's DeviceOps. Collectives return once enqueued. The communicator is
// non-blocking, so that its set-up and every call can be waited on with a deadline: a
// rank that never joins gives an error, not a hang.
#pragma once

#include <mpi.h>

#include <chrono>
#include <memory>

#include "ops/backend.h"
#include "ops/device.h"

namespace kolo::ops::cuda {

std::unique_ptr<Backend> make_nccl_backend(MPI_Comm comm, DeviceOps& ops, std::chrono::milliseconds timeout);

}  // namespace kolo::ops::cuda
