# Decides whether kolo's PyTorch bindings are built (bindings/): the LibTorch library
# kolo::torch (kolo/torch.h) and the Python package kolo.torch. They need Debian's
# libtorch-dev (LibTorch's CMake config), python3-torch (the interpreter must import torch)
# and pybind11-dev. KOLO_TORCH=AUTO builds them when all three are found, OFF never, ON
# requires them. Sets KOLO_WITH_TORCH, and for the Python package Python3_EXECUTABLE and
# KOLO_PYTHON_PACKAGE_DIR (where the package goes under the install prefix), or else
# KOLO_TORCH_OFF_REASON (why not, for the tests that report themselves skipped).
set(KOLO_TORCH "AUTO" CACHE STRING "PyTorch bindings (kolo/torch.h, kolo.torch): AUTO (when found), ON, OFF")
kolo_auto_switch(KOLO_TORCH)

set(KOLO_WITH_TORCH OFF)
set(_kolo_torch_missing "")
# A sanitizer or fuzzer build instruments kolo's libraries, which python3 could not load
# without preloading the sanitizer's runtime: AUTO leaves the bindings out there.
set(_kolo_torch_instrumented OFF)
if((KOLO_SANITIZE AND NOT KOLO_SANITIZE STREQUAL "OFF") OR KOLO_BUILD_FUZZERS)
  set(_kolo_torch_instrumented ON)
endif()
if(KOLO_TORCH STREQUAL "AUTO" AND _kolo_torch_instrumented)
  set(KOLO_TORCH_OFF_REASON "a sanitizer or fuzzer build; KOLO_TORCH=ON forces them")
  message(STATUS "PyTorch bindings (KOLO_WITH_TORCH): OFF (${KOLO_TORCH_OFF_REASON})")
elseif(NOT KOLO_TORCH STREQUAL "OFF")
  # Debian's interpreter, which sees python3-torch: a python3 earlier on PATH may be another.
  if(NOT Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
    set(Python3_EXECUTABLE /usr/bin/python3)
  endif()
  find_package(Python3 QUIET COMPONENTS Interpreter Development.Module)
  if(NOT Python3_FOUND)
    list(APPEND _kolo_torch_missing "Python 3 headers (python3-dev)")
  else()
    execute_process(COMMAND "${Python3_EXECUTABLE}" -c "import torch; print(torch.__version__)"
      RESULT_VARIABLE _kolo_torch_import OUTPUT_VARIABLE _kolo_torch_version ERROR_QUIET
      OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT _kolo_torch_import EQUAL 0)
      list(APPEND _kolo_torch_missing "python3-torch (${Python3_EXECUTABLE} cannot import torch)")
    endif()
  endif()
  # LibTorch's config reports what it finds on every run; its messages say nothing new.
  set(CMAKE_MESSAGE_LOG_LEVEL_SAVED "${CMAKE_MESSAGE_LOG_LEVEL}")
  set(CMAKE_MESSAGE_LOG_LEVEL WARNING)
  find_package(Torch QUIET)
  set(CMAKE_MESSAGE_LOG_LEVEL "${CMAKE_MESSAGE_LOG_LEVEL_SAVED}")
  if(NOT Torch_FOUND)
    list(APPEND _kolo_torch_missing "LibTorch (libtorch-dev)")
  else()
    find_library(KOLO_TORCH_PYTHON_LIBRARY torch_python HINTS "${TORCH_INSTALL_PREFIX}/lib")
    if(NOT KOLO_TORCH_PYTHON_LIBRARY)
      list(APPEND _kolo_torch_missing "libtorch_python (libtorch-dev)")
    endif()
  endif()
  find_package(pybind11 CONFIG QUIET)
  if(NOT pybind11_FOUND)
    list(APPEND _kolo_torch_missing "pybind11 (pybind11-dev)")
  endif()

  if(_kolo_torch_missing STREQUAL "")
    set(KOLO_WITH_TORCH ON)
  elseif(KOLO_TORCH STREQUAL "ON")
    list(JOIN _kolo_torch_missing ", " _kolo_torch_missing)
    message(FATAL_ERROR "KOLO_TORCH=ON but these were not found: ${_kolo_torch_missing}")
  endif()
endif()

if(KOLO_TORCH STREQUAL "AUTO" AND _kolo_torch_instrumented)
elseif(KOLO_WITH_TORCH)
  set(KOLO_PYTHON_PACKAGE_DIR "lib/python3/dist-packages")
  message(STATUS "PyTorch bindings (KOLO_WITH_TORCH): ON (torch ${_kolo_torch_version})")
else()
  if(_kolo_torch_missing STREQUAL "")
    set(KOLO_TORCH_OFF_REASON "KOLO_TORCH=OFF")
  else()
    list(JOIN _kolo_torch_missing ", " _kolo_torch_missing)
    set(KOLO_TORCH_OFF_REASON "not found: ${_kolo_torch_missing}")
  endif()
  message(STATUS "PyTorch bindings (KOLO_WITH_TORCH): OFF (${KOLO_TORCH_OFF_REASON})")
endif()
unset(_kolo_torch_missing)
unset(_kolo_torch_instrumented)
