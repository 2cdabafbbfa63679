#include "mpi_roll_call.h"

#include <thread>

#include "ops/mpi_backend.h"

namespace kolo {
namespace {

constexpr int kQuestion = 1;
constexpr int kAnswer = 2;
const char kByte = 0;  // what every message carries: only its arrival counts

void send_byte(int to, int tag, MPI_Comm comm) {
  MPI_Request request;
  if (MPI_Isend(&kByte, 1, MPI_CHAR, to, tag, comm, &request) == MPI_SUCCESS) MPI_Request_free(&request);
}

// Receives one waiting message with `tag`, if any: its source, or -1. A matched probe: the
// program's thread (end_now) and the watchdog's may both receive at once, and with a
// plain probe the one that lost the message would wait in MPI_Recv for another.
int receive_byte(int tag, MPI_Comm comm) {
  int waiting = 0;
  MPI_Message message;
  MPI_Status status;
  if (MPI_Improbe(MPI_ANY_SOURCE, tag, comm, &waiting, &message, &status) != MPI_SUCCESS || !waiting) return -1;
  char byte;
  if (MPI_Mrecv(&byte, 1, MPI_CHAR, &message, MPI_STATUS_IGNORE) != MPI_SUCCESS) return -1;
  return status.MPI_SOURCE;
}

}  // namespace

MpiRollCall::MpiRollCall(MPI_Comm comm) {
  ops::check_mpi(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup (roll call)");
  ops::check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank (roll call)");
  ops::check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size (roll call)");
}

MpiRollCall::~MpiRollCall() {
  // After MPI_Finalize (a shutdown that gave up waiting for the last reference to the
  // runtime finalised without it) no MPI call may be made; the process is ending anyway.
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
}

std::vector<int> MpiRollCall::ask(std::chrono::milliseconds bound, const Clock& clock) {
  std::vector<bool> answered(static_cast<std::size_t>(size_), false);
  answered[static_cast<std::size_t>(rank_)] = true;
  int missing = size_ - 1;
  for (int r = 0; r < size_; ++r)
    if (r != rank_) send_byte(r, kQuestion, comm_);
  const auto deadline = clock.now() + bound;
  while (missing > 0 && clock.now() < deadline) {
    answer();  // the others may be asking at the same time
    bool any = false;
    for (int from; (from = receive_byte(kAnswer, comm_)) >= 0; any = true)
      if (!answered[static_cast<std::size_t>(from)]) answered[static_cast<std::size_t>(from)] = true, --missing;
    if (!any) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::vector<int> silent;
  for (int r = 0; r < size_; ++r)
    if (!answered[static_cast<std::size_t>(r)]) silent.push_back(r);
  return silent;
}

void MpiRollCall::answer() {
  for (int from; (from = receive_byte(kQuestion, comm_)) >= 0;) send_byte(from, kAnswer, comm_);
}

}  // namespace kolo
