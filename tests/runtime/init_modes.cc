// How kolo::init() meets MPI, one mode per run (see tests/CMakeLists.txt):
//
//   mpirun -np 2 kolo_init_modes kolo-owns          kolo initialises and finalises MPI
//   mpirun -np 2 kolo_init_modes program-owns       the program's MPI outlives kolo
//   mpirun -np 2 kolo_init_modes low-thread-level   MPI_THREAD_SERIALIZED is refused
//   mpirun -np 4 kolo_init_modes subcomm            kolo on even/odd sub-communicators
//   mpirun -np 3 kolo_init_modes topology           local/cross ranks on one machine
//   mpirun -np 2 kolo_init_modes shutdown-aborts    shutdown fails pending handles
//   mpirun -np 2 kolo_init_modes c-api              kolo_init / kolo_shutdown
//   mpirun -np 4 kolo_init_modes c-api-process-sets kolo_init_with_process_sets
//   mpirun -np 2 kolo_init_modes null-comm          init(MPI_COMM_NULL) is an error
//   KOLO_TIMELINE=/no/such/dir/t.json mpirun -np 2 kolo_init_modes bad-timeline
//   mpirun -np 2 kolo_init_modes c-api-wait-output-misuse
//   KOLO_AUTOTUNE=1 KOLO_AUTOTUNE_LOG=/tmp/a.csv mpirun -np 2 kolo_init_modes autotune
//   KOLO_CONTROL_TIMEOUT_SECONDS=2 mpirun -np 2 kolo_init_modes hung-rank
//   KOLO_X=bad mpirun -np 2 kolo_init_modes config-error KOLO_X
//   HOROVOD_X=1 mpirun -np 2 kolo_init_modes ignored-setting HOROVOD_X
//   HOROVOD_X=1 KOLO_LOG_LEVEL=error mpirun -np 2 kolo_init_modes silenced-setting HOROVOD_X
//
// Exit code 0 when every check passed on this rank; failures are printed with the rank.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <mpi.h>

#include "kolo/kolo_c.h"
#include "kolo/kolo_mpi.h"

namespace {

int g_failures = 0;
int g_rank = -1;

#define EXPECT(cond)                                                                      \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "rank %d: %s:%d: check failed: %s\n", g_rank, __FILE__, __LINE__, \
                   #cond);                                                                \
      ++g_failures;                                                                       \
    }                                                                                     \
  } while (0)

int world_rank() {
  int r = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int s = -1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

bool mpi_initialized() {
  int flag = 0;
  MPI_Initialized(&flag);
  return flag != 0;
}
bool mpi_finalized() {
  int flag = 0;
  MPI_Finalized(&flag);
  return flag != 0;
}

// Sum of (rank + 1) over kolo's ranks, through kolo.
bool allreduce_ranks_sums_to(float expected, const char* name) {
  std::vector<float> v(16, float(kolo::rank() + 1));
  const kolo::Status s = kolo::allreduce_async(name, kolo::view(v), {kolo::ReduceOp::Sum})
                             .wait_for(std::chrono::seconds(60));
  if (!s.ok()) std::fprintf(stderr, "rank %d: allreduce failed: %s\n", g_rank, s.message().c_str());
  return s.ok() && v.front() == expected && v.back() == expected;
}

void check_topology() {
  // One machine: every rank is local, there is one node.
  EXPECT(kolo::local_size() == kolo::size());
  EXPECT(kolo::local_rank() == kolo::rank());
  EXPECT(kolo::cross_size() == 1);
  EXPECT(kolo::cross_rank() == 0);
  EXPECT(kolo::local_rank() >= 0 && kolo::local_rank() < kolo::local_size());
}

int kolo_owns() {
  EXPECT(!mpi_initialized());
  EXPECT(!kolo::is_initialized());
  kolo::init();
  EXPECT(kolo::is_initialized());
  EXPECT(mpi_initialized());
  int provided = 0;
  MPI_Query_thread(&provided);
  EXPECT(provided == MPI_THREAD_MULTIPLE);
  g_rank = world_rank();
  EXPECT(kolo::rank() == world_rank());
  EXPECT(kolo::size() == world_size());
  check_topology();
  const int n = kolo::size();
  EXPECT(allreduce_ranks_sums_to(float(n * (n + 1) / 2), "owns/sum"));
  kolo::init();  // a second init is a no-op
  EXPECT(kolo::size() == n);
  kolo::shutdown();
  EXPECT(!kolo::is_initialized());
  EXPECT(mpi_finalized());  // kolo initialised MPI, so kolo finalised it
  bool threw = false;
  try {
    kolo::rank();
  } catch (const kolo::Error& e) {
    threw = std::strstr(e.what(), "init") != nullptr;
  }
  EXPECT(threw);
  // Starting again after MPI was finalised is a clear error, not a crash.
  threw = false;
  try {
    kolo::init();
  } catch (const kolo::Error& e) {
    threw = std::strstr(e.what(), "finali") != nullptr;
  }
  EXPECT(threw);
  kolo::shutdown();  // harmless when not running
  return g_failures;
}

int program_owns(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  g_rank = world_rank();
  kolo::init();
  const int n = kolo::size();
  EXPECT(n == world_size());
  EXPECT(allreduce_ranks_sums_to(float(n * (n + 1) / 2), "program/sum"));
  kolo::shutdown();
  EXPECT(!kolo::is_initialized());
  EXPECT(!mpi_finalized());  // the program's MPI is left alone
  int one = 1, total = 0;
  EXPECT(MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS);
  EXPECT(total == n);
  // kolo can start again on the program's MPI.
  kolo::init();
  EXPECT(allreduce_ranks_sums_to(float(n * (n + 1) / 2), "program/again"));
  kolo::shutdown();
  EXPECT(!mpi_finalized());
  MPI_Finalize();
  return g_failures;
}

int low_thread_level(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  g_rank = world_rank();
  if (provided >= MPI_THREAD_MULTIPLE) {
    std::fprintf(stderr, "rank %d: MPI gave MPI_THREAD_MULTIPLE although SERIALIZED was asked for\n", g_rank);
    MPI_Finalize();
    return 0;
  }
  bool threw = false;
  try {
    kolo::init();
  } catch (const kolo::Error& e) {
    threw = true;
    EXPECT(std::strstr(e.what(), "MPI_THREAD_MULTIPLE") != nullptr);
    if (g_rank == 0) std::printf("init refused as expected: %s\n", e.what());
  }
  EXPECT(threw);
  EXPECT(!kolo::is_initialized());
  EXPECT(!mpi_finalized());
  MPI_Finalize();
  return g_failures;
}

int subcomm(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  g_rank = world_rank();
  const int wr = world_rank(), ws = world_size();
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, wr % 2, wr, &half);
  kolo::init(half);
  const int expected_size = ws / 2 + (wr % 2 == 0 ? ws % 2 : 0);
  EXPECT(kolo::size() == expected_size);
  EXPECT(kolo::rank() == wr / 2);
  // Sum of world ranks within the sub-communicator only.
  std::vector<int64_t> v(5, wr);
  const kolo::Status s =
      kolo::allreduce_async("sub/sum", kolo::view(v), {kolo::ReduceOp::Sum}).wait_for(std::chrono::seconds(60));
  EXPECT(s.ok());
  int64_t want = 0;
  for (int r = wr % 2; r < ws; r += 2) want += r;
  EXPECT(v[0] == want && v[4] == want);
  // A broadcast from the sub-communicator's rank 0 (world rank 0 or 1).
  std::vector<int32_t> b(3, wr);
  EXPECT(kolo::broadcast_async("sub/bcast", kolo::view(b), 0).wait_for(std::chrono::seconds(60)).ok());
  EXPECT(b == std::vector<int32_t>(3, wr % 2));
  kolo::shutdown();
  EXPECT(!mpi_finalized());
  MPI_Comm_free(&half);
  MPI_Finalize();
  return g_failures;
}

int topology() {
  kolo::init();
  g_rank = world_rank();
  check_topology();
  EXPECT(kolo_local_rank() == kolo::local_rank());
  EXPECT(kolo_local_size() == kolo::local_size());
  kolo::shutdown();
  return g_failures;
}

int shutdown_aborts() {
  kolo::init();
  g_rank = kolo::rank();
  std::vector<float> v(4, 1.0f);
  kolo::Handle h;
  if (kolo::rank() == 0)  // never submitted by the other ranks: pending until shutdown
    h = kolo::allreduce_async("never/completed", kolo::view(v), {kolo::ReduceOp::Sum});
  std::vector<float> ok(2, 1.0f);
  EXPECT(kolo::allreduce_async("completed", kolo::view(ok), {kolo::ReduceOp::Sum})
             .wait_for(std::chrono::seconds(60))
             .ok());
  kolo::shutdown();
  if (g_rank == 0) {
    EXPECT(h.ready());
    const kolo::Status s = h.wait_for(std::chrono::seconds(1));
    EXPECT(s.code() == kolo::StatusCode::Aborted);
    EXPECT(s.message().find("never/completed") != std::string::npos);
    std::printf("pending handle after shutdown: %s\n", s.message().c_str());
  }
  EXPECT(v == std::vector<float>(4, 1.0f));
  return g_failures;
}

int c_api() {
  EXPECT(kolo_is_initialized() == 0);
  EXPECT(kolo_rank() == KOLO_INVALID_ARGUMENT);  // not initialised: an error, not a crash
  EXPECT(std::strlen(kolo_error_message()) > 0);
  EXPECT(kolo_init() == 0);
  g_rank = kolo_rank();
  EXPECT(kolo_is_initialized() == 1);
  EXPECT(kolo_size() == world_size());
  float x = float(kolo_rank() + 1);
  const int64_t shape[1] = {1};
  const kolo_handle h = kolo_allreduce_async("c/init", &x, &x, KOLO_FLOAT32, 0, shape, KOLO_SUM, 1, 1, -1);
  EXPECT(h > 0);
  EXPECT(kolo_wait(h) == 0);
  const int n = kolo_size();
  EXPECT(x == float(n * (n + 1) / 2));
  EXPECT(kolo_join() == 0);
  EXPECT(kolo_shutdown() == 0);
  EXPECT(kolo_is_initialized() == 0);
  EXPECT(mpi_finalized());
  return g_failures;
}

// kolo_init_with_process_sets (flattened lists): a bad list fails on every rank with kolo not
// started; a good one gives ids 1, 2, 3 in order, whose allreduces sum over their own ranks.
// Without KOLO_DYNAMIC_PROCESS_SETS the sets cannot be removed. Run at np 4.
int c_api_process_sets() {
  g_rank = -1;
  EXPECT(kolo_mpi_threads_supported() == KOLO_INVALID_ARGUMENT);  // MPI not initialised yet
  EXPECT(kolo_is_homogeneous() == KOLO_INVALID_ARGUMENT);
  EXPECT(kolo_process_set_ids(nullptr, 0) == KOLO_INVALID_ARGUMENT);
  const int twice_ranks[] = {0, 1, 2, 3, 1, 0};
  const int twice_sizes[] = {2, 2, 2};
  EXPECT(kolo_init_with_process_sets(twice_ranks, twice_sizes, 3) == KOLO_INVALID_ARGUMENT);
  EXPECT(std::strstr(kolo_error_message(), "entry 3, [1, 0], is listed twice (also entry 1)") != nullptr);
  EXPECT(kolo_is_initialized() == 0);
  EXPECT(kolo_init_with_process_sets(twice_ranks, nullptr, 1) == KOLO_INVALID_ARGUMENT);
  EXPECT(kolo_init_with_process_sets(twice_ranks, twice_sizes, -1) == KOLO_INVALID_ARGUMENT);
  const int negative[] = {2, -1};
  EXPECT(kolo_init_with_process_sets(twice_ranks, negative, 2) == KOLO_INVALID_ARGUMENT);
  EXPECT(std::strstr(kolo_error_message(), "negative size") != nullptr);
  EXPECT(kolo_is_initialized() == 0);

  // Sets 1 = {3, 1}, 2 = {0}, 3 = {2, 0, 1}.
  const int ranks[] = {3, 1, 0, 2, 0, 1};
  const int sizes[] = {2, 1, 3};
  EXPECT(kolo_init_with_process_sets(ranks, sizes, 3) == KOLO_OK);
  g_rank = kolo_rank();
  EXPECT(kolo_size() == 4);
  EXPECT(kolo_mpi_threads_supported() == 1);
  EXPECT(kolo_is_homogeneous() == 1);  // one machine
  int ids[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
  EXPECT(kolo_process_set_ids(ids, 8) == 4);
  EXPECT(ids[0] == 0 && ids[1] == 1 && ids[2] == 2 && ids[3] == 3 && ids[4] == -1);
  const std::vector<std::vector<int>> want = {{0, 1, 2, 3}, {1, 3}, {0}, {0, 1, 2}};
  for (int id = 0; id <= 3; ++id) {
    int got[4] = {-1, -1, -1, -1};
    const int count = kolo_process_set_ranks(id, got, 4);
    EXPECT(count == int(want[id].size()));
    EXPECT(std::vector<int>(got, got + std::min(count, 4)) == want[id]);
    int index = -1;
    for (std::size_t k = 0; k < want[id].size(); ++k)
      if (want[id][k] == g_rank) index = int(k);
    EXPECT(kolo_process_set_rank(id) == index);
    EXPECT(kolo_process_set_included(id) == (index >= 0 ? 1 : 0));
    EXPECT(kolo_process_set_size(id) == int(want[id].size()));
    float x = float(g_rank + 1);
    const std::string name = "c/static/" + std::to_string(id);
    const kolo_handle h = kolo_allreduce_async_ps(name.c_str(), &x, &x, KOLO_FLOAT32, 0, nullptr, KOLO_SUM, 1, 1, -1, id);
    if (index < 0) {
      EXPECT(h == KOLO_INVALID_ARGUMENT);
      continue;
    }
    EXPECT(h > 0);
    EXPECT(kolo_wait(h) == KOLO_OK);
    float sum = 0;
    for (int r : want[id]) sum += float(r + 1);
    EXPECT(x == sum);
  }
  EXPECT(kolo_remove_process_set(1) == KOLO_INVALID_ARGUMENT);
  EXPECT(std::strstr(kolo_error_message(), "KOLO_DYNAMIC_PROCESS_SETS") != nullptr);
  EXPECT(kolo_remove_process_set(0) == KOLO_INVALID_ARGUMENT);
  EXPECT(kolo_shutdown() == KOLO_OK);
  EXPECT(mpi_finalized());
  return g_failures;
}

// A sub-communicator argument that is MPI_COMM_NULL (a rank outside the split) must be
// a kolo::Error, not an MPI abort inside the library call.
int null_comm(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  g_rank = world_rank();
  bool threw = false;
  try {
    kolo::init(MPI_COMM_NULL);
  } catch (const kolo::Error& e) {
    threw = true;
    if (g_rank == 0) std::printf("init(MPI_COMM_NULL) refused: %s\n", e.what());
  }
  EXPECT(threw);
  EXPECT(!kolo::is_initialized());
  if (kolo::is_initialized()) kolo::shutdown();
  MPI_Finalize();
  return g_failures;
}

// KOLO_TIMELINE names a file that cannot be created (set by CTest, with a short
// KOLO_CONTROL_TIMEOUT_SECONDS so that a rank left behind cannot hang for long): init()
// must fail on every rank with IoError and a message naming KOLO_TIMELINE.
int bad_timeline(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  g_rank = world_rank();
  bool threw = false;
  try {
    kolo::init();
  } catch (const kolo::Error& e) {
    threw = true;
    EXPECT(std::strstr(e.what(), "KOLO_TIMELINE") != nullptr);
    EXPECT(e.code() == kolo::StatusCode::IoError);  // rank 0's code, on every rank
  }
  EXPECT(threw);
  if (kolo::is_initialized()) {
    // Show what a rank whose init() "succeeded" gets: its first collective cannot run.
    std::vector<float> v(2, 1.0f);
    const kolo::Status s = kolo::allreduce_async("after/bad/timeline", kolo::view(v))
                               .wait_for(std::chrono::seconds(30));
    std::fprintf(stderr, "rank %d: init() succeeded; first allreduce: %s\n", g_rank, s.message().c_str());
    kolo::shutdown();
  }
  MPI_Finalize();
  return g_failures;
}

// kolo_wait_output on a handle without a handle-owned result (an allreduce) must not
// crash: it either fails with a message or copies nothing.
int c_api_wait_output_misuse() {
  EXPECT(kolo_init() == 0);
  g_rank = kolo_rank();
  float x[4] = {1, 2, 3, 4};
  const int64_t shape[1] = {4};
  const kolo_handle h = kolo_allreduce_async("c/misuse", x, x, KOLO_FLOAT32, 1, shape, KOLO_SUM, 1, 1, -1);
  EXPECT(h > 0);
  float out[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
  int64_t first_dim = -7;
  const int rc = kolo_wait_output(h, out, sizeof out, &first_dim);
  if (rc != 0) EXPECT(rc == KOLO_INVALID_ARGUMENT && std::strlen(kolo_error_message()) > 0);
  else EXPECT(first_dim == 0);
  const int n = kolo_size();
  EXPECT(x[3] == float(4 * n));  // the allreduce itself ran
  EXPECT(kolo_shutdown() == 0);
  return g_failures;
}

// KOLO_AUTOTUNE=1 with KOLO_AUTOTUNE_LOG (set by CTest): results stay exact while the
// settings change under the running job, and the search finishes and writes its log.
int autotune() {
  const char* log_path = std::getenv("KOLO_AUTOTUNE_LOG");
  EXPECT(log_path != nullptr);
  if (log_path == nullptr) return g_failures;
  kolo::init();
  g_rank = kolo::rank();
  if (g_rank == 0) std::remove(log_path);
  const int n = kolo::size();
  // Every rank tunes, whatever its own environment says: rank 0's KOLO_AUTOTUNE wins, as
  // the other settings that change what ranks send do.
  EXPECT(kolo::describe_configuration().find("KOLO_AUTOTUNE = 1") != std::string::npos);
  // Mixed sizes so that both the fusion threshold and the piece size matter.
  std::vector<std::vector<float>> tensors;
  for (int t = 0; t < 24; ++t) tensors.emplace_back(t % 4 == 0 ? (1 << 20) + t : 3000 + 1000 * t);
  bool finished = false;
  int iterations = 0;
  for (; iterations < 400 && !finished; ++iterations) {
    std::vector<kolo::Handle> handles;
    for (std::size_t t = 0; t < tensors.size(); ++t) {
      for (std::size_t i = 0; i < tensors[t].size(); ++i) tensors[t][i] = float((i + t + iterations) % 100 + kolo::rank());
      handles.push_back(kolo::allreduce_async("tune/" + std::to_string(t), kolo::view(tensors[t]), {kolo::ReduceOp::Sum}));
    }
    for (std::size_t t = 0; t < tensors.size(); ++t) {
      EXPECT(handles[t].wait_for(std::chrono::seconds(60)).ok());
      int64_t bad = 0;
      for (std::size_t i = 0; i < tensors[t].size(); ++i)
        if (tensors[t][i] != float(n * ((i + t + iterations) % 100) + n * (n - 1) / 2)) ++bad;
      EXPECT(bad == 0);
      if (bad) break;
    }
    if (g_failures) break;
    int found = 0;
    if (g_rank == 0) {
      if (std::FILE* f = std::fopen(log_path, "r")) {
        found = 1;
        std::fclose(f);
      }
    }
    MPI_Bcast(&found, 1, MPI_INT, 0, MPI_COMM_WORLD);
    finished = found != 0;
  }
  EXPECT(finished);
  if (g_rank == 0 && finished) {
    std::FILE* f = std::fopen(log_path, "r");
    char line[256];
    std::vector<std::string> lines;
    while (f && std::fgets(line, sizeof line, f)) lines.emplace_back(line);
    if (f) std::fclose(f);
    EXPECT(lines.size() == 14);  // header, 12 trials, the choice
    if (lines.size() == 14) {
      EXPECT(lines[0].rfind("trial,fusion_threshold_bytes,chunk_bytes,", 0) == 0);
      for (int t = 0; t < 12; ++t) EXPECT(lines[1 + t].rfind(std::to_string(t) + ",", 0) == 0);
      EXPECT(lines[13].rfind("# chosen: trial ", 0) == 0);
    }
    std::printf("autotune finished after %d iterations\n", iterations);
  }
  kolo::shutdown();
  return g_failures;
}

// A rank that stops answering (rank 1 stops itself with SIGSTOP; rank 0 resumes it
// later): rank 0's operation fails with CommFailure within KOLO_CONTROL_TIMEOUT_SECONDS
// (set short by CTest) instead of hanging, and afterwards both ranks still shut kolo down
// and finalise MPI cleanly.
int hung_rank(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  g_rank = world_rank();
  EXPECT(world_size() == 2);
  int pid = static_cast<int>(::getpid());
  std::vector<int> pids(world_size());
  MPI_Allgather(&pid, 1, MPI_INT, pids.data(), 1, MPI_INT, MPI_COMM_WORLD);
  const char* timeout_text = std::getenv("KOLO_CONTROL_TIMEOUT_SECONDS");
  EXPECT(timeout_text != nullptr);
  const double timeout = timeout_text ? std::atof(timeout_text) : 300;
  kolo::init();
  std::vector<float> v(4, 1.0f);
  EXPECT(kolo::allreduce_async("hung/warmup", kolo::view(v), {kolo::ReduceOp::Sum})
             .wait_for(std::chrono::seconds(30))
             .ok());
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 1) {
    ::raise(SIGSTOP);  // until rank 0 sends SIGCONT
    const kolo::Status s = kolo::allreduce_async("hung/op", kolo::view(v), {kolo::ReduceOp::Sum})
                               .wait_for(std::chrono::seconds(30));
    EXPECT(!s.ok());  // rank 0 has given up on this job's collectives
    EXPECT(s.code() != kolo::StatusCode::Pending);
  } else {
    const auto start = std::chrono::steady_clock::now();
    const kolo::Status s = kolo::allreduce_async("hung/op", kolo::view(v), {kolo::ReduceOp::Sum})
                               .wait_for(std::chrono::seconds(30));
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ::kill(pids[1], SIGCONT);
    std::printf("rank 0: %s after %.1f s\n", s.message().c_str(), took);
    const int before = g_failures;
    EXPECT(s.code() == kolo::StatusCode::CommFailure);
    EXPECT(s.message().find("hung/op") != std::string::npos);
    EXPECT(took < timeout + 10);
    if (g_failures == before) std::printf("hung-rank: rank 0 failed the operation with CommFailure in time\n");
  }
  std::fflush(stdout);
  kolo::shutdown();
  MPI_Finalize();
  if (g_failures == 0) std::printf("rank %d: shut down and finalised cleanly\n", g_rank);
  return g_failures;
}

// A rank that hangs after kolo's shutdown round, before MPI_Finalize (in the program's
// own teardown, say): rank 0's shutdown() ends the job within KOLO_CONTROL_TIMEOUT_SECONDS
// (set short by CTest) instead of waiting in MPI_Finalize for ever. Rank 1 sleeps far past
// the test's timeout; mpirun ends it when rank 0 exits.
int hang_after_shutdown() {
  kolo::init();
  g_rank = kolo::rank();
  std::vector<float> v(4, 1.0f);
  EXPECT(kolo::allreduce_async("teardown/op", kolo::view(v), {kolo::ReduceOp::Sum})
             .wait_for(std::chrono::seconds(30))
             .ok());
  if (g_rank == 1) {
    // Rank 0's shutdown ends this rank's kolo too (every rank's loop stops at the round).
    std::this_thread::sleep_for(std::chrono::seconds(300));
    return 1;
  }
  std::printf("rank 0: shutting down while rank 1 hangs\n");
  std::fflush(stdout);
  kolo::shutdown();  // ends the process after the bound
  std::printf("rank 0: shutdown() returned although rank 1 never finalised\n");
  return 1;
}

// A stall caught rank 1 in its own code: it skips an allreduce that rank 0 waits in, and
// never calls kolo::shutdown(). The stall fails rank 0's operation and shuts kolo down on
// both ranks; rank 0's shutdown() then waits in MPI_Finalize for rank 1, and ends the job
// after KOLO_CONTROL_TIMEOUT_SECONDS with a line that names the stall (set short by CTest).
int stall_then_hang() {
  kolo::init();
  g_rank = kolo::rank();
  std::vector<float> v(4, 1.0f);
  if (g_rank == 1) {
    std::this_thread::sleep_for(std::chrono::seconds(300));  // far past the test's timeout
    return 1;
  }
  const kolo::Status s = kolo::allreduce_async("stalled/op", kolo::view(v), {kolo::ReduceOp::Sum})
                             .wait_for(std::chrono::seconds(60));
  EXPECT(s.code() == kolo::StatusCode::Stalled);
  std::printf("rank 0: %s; shutting down while rank 1 is in its own code\n", s.message().c_str());
  std::fflush(stdout);
  kolo::shutdown();  // ends the process after the bound
  std::printf("rank 0: shutdown() returned although rank 1 never finalised\n");
  return 1;
}

int config_error(const char* variable) {
  try {
    kolo::init();
  } catch (const kolo::Error& e) {
    EXPECT(e.code() == kolo::StatusCode::InvalidArgument);
    EXPECT(std::strstr(e.what(), variable) != nullptr);
    EXPECT(!kolo::is_initialized());
    if (g_failures == 0) std::printf("config error as expected: %s\n", e.what());
    return g_failures;
  }
  std::fprintf(stderr, "kolo::init() accepted a bad %s\n", variable);
  kolo::shutdown();
  return 1;
}

// What `body` writes to this process's stderr (kolo's log included), passed on afterwards.
template <typename Body>
std::string capture_stderr(Body body) {
  std::fflush(stderr);
  std::FILE* capture = std::tmpfile();
  const int saved = dup(STDERR_FILENO);
  dup2(fileno(capture), STDERR_FILENO);
  body();
  std::fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  std::string text;
  std::rewind(capture);
  for (int c; (c = std::fgetc(capture)) != EOF;) text += static_cast<char>(c);
  std::fclose(capture);
  std::fputs(text.c_str(), stderr);
  return text;
}

// kolo::init(), and the lines it printed on this rank that name `variable`.
std::vector<std::string> init_lines_naming(const char* variable) {
  const std::string log = capture_stderr([] { kolo::init(); });
  g_rank = kolo::rank();
  std::vector<std::string> naming;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);)
    if (line.find(variable) != std::string::npos) naming.push_back(line);
  return naming;
}

// init() names `variable` as ignored once, on rank 0, at warning level; the other ranks
// say nothing about it.
int ignored_setting(const char* variable) {
  const std::vector<std::string> naming = init_lines_naming(variable);
  EXPECT(naming.size() == (g_rank == 0 ? 1u : 0u));
  if (g_rank == 0 && naming.size() == 1) {
    EXPECT(naming[0].rfind("[kolo 0] WARNING: ", 0) == 0);
    EXPECT(naming[0].find(" is ignored: ") != std::string::npos);
    if (g_failures == 0) std::printf("warned once: %s\n", naming[0].c_str());
  }
  kolo::shutdown();
  return g_failures;
}

// With KOLO_LOG_LEVEL=error, init() says nothing about an ignored `variable` on any rank.
int silenced_setting(const char* variable) {
  EXPECT(init_lines_naming(variable).empty());
  kolo::shutdown();
  return g_failures;
}

}  // namespace

// The error init(process_sets) throws, or "" when it starts.
std::string init_error(const std::vector<std::vector<int>>& sets) {
  try {
    kolo::init(sets);
    return "";
  } catch (const kolo::Error& e) {
    return e.what();
  }
}

// Bad static lists fail init() on every rank, kolo not started and MPI (which kolo
// initialised) left to a later init(), whose good list works: its sets reduce over their
// own ranks, and the queries see them. Run at np 4.
int process_sets_static() {
  g_rank = -1;
  const std::string twice = init_error({{0, 1}, {2, 3}, {1, 0}});
  EXPECT(twice.find("entry 3, [1, 0], is listed twice (also entry 1)") != std::string::npos);
  EXPECT(!kolo::is_initialized());
  const std::string global = init_error({{3, 2, 1, 0}});
  EXPECT(global.find("entry 1, [3, 2, 1, 0], is the global set") != std::string::npos);
  EXPECT(init_error({{0}, {1, 2, 3}, {3, 0}}).empty());
  g_rank = world_rank();
  EXPECT(kolo::process_sets().size() == 4);
  EXPECT(kolo::ProcessSet(3).ranks() == (std::vector<int>{0, 3}));
  EXPECT(kolo::mpi_built() && kolo::mpi_threads_supported() && kolo::is_homogeneous());
  for (int id = 1; id <= 3; ++id) {
    const kolo::ProcessSet set(id);
    if (!set.included()) continue;
    std::vector<float> v(8, float(g_rank + 1));
    kolo::AllreduceOptions options{kolo::ReduceOp::Sum};
    options.process_set = set;
    kolo::allreduce("static/" + std::to_string(id), kolo::view(v), options);
    float want = 0;
    for (int r : set.ranks()) want += float(r + 1);
    EXPECT(v.front() == want && v.back() == want);
  }
  kolo::shutdown();
  EXPECT(mpi_finalized());
  return g_failures;
}

// Ranks given different lists: every rank fails init(), naming what each gave. np 3.
int process_sets_differ() {
  g_rank = -1;
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  g_rank = world_rank();
  const std::string error = init_error(g_rank == 2 ? std::vector<std::vector<int>>{{0, 2}}
                                                   : std::vector<std::vector<int>>{{2, 0}, {1}});
  EXPECT(error.find("ranks were given different process sets") != std::string::npos);
  EXPECT(error.find("ranks 0, 1 gave [[0, 2], [1]]; rank 2 gave [[0, 2]]") != std::string::npos);
  EXPECT(!kolo::is_initialized());
  if (!error.empty()) std::printf("rank %d: %s\n", g_rank, error.c_str());
  MPI_Finalize();
  return g_failures;
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  int failures;
  try {
    if (mode == "kolo-owns") failures = kolo_owns();
    else if (mode == "program-owns") failures = program_owns(argc, argv);
    else if (mode == "low-thread-level") failures = low_thread_level(argc, argv);
    else if (mode == "subcomm") failures = subcomm(argc, argv);
    else if (mode == "topology") failures = topology();
    else if (mode == "shutdown-aborts") failures = shutdown_aborts();
    else if (mode == "c-api") failures = c_api();
    else if (mode == "process-sets-static") failures = process_sets_static();
    else if (mode == "process-sets-differ") failures = process_sets_differ();
    else if (mode == "c-api-process-sets") failures = c_api_process_sets();
    else if (mode == "autotune") failures = autotune();
    else if (mode == "hung-rank") failures = hung_rank(argc, argv);
    else if (mode == "hang-after-shutdown") failures = hang_after_shutdown();
    else if (mode == "stall-then-hang") failures = stall_then_hang();
    else if (mode == "null-comm") failures = null_comm(argc, argv);
    else if (mode == "bad-timeline") failures = bad_timeline(argc, argv);
    else if (mode == "c-api-wait-output-misuse") failures = c_api_wait_output_misuse();
    else if (mode == "config-error" && argc > 2) failures = config_error(argv[2]);
    else if (mode == "ignored-setting" && argc > 2) failures = ignored_setting(argv[2]);
    else if (mode == "silenced-setting" && argc > 2) failures = silenced_setting(argv[2]);
    else {
      std::fprintf(stderr, "usage: %s kolo-owns|program-owns|low-thread-level|subcomm|topology|"
                           "shutdown-aborts|c-api|c-api-process-sets|autotune|hung-rank|hang-after-shutdown|stall-then-hang|null-comm|bad-timeline|c-api-wait-output-misuse|"
                           "config-error VARIABLE|ignored-setting VARIABLE|silenced-setting VARIABLE\n", argv[0]);
      return 2;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: unexpected exception: %s\n", g_rank, e.what());
    failures = 1;
  }
  if (failures == 0 && (g_rank <= 0)) std::printf("%s: OK\n", mode.c_str());
  return failures == 0 ? 0 : 1;
}
