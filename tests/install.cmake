# cmake --install into a scratch prefix, then check what a user of the install gets: the
# tools run without LD_LIBRARY_PATH, pkg-config (also --static) and find_package
# (numacoll::numacoll, numacoll::numacoll_static) build the installed examples, the MPI
# example runs under the installed numacoll-run, the man pages are there.
if(NC_HELP2MAN AND NOT NUMACOLL_SANITIZE)
  set(NC_INSTALL_MAN yes)
else()
  set(NC_INSTALL_MAN no)
endif()
add_test(NAME install_and_consume
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/install/check.sh ${CMAKE_BINARY_DIR} ${PROJECT_SOURCE_DIR}
                 ${PROJECT_VERSION} "${NC_MPI_DEFAULT}" ${NC_INSTALL_MAN})
set_tests_properties(install_and_consume PROPERTIES TIMEOUT 300
                     PASS_REGULAR_EXPRESSION "install check passed"
                     FAIL_REGULAR_EXPRESSION "FAIL:")
