// The roll call over MPI (Transport::roll_call): which ranks still answer, asked by a rank
// that is about to end the job so that its last line can name the ranks that did not.
//
// It runs on a communicator of its own (a duplicate), so that its messages never meet
// kolo's collectives or the program's, and it is called from the watchdog's thread while
// the background thread may sit in a collective (kolo needs MPI_THREAD_MULTIPLE anyway).
// A question is one byte to every other rank; each rank's watchdog answers it within a
// tick. Every send is non-blocking and its request freed at once: a rank that no longer
// answers must not hold up the one asking, and what is sent lives in static storage.
#pragma once

#include <mpi.h>

#include <chrono>
#include <vector>

#include "clock.h"

namespace kolo {

class MpiRollCall {
 public:
  explicit MpiRollCall(MPI_Comm comm);  // collective over comm
  ~MpiRollCall();
  MpiRollCall(const MpiRollCall&) = delete;
  MpiRollCall& operator=(const MpiRollCall&) = delete;

  // Asks every other rank; returns, ascending, those that did not answer within `bound`.
  std::vector<int> ask(std::chrono::milliseconds bound, const Clock& clock);
  // Answers every question received so far. Never blocks.
  void answer();

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
};

}  // namespace kolo
