# KOLO_SANITIZE builds every C and C++ target with a sanitizer (tools/sanitize.sh runs the
# tests on such a build, docs/reliability.md):
#   OFF        the default
#   address    AddressSanitizer and UndefinedBehaviorSanitizer; any undefined behaviour
#              aborts, so a report cannot pass as a warning
#   thread     ThreadSanitizer
# nvcc takes none of these flags: the CUDA files, if any, are built without them.
set(KOLO_SANITIZE "OFF" CACHE STRING
    "Build with a sanitizer: OFF, address (ASan + UBSan), thread (TSan)")
set_property(CACHE KOLO_SANITIZE PROPERTY STRINGS OFF address thread)

if(KOLO_SANITIZE STREQUAL "OFF")
  return()
elseif(KOLO_SANITIZE STREQUAL "address")
  set(kolo_sanitizer_flags -fsanitize=address,undefined -fno-sanitize-recover=undefined)
elseif(KOLO_SANITIZE STREQUAL "thread")
  set(kolo_sanitizer_flags -fsanitize=thread)
else()
  message(FATAL_ERROR "KOLO_SANITIZE='${KOLO_SANITIZE}': expected OFF, address or thread")
endif()
if(KOLO_BUILD_FUZZERS)
  message(FATAL_ERROR "KOLO_SANITIZE and KOLO_BUILD_FUZZERS: the fuzz build has its own "
                      "sanitizers (ASan + UBSan); leave KOLO_SANITIZE at OFF there")
endif()
set(kolo_sanitizer_compile_flags ${kolo_sanitizer_flags})
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # GCC 12 with a sanitizer warns of maybe-uninitialized members inside libstdc++'s
  # std::regex (std::function in _StateT): false positives in the library, not kolo's.
  list(APPEND kolo_sanitizer_compile_flags -Wno-maybe-uninitialized)
endif()
list(APPEND kolo_sanitizer_compile_flags -fno-omit-frame-pointer)
add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${kolo_sanitizer_compile_flags}>")
add_link_options(${kolo_sanitizer_flags})
message(STATUS "kolo: built with a sanitizer (KOLO_SANITIZE): ${KOLO_SANITIZE}")
