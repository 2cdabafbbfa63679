# KOLO_BUILD_FUZZERS: every target of the build is compiled for libFuzzer's coverage and
# with AddressSanitizer and UndefinedBehaviorSanitizer (any undefined behaviour aborts, so
# the fuzzer counts it as a crash), and tests/fuzz/ adds one harness per parser
# (docs/fuzzing.md). tools/fuzz.sh configures such a build and runs the harnesses.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang" OR NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR
    "KOLO_BUILD_FUZZERS=ON needs clang (libFuzzer is part of clang), but the compilers are "
    "${CMAKE_C_COMPILER} (${CMAKE_C_COMPILER_ID}) and ${CMAKE_CXX_COMPILER} (${CMAKE_CXX_COMPILER_ID}). "
    "Configure a separate build directory with "
    "-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ (Debian: apt-get install clang "
    "libclang-rt-14-dev), or run tools/fuzz.sh, which does.")
endif()
if(NOT KOLO_CUDA STREQUAL "OFF")
  message(FATAL_ERROR
    "KOLO_BUILD_FUZZERS=ON needs -DKOLO_CUDA=OFF: the harnesses fuzz host-side parsers and "
    "readers, and nvcc does not take the sanitizer flags.")
endif()

include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer")
check_cxx_source_compiles(
  "#include <cstddef>
   #include <cstdint>
   extern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, std::size_t) { return 0; }"
  KOLO_HAS_LIBFUZZER)
unset(CMAKE_REQUIRED_FLAGS)
if(NOT KOLO_HAS_LIBFUZZER)
  message(FATAL_ERROR
    "KOLO_BUILD_FUZZERS=ON: ${CMAKE_CXX_COMPILER} cannot link a program with -fsanitize=fuzzer: "
    "libFuzzer's runtime is missing (Debian 12: apt-get install libclang-rt-14-dev, which ships "
    "libclang_rt.fuzzer-x86_64.a).")
endif()

# Libraries get coverage without libFuzzer's main(); the harnesses link it (tests/fuzz/).
set(KOLO_SANITIZERS -fsanitize=address,undefined -fno-sanitize-recover=undefined)
add_compile_options(-fsanitize=fuzzer-no-link ${KOLO_SANITIZERS} -fno-omit-frame-pointer)
add_link_options(${KOLO_SANITIZERS})
