// kolo::build_info(): what this build can do and which CUDA, NCCL and MPI it runs with
// (kolorun --check-build prints it). Safe before init() and on machines without a GPU;
// MPI_Get_library_version and MPI_Get_version may be called before MPI_Init.
#include <mpi.h>

#include <string>

#include "kolo/kolo.h"

#ifdef KOLO_WITH_CUDA
#include <cuda_runtime_api.h>
#endif
#ifdef KOLO_WITH_NCCL
#include <nccl.h>
#endif

#ifndef KOLO_VERSION
#define KOLO_VERSION "unknown"
#endif

namespace kolo {
namespace {

#ifdef KOLO_WITH_CUDA
// CUDA encodes versions as 1000 * major + 10 * minor.
std::string cuda_version_string(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }
#endif
#ifdef KOLO_WITH_NCCL
// NCCL >= 2.9 encodes versions as 10000 * major + 100 * minor + patch.
std::string nccl_version_string(int v) {
  return std::to_string(v / 10000) + "." + std::to_string((v % 10000) / 100) + "." + std::to_string(v % 100);
}
#endif

}  // namespace

BuildInfo build_info() {
  BuildInfo info;
  info.version = KOLO_VERSION;
  char library[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  if (MPI_Get_library_version(library, &length) == MPI_SUCCESS) {
    info.mpi_library.assign(library, static_cast<std::size_t>(length));
    if (auto end = info.mpi_library.find_first_of("\r\n,"); end != std::string::npos) info.mpi_library.resize(end);
  }
  int major = 0, minor = 0;
  if (MPI_Get_version(&major, &minor) == MPI_SUCCESS) info.mpi_standard = std::to_string(major) + "." + std::to_string(minor);
#ifdef KOLO_WITH_CUDA
  info.cuda = true;
  info.cuda_compiled = cuda_version_string(CUDART_VERSION);
  int runtime = 0, driver = 0, devices = 0;
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) info.cuda_runtime = cuda_version_string(runtime);
  info.cuda_driver = (cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0) ? cuda_version_string(driver) : "none";
  if (cudaGetDeviceCount(&devices) == cudaSuccess) info.cuda_devices = devices;
  else (void)cudaGetLastError();  // no driver or device: not an error to keep
#endif
#ifdef KOLO_WITH_NCCL
  info.nccl = true;
  info.nccl_compiled = nccl_version_string(NCCL_VERSION_CODE);
  info.nccl_version_code = NCCL_VERSION_CODE;
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess) info.nccl_runtime = nccl_version_string(nccl);
#endif
#ifdef KOLO_WITH_GLOO
  info.gloo = true;
#endif
  return info;
}

}  // namespace kolo
