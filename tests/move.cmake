# Data-movement tests of the C library (tests/test_move*.c are registered by
# tests/CMakeLists.txt): labels and time limits.
foreach(t test_move test_move_fault)
  if(TEST ${t})
    set_tests_properties(${t} PROPERTIES LABELS "move" TIMEOUT 180)
  endif()
endforeach()
if(TEST test_move_give_back)
  set_tests_properties(test_move_give_back PROPERTIES LABELS "move" TIMEOUT 60)
endif()
# move_timing: the measurement behind NUMACOLL_MOVE_CMA_MIN (docs/tuning-notes.md); built,
# not run by ctest
add_executable(move_timing ${CMAKE_CURRENT_SOURCE_DIR}/move_timing.c)
target_link_libraries(move_timing PRIVATE nc_testutil)
target_compile_options(move_timing PRIVATE ${NC_WARN} -Wno-missing-prototypes)
set_target_properties(move_timing PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
add_executable(move_rsag_timing ${CMAKE_CURRENT_SOURCE_DIR}/move_rsag_timing.c)
target_link_libraries(move_rsag_timing PRIVATE nc_testutil)
target_compile_options(move_rsag_timing PRIVATE ${NC_WARN} -Wno-missing-prototypes)
set_target_properties(move_rsag_timing PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
# move_give_back_timing: the measurement behind NUMACOLL_MOVE_GIVE_BACK (docs/tuning-notes.md);
# built, not run by ctest
add_executable(move_give_back_timing ${CMAKE_CURRENT_SOURCE_DIR}/move_give_back_timing.c)
target_link_libraries(move_give_back_timing PRIVATE nc_testutil)
target_compile_options(move_give_back_timing PRIVATE ${NC_WARN} -Wno-missing-prototypes)
set_target_properties(move_give_back_timing PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
