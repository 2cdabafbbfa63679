# The seeds' other experiments, run under mpirun at np 2 by seed_examples_test.py (see its
# docstring): examples.cifar10_resnet.* and examples.synthetic_benchmark.*
function(kolo_seed_example_tests target prefix)
  if(NOT TARGET ${target})
    return()
  endif()
  list(JOIN KOLO_MPIEXEC_FLAGS " " mpiexec_flags)
  foreach(case ${ARGN})
    add_test(NAME examples.${target}.${case}
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/seed_examples_test.py ${prefix}-${case}
                     --exe $<TARGET_FILE:${target}> --work ${CMAKE_CURRENT_BINARY_DIR}/${target}
                     --mpiexec ${MPIEXEC_EXECUTABLE} --mpiexec-flags=${mpiexec_flags})
    set_tests_properties(examples.${target}.${case} PROPERTIES LABELS "examples;mpi" TIMEOUT ${KOLO_TEST_TIMEOUT})
  endforeach()
endfunction()

kolo_seed_example_tests(cifar10_resnet cifar synthetic file bad-data bad-flags)
kolo_seed_example_tests(synthetic_benchmark bench format resnet-fp16 bad-flags)
