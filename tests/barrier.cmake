# Barrier tests (tests/test_barrier*.c are registered by tests/CMakeLists.txt):
# labels and time limits. Whole set: about 1 minute on 2 CPUs.
foreach(t test_barrier test_barrier_topo test_barrier_fault test_barrier_model)
  if(TEST ${t})
    set_tests_properties(${t} PROPERTIES LABELS "barrier" TIMEOUT 240)
  endif()
endforeach()
# The barrier suite once more with pure spinning disabled (every wait yields at once),
# the setting an oversubscribed team uses, on a subset: keeps that path tested at P <= 2.
if(TEST test_barrier)
  add_test(NAME test_barrier_yield COMMAND test_barrier dissemination sense-reversing-gr mcs)
  set_tests_properties(test_barrier_yield PROPERTIES LABELS "barrier" TIMEOUT 240
    ENVIRONMENT "CMOCKA_MESSAGE_OUTPUT=stdout;NUMACOLL_WAIT_SPIN=0;NC_TEST_BARRIER_ITERS=2000")
endif()
# The combining tree with a fan-in other than the default, and 64-byte padding.
if(TEST test_barrier)
  add_test(NAME test_barrier_tree_k3 COMMAND test_barrier combining-tree mcs)
  set_tests_properties(test_barrier_tree_k3 PROPERTIES LABELS "barrier" TIMEOUT 240
    ENVIRONMENT "CMOCKA_MESSAGE_OUTPUT=stdout;NUMACOLL_BARRIER_TREE_K=3;NUMACOLL_CACHELINE=64;NC_TEST_BARRIER_ITERS=2000")
endif()
# The kill -9 test once more with POSIX named segments (the default memfd has no name at
# all): no file may be left in /dev/shm.
if(TEST test_barrier_fault)
  add_test(NAME test_barrier_fault_posix COMMAND test_barrier_fault)
  set_tests_properties(test_barrier_fault_posix PROPERTIES LABELS "barrier" TIMEOUT 240
    ENVIRONMENT "CMOCKA_MESSAGE_OUTPUT=stdout;NUMACOLL_SHM_BACKEND=posix;NC_TEST_SKIP=*hung*")
endif()
