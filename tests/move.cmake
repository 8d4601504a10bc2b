# Data-movement tests of the C library (tests/test_move*.c are registered by
# tests/CMakeLists.txt): labels and time limits.
foreach(t test_move test_move_fault)
  if(TEST ${t})
    set_tests_properties(${t} PROPERTIES LABELS "move" TIMEOUT 180)
  endif()
endforeach()
