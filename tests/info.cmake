# numacoll-info --explain (issue 36): what the library decides for a team, checked against
# numacoll-topo, numacoll-info --json and a real team's NUMACOLL_VERBOSE=1 log (a fork-based
# numacoll-bench run); bad arguments; human lines of at most 100 columns.
add_test(NAME info_explain
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/info_explain.sh ${CMAKE_BINARY_DIR}/bin)
set_tests_properties(info_explain PROPERTIES TIMEOUT 300)

# docs/tuning.md is numacoll-info --markdown's output, and no help text is over 300 characters
# (issue 33: the measurements behind the defaults live in docs/tuning-notes.md).
add_test(NAME info_markdown_docs
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/info_markdown_docs.sh ${CMAKE_BINARY_DIR}/bin
                 ${PROJECT_SOURCE_DIR})
set_tests_properties(info_markdown_docs PROPERTIES TIMEOUT 60
  PASS_REGULAR_EXPRESSION "info_markdown_docs: PASS" FAIL_REGULAR_EXPRESSION "FAIL:")
