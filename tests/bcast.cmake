# Broadcast tests: test_bcast runs with the defaults; a second registration runs the same
# program with the CMA path on by default (NUMACOLL_BCAST_CMA_MIN) to cover it in the
# default-configuration tests too.
if(TARGET test_bcast)
  add_test(NAME test_bcast_cma COMMAND test_bcast)
  set_tests_properties(test_bcast_cma PROPERTIES TIMEOUT 300
    ENVIRONMENT "CMOCKA_MESSAGE_OUTPUT=stdout;NUMACOLL_BCAST_CMA_MIN=64K")
endif()
# Kill -9 and hung-member tests of the broadcast: once with the default segments and once
# with POSIX named ones, where a file left in /dev/shm would show.
if(TEST test_bcast_fault)
  set_tests_properties(test_bcast_fault PROPERTIES LABELS "bcast" TIMEOUT 240)
  add_test(NAME test_bcast_fault_posix COMMAND test_bcast_fault)
  set_tests_properties(test_bcast_fault_posix PROPERTIES LABELS "bcast" TIMEOUT 240
    ENVIRONMENT "CMOCKA_MESSAGE_OUTPUT=stdout;NC_TEST_SHM_BACKEND=posix;NC_TEST_SKIP=hung*")
endif()
# numacoll-bench's command line: errors name the option and the allowed values; the
# paper-figure modes (time vs s, time vs f with the model) write their CSV rows
add_test(NAME bench_cli COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/bench_cli.sh ${CMAKE_BINARY_DIR}/bin)
set_tests_properties(bench_cli PROPERTIES LABELS "bcast" TIMEOUT 120
  PASS_REGULAR_EXPRESSION "bench_cli: PASS")
# test_bcast is one program of three files: its cases of members that disagree and of the
# broadcast state live in tests/bcast/
if(TARGET test_bcast)
  target_sources(test_bcast PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/bcast/mismatch.c
                                    ${CMAKE_CURRENT_SOURCE_DIR}/bcast/state.c)
  target_include_directories(test_bcast PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
endif()
if(TEST test_bcast_give_back)
  set_tests_properties(test_bcast_give_back PROPERTIES LABELS "bcast" TIMEOUT 60)
endif()
# bcast_give_back_timing: the measurement behind NUMACOLL_BCAST_GIVE_BACK (docs/tuning-notes.md);
# built, not run by ctest
add_executable(bcast_give_back_timing ${CMAKE_CURRENT_SOURCE_DIR}/bcast_give_back_timing.c)
target_link_libraries(bcast_give_back_timing PRIVATE nc_testutil)
target_compile_options(bcast_give_back_timing PRIVATE ${NC_WARN} -Wno-missing-prototypes)
set_target_properties(bcast_give_back_timing PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
