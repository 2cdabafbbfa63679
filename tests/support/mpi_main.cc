// The Catch2 runner of every test binary that runs under mpirun (kolo_mpi_tests,
// kolo_distributed_tests, kolo_collective_gpu_tests). Every rank runs the same test cases
// in the same order; rank 0 prints Catch's report, the other ranks write theirs to a
// temporary file that is printed only if that rank saw a failure. The exit code is the
// same on every rank: the largest failure count of any rank.
//
//   mpirun -np 3 kolo_mpi_tests            # everything but the [stall] test
//   KOLO_STALL_CHECK_TIME_SECONDS=1 KOLO_STALL_SHUTDOWN_TIME_SECONDS=3
//     mpirun -np 2 kolo_mpi_tests [stall]
//
// The GPU tests (tests/ops/gpu/) build it with KOLO_TEST_REQUIRES_GPU: on a machine without
// a CUDA device they exit with 77, which CTest reports as skipped (support/gpu_skip.h).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <mpi.h>

#include "kolo/kolo.h"
#include "support/catch_session.h"

#ifdef KOLO_TEST_REQUIRES_GPU
#include <cuda_runtime_api.h>

#include "support/gpu_skip.h"
#endif

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);

#ifdef KOLO_TEST_REQUIRES_GPU
  int devices = 0;
  const cudaError_t probe = cudaGetDeviceCount(&devices);
  if (probe != cudaSuccess || devices == 0) {
    const std::string why = "no CUDA device on this machine (cudaGetDeviceCount: " +
                            std::string(cudaGetErrorString(probe)) + ", " + std::to_string(devices) + " devices)";
    const int code = kolo_test::exit_code_without_gpu(why.c_str());  // every rank: the same code
    MPI_Finalize();
    return code;
  }
#endif

  try {
    kolo::init();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: kolo::init() failed: %s\n", world_rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 3);
  }

  // Names this binary in the report files and messages (three binaries share this main).
  const std::string program = std::filesystem::path(argv[0]).filename().string();
  std::string log_path;
  if (world_rank != 0)
    log_path = (std::filesystem::temp_directory_path() /
                (program + "." + std::to_string(::getpid()) + ".rank" + std::to_string(world_rank) + ".log"))
                   .string();
  const int failures = kolo_test::run_catch(argc, argv, log_path);
  if (!log_path.empty()) {
    if (failures != 0) {
      std::ifstream in(log_path);
      std::stringstream text;
      text << in.rdbuf();
      std::cerr << "==== Catch report of rank " << world_rank << " ====\n" << text.str() << std::flush;
    }
    std::filesystem::remove(log_path);
  }

  int worst = 0;
  MPI_Allreduce(&failures, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (world_rank == 0 && worst != 0 && failures == 0)
    std::fprintf(stderr, "%s: another rank failed (see its report above)\n", program.c_str());
  kolo::shutdown();
  MPI_Finalize();
  return worst;
}
