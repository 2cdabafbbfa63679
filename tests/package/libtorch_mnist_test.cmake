# package.libtorch_mnist, run by `cmake -P` (see CMakeLists.txt): examples/libtorch_mnist,
# PyTorch's C++ MNIST example made data-parallel with kolo::torch, built as an outside
# project against an installed kolo (find_package(kolo COMPONENTS torch), which finds
# LibTorch; outside_project.cmake), then run on a few hundred Fashion-MNIST images at np 2,
# under mpiexec and under the installed kolorun. Each run must train: its test loss falls
# from the first epoch to the last, well below the untrained 2.3, and its last accuracy is
# far above chance (0.1).
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "package test: SOURCE_DIR is not set")
endif()
include("${CMAKE_CURRENT_LIST_DIR}/outside_project.cmake")

set(ARGS --epochs 3 --train-limit 640 --test-limit 500 --batch-size 16 --lr 0.05)
set(MAX_LOSS 1.8)      # after 3 epochs: about 1.2; untrained: about 2.3
set(MIN_ACCURACY 0.35) # after 3 epochs: about 0.5

# check_training(<how>): the last run printed one test line per epoch, with the loss falling
# from the first to the last, which is below MAX_LOSS with an accuracy above MIN_ACCURACY.
function(check_training how)
  string(REGEX MATCHALL "Test set: Average loss: [0-9.]+ \\| Accuracy: [0-9.]+" lines "${step_output}")
  list(LENGTH lines n)
  if(NOT n EQUAL 3)
    message(FATAL_ERROR "package test: ${how}: expected 3 test lines (one per epoch, rank 0 only), got ${n}")
  endif()
  list(GET lines 0 first)
  list(GET lines -1 last)
  string(REGEX MATCH "loss: ([0-9.]+)" _ "${first}")
  set(first_loss ${CMAKE_MATCH_1})
  string(REGEX MATCH "loss: ([0-9.]+) \\| Accuracy: ([0-9.]+)" _ "${last}")
  if(NOT CMAKE_MATCH_1 LESS first_loss OR NOT CMAKE_MATCH_1 LESS MAX_LOSS OR NOT CMAKE_MATCH_2 GREATER MIN_ACCURACY)
    message(FATAL_ERROR "package test: ${how} did not train: first epoch '${first}', last '${last}' (want the loss "
                        "falling and below ${MAX_LOSS}, the accuracy above ${MIN_ACCURACY})")
  endif()
  if(NOT step_output MATCHES "Training on cpu, 2 rank\\(s\\)")
    message(FATAL_ERROR "package test: ${how}: the run did not say it trained on 2 ranks")
  endif()
endfunction()

install_kolo()
set(build "${WORK_DIR}/build")
build_outside_project("${SOURCE_DIR}" "${build}")
set(program "${build}/libtorch_mnist")

run_on_ranks(2 "${program}" ${ARGS})
check_training("mpiexec -np 2")

package_step("run ${program} under the installed kolorun on 2 ranks"
  "${KOLO_PREFIX}/bin/kolorun" -np 2 --oversubscribe "${program}" ${ARGS})
message("${step_output}")
check_training("kolorun -np 2")
message(STATUS "package test: passed")
