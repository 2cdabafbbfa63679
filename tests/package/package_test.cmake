# Run by `cmake -P` (see CMakeLists.txt). Steps, each failing the test with its output:
#   1. cmake --install <kolo build> --prefix <work>/prefix
#   2. configure consumer/ with CMAKE_PREFIX_PATH=<prefix> (twice: a C+C++ project, and
#      a C++-only one, since kolo's config must not rely on the user enabling C)
#   3. build it
#   4. run its programs under mpiexec -np 2
cmake_minimum_required(VERSION 3.25)
foreach(var KOLO_BINARY_DIR CONSUMER_SOURCE_DIR WORK_DIR GENERATOR MPIEXEC)
  if(NOT ${var})
    message(FATAL_ERROR "package test: ${var} is not set")
  endif()
endforeach()
if(NOT MPIEXEC_NUMPROC_FLAG)
  set(MPIEXEC_NUMPROC_FLAG -np)
endif()
separate_arguments(MPIEXEC_FLAGS UNIX_COMMAND "${MPIEXEC_FLAGS}")
if(NOT CONFIG)
  set(CONFIG Release)
endif()

set(prefix "${WORK_DIR}/prefix")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

function(step what)
  message(STATUS "package test: ${what}")
  execute_process(COMMAND ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 240)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "package test: ${what} failed (${rc})\n${out}\n${err}")
  endif()
  set(step_output "${out}${err}" PARENT_SCOPE)
endfunction()

step("install into ${prefix}"
  "${CMAKE_COMMAND}" --install "${KOLO_BINARY_DIR}" --prefix "${prefix}" --config "${CONFIG}")

set(compilers "")
if(C_COMPILER)
  list(APPEND compilers "-DCMAKE_C_COMPILER=${C_COMPILER}")
endif()
if(CXX_COMPILER)
  list(APPEND compilers "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
endif()

foreach(variant mixed cxx_only)
  set(build "${WORK_DIR}/build-${variant}")
  set(only_cxx OFF)
  if(variant STREQUAL "cxx_only")
    set(only_cxx ON)
  endif()
  step("configure the consumer (${variant})"
    "${CMAKE_COMMAND}" -S "${CONSUMER_SOURCE_DIR}" -B "${build}" -G "${GENERATOR}"
      "-DCMAKE_BUILD_TYPE=${CONFIG}" "-DCMAKE_PREFIX_PATH=${prefix}"
      -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF
      "-DCONSUMER_CXX_ONLY=${only_cxx}" ${compilers})
  # The consumer must have found the installed copy, not the build tree.
  file(STRINGS "${build}/CMakeCache.txt" kolo_dir REGEX "^kolo_DIR:")
  if(NOT kolo_dir MATCHES "^kolo_DIR:PATH=${prefix}/")
    message(FATAL_ERROR "package test: the consumer found kolo at '${kolo_dir}', not under ${prefix}")
  endif()
  step("build the consumer (${variant})" "${CMAKE_COMMAND}" --build "${build}" --config "${CONFIG}")
endforeach()

set(programs "${WORK_DIR}/build-mixed/app" "${WORK_DIR}/build-mixed/app_c"
             "${WORK_DIR}/build-cxx_only/app")
foreach(program IN LISTS programs)
  step("run ${program} on 2 ranks"
    "${MPIEXEC}" ${MPIEXEC_NUMPROC_FLAG} 2 ${MPIEXEC_FLAGS} "${program}")
  message("${step_output}")
  string(REGEX MATCHALL "consumer OK" oks "${step_output}")
  list(LENGTH oks n)
  if(NOT n EQUAL 2)
    message(FATAL_ERROR "package test: expected 'consumer OK' from both ranks of ${program}")
  endif()
endforeach()
message(STATUS "package test: passed")
