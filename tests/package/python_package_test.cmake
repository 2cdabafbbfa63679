# package.python, run by `cmake -P` (see CMakeLists.txt): the kolo Python package as a user
# gets it from `cmake --install`. Steps, each failing the test with its output
# (outside_project.cmake):
#   1. cmake --install <kolo build> --prefix <work>/prefix
#   2. the package is at <prefix>/lib/python3/dist-packages/kolo, with its extension module
#   3. a horovod.torch-style script imports it from there (PYTHONPATH, outside the build
#      tree) and allreduces on 2 ranks
foreach(var PYTHON SCRIPT)
  if(NOT ${var})
    message(FATAL_ERROR "package test: ${var} is not set")
  endif()
endforeach()
include("${CMAKE_CURRENT_LIST_DIR}/outside_project.cmake")

install_kolo()
set(package "${KOLO_PREFIX}/lib/python3/dist-packages/kolo")
file(GLOB module "${package}/torch/_C*.so")
if(NOT EXISTS "${package}/torch/__init__.py" OR NOT module)
  message(FATAL_ERROR "package test: expected the kolo package with kolo/torch/_C*.so under ${package}")
endif()

set(ENV{PYTHONPATH} "${KOLO_PREFIX}/lib/python3/dist-packages")
run_on_ranks(2 "${PYTHON}" "${SCRIPT}" "${package}")
string(REGEX MATCHALL "python package OK" oks "${step_output}")
list(LENGTH oks n)
if(NOT n EQUAL 2)
  message(FATAL_ERROR "package test: expected 'python package OK' from both ranks")
endif()
