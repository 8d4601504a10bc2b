# cmake --install, then consume the installed library via pkg-config and find_package.
add_test(NAME install_and_consume
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/install/check.sh ${CMAKE_BINARY_DIR} ${PROJECT_SOURCE_DIR})
set_tests_properties(install_and_consume PROPERTIES TIMEOUT 300
                     PASS_REGULAR_EXPRESSION "install check passed")
