// The allreduce kolo runs itself over MPI point-to-point, for pieces large enough that
// bandwidth, not latency, sets their time: a ring reduce-scatter, then a ring allgather
// (each rank sends and receives 2 (n - 1) / n of the piece, as in MPI's own ring).
//
// Why not MPI_Allreduce: a scaled result (an average, a postscale) then takes a pass of its
// own over the output, and after MPI's reduction those lines have left this core's cache
// (measured: 1.2-1.6x a sum over the ResNet-50 gradients at np 2, on an AMD EPYC and an
// Intel Xeon). Here the scale rides on the last reduction step: each element of this rank's
// segment is reduced and scaled in one write, while the other rank's bytes are in cache,
// so an average costs what a sum costs on any CPU (docs/perf.md). A prescale rides on the
// reduction steps likewise: this rank's input is scaled as it is read to be added, and a
// neighbour's raw input (first step) as it is added, so it takes no pass of its own.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kolo/kolo.h"

namespace kolo::ops {

// The MPI backend's pieces of at least this much a rank take the ring, smaller ones
// MPI_Allreduce. Measured at np 2 (AMD EPYC, shared memory): the two take the same time from
// 64 KiB a rank on. At np 4 on two cores MPI's won single pieces up to 128 KiB a rank, the
// ring whole sets in 1 MiB pieces (docs/perf.md, "Average and Sum").
inline constexpr int64_t kRingMinBytesPerRank = int64_t{64} * 1024;

// output = (the ranks' inputs, each times prescale, reduced by op) * scale, on every rank of
// comm, the same bits everywhere, and those of scaling each input first and the result
// after. input may equal output; otherwise it is only read, and the two must not overlap
// in part. op is element-wise (not Adasum). `scratch` holds one received segment (grown as
// needed, kept by the caller so that a training step allocates nothing). Every rank of
// comm calls with the same count and scales.
void ring_allreduce(MPI_Comm comm, const void* input, void* output, int count, DType dtype, ReduceOp op,
                    double prescale, double scale, std::vector<std::byte>& scratch);

}  // namespace kolo::ops
