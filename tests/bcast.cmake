# Broadcast tests: test_bcast runs with the defaults; a second registration runs the same
# program with the CMA path on by default (NUMACOLL_BCAST_CMA_MIN) to cover it in the
# default-configuration tests too.
if(TARGET test_bcast)
  add_test(NAME test_bcast_cma COMMAND test_bcast)
  set_tests_properties(test_bcast_cma PROPERTIES TIMEOUT 300
    ENVIRONMENT "CMOCKA_MESSAGE_OUTPUT=stdout;NUMACOLL_BCAST_CMA_MIN=64K")
endif()
