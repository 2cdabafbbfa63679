#include "ring_allreduce.h"

#include <algorithm>
#include <climits>
#include <string>

#include "dtype.h"
#include "kolo/check.h"
#include "mpi_backend.h"

namespace kolo::ops {
namespace {

constexpr int kRingTag = 0x6b72;  // apart from the backend's sendrecv tag, though never concurrent

// The piece cut into one segment per rank, as even as can be: segment s is
// [count * s / size, count * (s + 1) / size).
struct Segments {
  int64_t count;
  int size;
  std::size_t element;

  int64_t begin(int s) const { return count * s / size; }
  int length(int s) const { return static_cast<int>(begin(s + 1) - begin(s)); }
  std::size_t offset(int s) const { return static_cast<std::size_t>(begin(s)) * element; }
  std::size_t bytes(int s) const { return static_cast<std::size_t>(length(s)) * element; }
  // Segment i steps before s around the ring (i may be negative).
  int before(int s, int i) const { return ((s - i) % size + size) % size; }
};

}  // namespace

void ring_allreduce(MPI_Comm comm, const void* input, void* output, int count, DType dtype, ReduceOp op,
                    double prescale, double scale, std::vector<std::byte>& scratch) {
  int rank = 0, size = 1;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  if (size == 1) {
    scale_copy(output, input, count, dtype, prescale);
    ops::scale(output, count, dtype, scale);
    return;
  }
  const Segments seg{count, size, dtype_size(dtype)};
  KOLO_CHECK(seg.bytes(size - 1) <= std::size_t{INT_MAX}, StatusCode::Internal,
             "kolo: a ring allreduce's segment exceeds what one MPI call can move (the backend cuts pieces)");
  scratch.resize(std::max(scratch.size(), seg.bytes(size - 1)));  // the last segment is the longest
  const auto* in = static_cast<const std::byte*>(input);
  auto* out = static_cast<std::byte*>(output);
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  // An MPI error names the step and both neighbours (built only then: this is the hot path).
  const auto check = [&](int rc, const char* step) {
    if (rc != MPI_SUCCESS)
      check_mpi(rc, (std::string(step) + " with ranks " + std::to_string(left) + " and " + std::to_string(right)).c_str());
  };

  // Reduce-scatter. In step k this rank passes on its sum of segment rank - k (its own
  // input in step 0) and adds its input to the left neighbour's sum of segment rank - k - 1.
  // After size - 1 steps it holds segment rank + 1 reduced over every rank; the last step
  // scales it as it writes it. The prescale applies to this rank's input in every step and
  // to what arrives in step 0, the neighbour's input as it was sent.
  for (int k = 0; k < size - 1; ++k) {
    const int send = seg.before(rank, k), recv = seg.before(rank, k + 1);
    const std::byte* from = (k == 0 ? in : out) + seg.offset(send);
    MPI_Status status;
    check(MPI_Sendrecv(from, static_cast<int>(seg.bytes(send)), MPI_BYTE, right, kRingTag, scratch.data(),
                       static_cast<int>(seg.bytes(recv)), MPI_BYTE, left, kRingTag, comm, &status),
          "MPI_Sendrecv (ring reduce-scatter)");
    // Negotiation makes every rank's piece the same; a short receive would add stale bytes.
    int received = 0;
    MPI_Get_count(&status, MPI_BYTE, &received);
    KOLO_CHECK(std::size_t(received) == seg.bytes(recv), StatusCode::Internal,
               "kolo: ring allreduce: rank " + std::to_string(left) + " sent " + std::to_string(received) +
                   " bytes of a segment of " + std::to_string(seg.bytes(recv)) + ": the ranks' pieces differ");
    const double factor = k == size - 2 ? scale : 1.0, received_factor = k == 0 ? prescale : 1.0;
    reduce_scaled(out + seg.offset(recv), in + seg.offset(recv), scratch.data(), seg.length(recv), dtype, op, factor,
                  prescale, received_factor);
  }
  // Allgather. In step k this rank passes on the finished segment it got last (its own in
  // step 0), straight from and into the output.
  for (int k = 0; k < size - 1; ++k) {
    const int send = seg.before(rank + 1, k), recv = seg.before(rank, k);
    check(MPI_Sendrecv(out + seg.offset(send), static_cast<int>(seg.bytes(send)), MPI_BYTE, right, kRingTag,
                       out + seg.offset(recv), static_cast<int>(seg.bytes(recv)), MPI_BYTE, left, kRingTag, comm,
                       MPI_STATUS_IGNORE),
          "MPI_Sendrecv (ring allgather)");
  }
}

}  // namespace kolo::ops
