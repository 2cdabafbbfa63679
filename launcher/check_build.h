// `kolorun --check-build`: what this build of kolo has, as horovodrun --check-build
// prints it: MPI (the library actually loaded, via MPI_Get_library_version), CUDA,
// NCCL and cuDNN with versions, and how kolo was configured.
#pragma once

#include <string>

#include "environment.h"

namespace kolo::launcher {

std::string describe_build(const Environment& env);

}  // namespace kolo::launcher
