# FindGloo: Meta's collective library (Debian 12: libgloo-dev), whose TCP transport kolo's
# Gloo transport runs on (elastic jobs, kolorun --gloo). Debian's package ships no CMake
# config. Defines Gloo_FOUND and the imported target Gloo::gloo.
find_path(Gloo_INCLUDE_DIR gloo/rendezvous/context.h HINTS ${Gloo_ROOT} ENV Gloo_ROOT PATH_SUFFIXES include)
find_library(Gloo_LIBRARY gloo HINTS ${Gloo_ROOT} ENV Gloo_ROOT PATH_SUFFIXES lib lib64)
set(_gloo_has_tcp FALSE)
if(Gloo_INCLUDE_DIR AND EXISTS "${Gloo_INCLUDE_DIR}/gloo/config.h")
  file(STRINGS "${Gloo_INCLUDE_DIR}/gloo/config.h" _gloo_tcp REGEX "^#define GLOO_HAVE_TRANSPORT_TCP 1")
  if(_gloo_tcp)
    set(_gloo_has_tcp TRUE)
  endif()
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Gloo REQUIRED_VARS Gloo_LIBRARY Gloo_INCLUDE_DIR _gloo_has_tcp)
if(Gloo_FOUND AND NOT TARGET Gloo::gloo)
  add_library(Gloo::gloo UNKNOWN IMPORTED)
  set_target_properties(Gloo::gloo PROPERTIES
    IMPORTED_LOCATION "${Gloo_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${Gloo_INCLUDE_DIR}")
endif()
mark_as_advanced(Gloo_INCLUDE_DIR Gloo_LIBRARY)
