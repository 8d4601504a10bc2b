# numacoll-info --explain (issue 36): what the library decides for a team, checked against
# numacoll-topo, numacoll-info --json and a real team's NUMACOLL_VERBOSE=1 log (a fork-based
# numacoll-bench run); bad arguments; human lines of at most 100 columns.
add_test(NAME info_explain
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/info_explain.sh ${CMAKE_BINARY_DIR}/bin)
set_tests_properties(info_explain PROPERTIES TIMEOUT 300)
