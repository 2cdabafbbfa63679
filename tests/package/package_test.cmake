# package.find_package, run by `cmake -P` (see CMakeLists.txt). Steps, each failing the
# test with its output (outside_project.cmake):
#   1. cmake --install <kolo build> --prefix <work>/prefix
#   2. configure consumer/ with CMAKE_PREFIX_PATH=<prefix> (twice: a C+C++ project, and
#      a C++-only one without LibTorch, since kolo's config must not rely on the user
#      enabling C, nor on LibTorch unless asked for kolo::torch)
#   3. build it: its C++ program without MPI's include path, and a compile-only check of
#      kolo.h's compatibility declaration of init(MPI_Comm) with it
#   4. run its programs under mpiexec -np 2
if(NOT CONSUMER_SOURCE_DIR)
  message(FATAL_ERROR "package test: CONSUMER_SOURCE_DIR is not set")
endif()
include("${CMAKE_CURRENT_LIST_DIR}/outside_project.cmake")

install_kolo()
# The public headers are installed, kolo_mpi.h among them; the internal check.h is not.
if(NOT EXISTS "${KOLO_PREFIX}/include/kolo/kolo_mpi.h" OR EXISTS "${KOLO_PREFIX}/include/kolo/check.h")
  message(FATAL_ERROR "package test: expected include/kolo/kolo_mpi.h and no include/kolo/check.h "
                      "under ${KOLO_PREFIX}")
endif()
build_outside_project("${CONSUMER_SOURCE_DIR}" "${WORK_DIR}/build-mixed" -DCONSUMER_CXX_ONLY=OFF)
# The C++-only one as a project without LibTorch would find kolo: the torch component's
# dependency must not be looked for when the project does not ask for kolo::torch.
build_outside_project("${CONSUMER_SOURCE_DIR}" "${WORK_DIR}/build-cxx_only" -DCONSUMER_CXX_ONLY=ON
                      -DCMAKE_DISABLE_FIND_PACKAGE_Torch=ON)

set(programs "${WORK_DIR}/build-mixed/app" "${WORK_DIR}/build-mixed/app_c"
             "${WORK_DIR}/build-cxx_only/app")
foreach(program IN LISTS programs)
  run_on_ranks(2 "${program}")
  string(REGEX MATCHALL "consumer OK" oks "${step_output}")
  list(LENGTH oks n)
  if(NOT n EQUAL 2)
    message(FATAL_ERROR "package test: expected 'consumer OK' from both ranks of ${program}")
  endif()
endforeach()
message(STATUS "package test: passed")
