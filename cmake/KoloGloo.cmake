# KOLO_GLOO (AUTO, ON, OFF) -> KOLO_WITH_GLOO: the Gloo transport (runtime/gloo_transport.h),
# over Gloo's TCP transport from Debian's libgloo-dev (cmake/FindGloo.cmake).
kolo_auto_switch(KOLO_GLOO)
set(KOLO_WITH_GLOO OFF)
if(NOT KOLO_GLOO STREQUAL "OFF")
  find_package(Gloo QUIET)
  if(Gloo_FOUND)
    set(KOLO_WITH_GLOO ON)
  elseif(KOLO_GLOO STREQUAL "ON")
    message(FATAL_ERROR "KOLO_GLOO=ON but Gloo was not found (Debian: apt-get install libgloo-dev)")
  endif()
endif()
message(STATUS "kolo: the Gloo transport (KOLO_WITH_GLOO): ${KOLO_WITH_GLOO}")
