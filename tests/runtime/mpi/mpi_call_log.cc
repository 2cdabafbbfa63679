#include "mpi_call_log.h"

#include <mpi.h>

#include <atomic>
#include <mutex>
#include <numeric>
#include <stdexcept>

namespace kolo_test {
namespace {

std::atomic<bool> recording{false};
std::mutex mutex;
std::vector<MpiCall> noted;

void note(const char* function, MPI_Comm comm) {
  if (!recording.load()) return;
  MPI_Group group, world;
  PMPI_Comm_group(comm, &group);
  PMPI_Comm_group(MPI_COMM_WORLD, &world);
  int size = 0;
  PMPI_Group_size(group, &size);
  std::vector<int> ranks(static_cast<std::size_t>(size)), in_world(static_cast<std::size_t>(size));
  std::iota(ranks.begin(), ranks.end(), 0);
  PMPI_Group_translate_ranks(group, size, ranks.data(), world, in_world.data());
  PMPI_Group_free(&group);
  PMPI_Group_free(&world);
  std::lock_guard<std::mutex> lock(mutex);
  noted.push_back({function, std::move(in_world)});
}

}  // namespace

MpiCallLog::MpiCallLog() {
  std::lock_guard<std::mutex> lock(mutex);
  if (recording.exchange(true)) throw std::logic_error("MpiCallLog: one at a time");
  noted.clear();
}

MpiCallLog::~MpiCallLog() { recording = false; }

std::vector<MpiCall> MpiCallLog::calls() const {
  std::lock_guard<std::mutex> lock(mutex);
  return noted;
}

}  // namespace kolo_test

extern "C" {

int MPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                   const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
  kolo_test::note("MPI_Allgatherv", comm);
  return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
}

int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  kolo_test::note("MPI_Bcast", comm);
  return PMPI_Bcast(buffer, count, datatype, root, comm);
}

}  // extern "C"
