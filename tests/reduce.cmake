# Reduction tests of the C library (tests/test_reduce*.c are registered by
# tests/CMakeLists.txt): labels and time limits. Both together: about 15 s on 2 CPUs.
foreach(t test_reduce test_reduce_fault)
  if(TEST ${t})
    set_tests_properties(${t} PROPERTIES LABELS "reduce" TIMEOUT 180)
  endif()
endforeach()
