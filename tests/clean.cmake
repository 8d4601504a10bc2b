# numacoll-clean (tests/numacoll_clean.sh): removes only the calling user's stale segments
# (creator gone or a zombie, not mapped or open by any process); --dry-run removes nothing.
add_test(NAME numacoll_clean
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/numacoll_clean.sh ${CMAKE_BINARY_DIR}/bin ${PROJECT_VERSION})
set_tests_properties(numacoll_clean PROPERTIES TIMEOUT 60
  PASS_REGULAR_EXPRESSION "numacoll_clean: PASS")
