# Reduction tests of the C library (tests/test_reduce*.c are registered by
# tests/CMakeLists.txt): labels and time limits. Both together: about 15 s on 2 CPUs.
foreach(t test_reduce test_reduce_fault)
  if(TEST ${t})
    set_tests_properties(${t} PROPERTIES LABELS "reduce" TIMEOUT 180)
  endif()
endforeach()
# reduce-scatter and scans (tests/test_scatter_scan.c): about 2 s on 2 CPUs
if(TEST test_scatter_scan)
  set_tests_properties(test_scatter_scan PROPERTIES LABELS "reduce" TIMEOUT 120)
endif()
