# The tools' command-line interfaces (tests/tools_cli.sh): --help, --version, units, names.
add_test(NAME tools_cli
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tools_cli.sh ${CMAKE_BINARY_DIR}/bin ${PROJECT_VERSION}
                 ${CMAKE_BINARY_DIR}/lib)
set_tests_properties(tools_cli PROPERTIES TIMEOUT 300 PASS_REGULAR_EXPRESSION "tools_cli: PASS"
                     FAIL_REGULAR_EXPRESSION "FAIL:")
