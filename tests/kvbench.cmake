# numacoll-kvbench's readers end when their parent dies (tests/kvbench_dead_parent.sh).
add_test(NAME kvbench_dead_parent
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/kvbench_dead_parent.sh ${CMAKE_BINARY_DIR}/bin)
set_tests_properties(kvbench_dead_parent PROPERTIES TIMEOUT 60
  PASS_REGULAR_EXPRESSION "kvbench_dead_parent: PASS")
