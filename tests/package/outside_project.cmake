# What the package tests share (they run under `cmake -P`): install this kolo build into a
# scratch prefix, build an outside CMake project against it with find_package(kolo), and
# run its programs under mpiexec. A step that fails stops the test with its output.
#
# Set with -D: KOLO_BINARY_DIR, WORK_DIR (emptied), GENERATOR, MPIEXEC; optionally CONFIG
# (default Release), C_COMPILER, CXX_COMPILER, MPIEXEC_NUMPROC_FLAG (default -np) and
# MPIEXEC_FLAGS (space-separated). tests/package/CMakeLists.txt passes them all.
cmake_minimum_required(VERSION 3.25)
foreach(var KOLO_BINARY_DIR WORK_DIR GENERATOR MPIEXEC)
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
set(KOLO_PREFIX "${WORK_DIR}/prefix")

# package_step(<what> <command...>): runs the command; fails the test with its output
# unless it exits 0. Sets step_output (stdout then stderr) in the caller.
function(package_step what)
  message(STATUS "package test: ${what}")
  execute_process(COMMAND ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 240)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "package test: ${what} failed (${rc})\n${out}\n${err}")
  endif()
  set(step_output "${out}${err}" PARENT_SCOPE)
endfunction()

# Empties WORK_DIR and installs kolo into KOLO_PREFIX under it.
function(install_kolo)
  file(REMOVE_RECURSE "${WORK_DIR}")
  file(MAKE_DIRECTORY "${WORK_DIR}")
  package_step("install into ${KOLO_PREFIX}"
    "${CMAKE_COMMAND}" --install "${KOLO_BINARY_DIR}" --prefix "${KOLO_PREFIX}" --config "${CONFIG}")
endfunction()

# build_outside_project(<source dir> <build dir> [configure arguments...]): configures the
# project with CMAKE_PREFIX_PATH=KOLO_PREFIX (package registries off), checks that it found
# the installed kolo and not kolo's build tree, and builds it.
function(build_outside_project source build)
  set(compilers "")
  if(C_COMPILER)
    list(APPEND compilers "-DCMAKE_C_COMPILER=${C_COMPILER}")
  endif()
  if(CXX_COMPILER)
    list(APPEND compilers "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
  endif()
  package_step("configure ${source} in ${build}"
    "${CMAKE_COMMAND}" -S "${source}" -B "${build}" -G "${GENERATOR}"
      "-DCMAKE_BUILD_TYPE=${CONFIG}" "-DCMAKE_PREFIX_PATH=${KOLO_PREFIX}"
      -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF
      ${compilers} ${ARGN})
  file(STRINGS "${build}/CMakeCache.txt" kolo_dir REGEX "^kolo_DIR:")
  if(NOT kolo_dir MATCHES "^kolo_DIR:PATH=${KOLO_PREFIX}/")
    message(FATAL_ERROR "package test: ${source} found kolo at '${kolo_dir}', not under ${KOLO_PREFIX}")
  endif()
  package_step("build ${build}" "${CMAKE_COMMAND}" --build "${build}" --config "${CONFIG}")
endfunction()

# run_on_ranks(<ranks> <program> [arguments...]): runs the program under mpiexec and
# prints its output. Sets step_output in the caller.
function(run_on_ranks ranks program)
  list(JOIN ARGN " " shown_args)
  package_step("run ${program} ${shown_args} on ${ranks} ranks"
    "${MPIEXEC}" ${MPIEXEC_NUMPROC_FLAG} ${ranks} ${MPIEXEC_FLAGS} "${program}" ${ARGN})
  message("${step_output}")
  set(step_output "${step_output}" PARENT_SCOPE)
endfunction()
