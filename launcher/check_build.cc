#include "check_build.h"

#include <mpi.h>

#include <sstream>

#include "kolo_launcher_build_info.h"
#include "preflight.h"

namespace kolo::launcher {
namespace {

std::string mark(bool present) { return present ? "[X]" : "[ ]"; }

// MPI_Get_library_version and MPI_Get_version may be called before MPI_Init.
std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string version(text, static_cast<size_t>(length));
  while (!version.empty() && (version.back() == '\n' || version.back() == '\0')) version.pop_back();
  return version;
}

std::string mpi_standard() {
  int major = 0, minor = 0;
  MPI_Get_version(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string where(const std::string& program, const Environment& env) {
  const std::string path = find_executable(program, env);
  return path.empty() ? "not found on PATH" : path;
}

std::string gpu_line(const std::string& name, bool found, const std::string& version,
                     const char* why_missing) {
  std::string line = "    " + mark(found) + " " + name;
  if (found) return line + (version.empty() ? "" : " " + version) + "\n";
  return line + " (" + why_missing + ")\n";
}

}  // namespace

std::string describe_build(const Environment& env) {
  namespace b = build_info;
  std::ostringstream out;
  out << "kolo v" << b::kVersion << " (" << b::kBuildType << ", " << b::kCompiler
      << ", install prefix " << b::kInstallPrefix << ")\n\n";

  out << "MPI:\n"
      << "    [X] " << mpi_library_version() << "\n"
      << "        MPI standard " << mpi_standard() << "\n"
      << "        mpirun: " << where(find_variable(env, "KOLO_MPIRUN").value_or("mpirun"), env)
      << "\n"
      << "        srun: " << where("srun", env) << "\n\n";

  const char* no_cuda = b::kWithCuda ? "not found at configure time"
                                     : "not searched: this build has no CUDA";
  out << "GPU (KOLO_CUDA=" << b::kCudaRequest << ", KOLO_WITH_CUDA="
      << (b::kWithCuda ? "ON" : "OFF") << "):\n"
      << gpu_line("CUDA", b::kWithCuda, b::kCudaVersion,
                  "not built: no CUDA toolkit at configure time, or KOLO_CUDA=OFF")
      << gpu_line("NCCL", b::kNcclFound, b::kNcclVersion, no_cuda)
      << gpu_line("cuDNN", b::kCudnnFound, b::kCudnnVersion, no_cuda) << "\n";

  out << "Controllers:\n    [X] MPI\n"
      << "Collective backends:\n    [X] MPI\n"
      << "    " << mark(b::kWithNcclBackend) << " NCCL (KOLO_WITH_NCCL)\n";
  return out.str();
}

}  // namespace kolo::launcher
