# package.embed, run by `cmake -P` (see CMakeLists.txt): examples/embed, a plain training
# loop made data-parallel with kolo, built as an outside project against an installed kolo
# (outside_project.cmake), then run in each way a program can meet MPI:
#
#   np 1, --seed 1 --save          the single-process full-batch reference
#   np 2, --seed 1 --save          kolo owns MPI: both ranks end with the same weights
#                                  (checksum), equal to the reference's within rounding
#   np 2, --own-mpi --seed 1       the program owns MPI, kolo::init() on the world: the same
#                                  weights, bit for bit, as kolo owning MPI
#   np 2, no seed                  each process initialises differently: kolo's broadcast
#                                  must still make them agree
#   np 4, --subcomm --seed 1       two groups of 2 ranks, kolo::init(group_comm): group 0
#                                  computes what np 2 did; group 1 (seed 2) agrees within
#                                  itself and differs from group 0
#
# Every run must train: final loss below MAX_LOSS, which the untrained model's is not.
foreach(var EMBED_SOURCE_DIR COMPARE_NUMBERS)
  if(NOT ${var})
    message(FATAL_ERROR "package test: ${var} is not set")
  endif()
endforeach()
include("${CMAKE_CURRENT_LIST_DIR}/outside_project.cmake")

set(MAX_LOSS 0.2)  # trained: about 0.12 (the labels' noise sets the floor); untrained: 0.6-0.8
set(RTOL 1e-4)     # np 1 vs np 2 differ by summation order only: about 1e-6 relative
set(ATOL 1e-5)

# check_outcome(<label> <ranks> <checksum variable>): the last run's output has one final
# line from each rank 0 .. ranks-1 prefixed by <label>, all with the same weights checksum
# (stored in <checksum variable>) and a loss below MAX_LOSS; and that the first step's loss
# (before training) was not below MAX_LOSS.
function(check_outcome label ranks checksum_var)
  string(REGEX MATCHALL "${label}rank [0-9]+ of ${ranks}: final loss [0-9.]+, accuracy [0-9.]+, weights checksum [0-9a-f]+"
         lines "${step_output}")
  set(seen_ranks "")
  set(checksums "")
  foreach(line IN LISTS lines)
    string(REGEX MATCH "rank ([0-9]+) of [0-9]+: final loss ([0-9.]+),.* checksum ([0-9a-f]+)" _ "${line}")
    list(APPEND seen_ranks ${CMAKE_MATCH_1})
    list(APPEND checksums ${CMAKE_MATCH_3})
    if(NOT CMAKE_MATCH_2 LESS MAX_LOSS)
      message(FATAL_ERROR "package test: '${line}': the loss is not below ${MAX_LOSS}; training failed")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES seen_ranks)
  list(LENGTH seen_ranks n)
  if(NOT n EQUAL ranks)
    message(FATAL_ERROR "package test: expected a final line from each of ${ranks} ranks (${label}), got ${n}")
  endif()
  list(REMOVE_DUPLICATES checksums)
  list(LENGTH checksums n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "package test: ${label}ranks ended with different weights (checksums ${checksums})")
  endif()
  string(REGEX MATCH "${label}step +0: loss ([0-9.]+)" _ "${step_output}")
  if(NOT CMAKE_MATCH_1 OR CMAKE_MATCH_1 LESS MAX_LOSS)
    message(FATAL_ERROR "package test: the untrained loss (${label}step 0: '${CMAKE_MATCH_1}') should be above ${MAX_LOSS}")
  endif()
  set(${checksum_var} ${checksums} PARENT_SCOPE)
endfunction()

install_kolo()
set(build "${WORK_DIR}/build")
build_outside_project("${EMBED_SOURCE_DIR}" "${build}")
set(embed "${build}/embed")

run_on_ranks(1 "${embed}" --seed 1 --save "${WORK_DIR}/single.txt")
check_outcome("" 1 single_checksum)

run_on_ranks(2 "${embed}" --seed 1 --save "${WORK_DIR}/parallel.txt")
check_outcome("" 2 parallel_checksum)
package_step("compare the 2-rank weights with the single-process ones"
  "${COMPARE_NUMBERS}" "${WORK_DIR}/parallel.txt" "${WORK_DIR}/single.txt" ${RTOL} ${ATOL})
message("${step_output}")

run_on_ranks(2 "${embed}" --own-mpi --seed 1)
check_outcome("" 2 own_mpi_checksum)
if(NOT own_mpi_checksum STREQUAL parallel_checksum)
  message(FATAL_ERROR "package test: --own-mpi ended with other weights (${own_mpi_checksum}) than kolo owning MPI (${parallel_checksum})")
endif()

run_on_ranks(2 "${embed}")
check_outcome("" 2 unseeded_checksum)

run_on_ranks(4 "${embed}" --subcomm --seed 1)
check_outcome("group 0, " 2 group0_checksum)
check_outcome("group 1, " 2 group1_checksum)
if(NOT group0_checksum STREQUAL parallel_checksum)
  message(FATAL_ERROR "package test: group 0 of --subcomm ended with other weights (${group0_checksum}) than the 2-rank run (${parallel_checksum})")
endif()
if(group1_checksum STREQUAL group0_checksum)
  message(FATAL_ERROR "package test: the two --subcomm groups ended with the same weights: they did not train independently")
endif()
if(NOT step_output MATCHES "lowest loss: group [01] ")
  message(FATAL_ERROR "package test: --subcomm printed no 'lowest loss' line (the program's own MPI_Allreduce on the world)")
endif()
message(STATUS "package test: passed")
