# test_core once more inside a private mount namespace with a 64 KiB /dev/shm: team
# creation must fail cleanly on every member (no SIGBUS, no leftovers). Needs root and
# unshare(1); skipped (exit 77) otherwise.
add_test(NAME test_core_small_devshm
         COMMAND sh -c "export NUMACOLL_SHM_BACKEND=posix; unshare -m true 2>/dev/null || exit 77; exec unshare -m --propagation private sh -c 'mount -t tmpfs -o size=64k tmpfs /dev/shm && NC_TEST_SMALL_SHM=1 exec \"$0\"' $<TARGET_FILE:test_core>")
set_tests_properties(test_core_small_devshm PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)

# test_core's huge-page test with the kernel's shmem THP policy set to "always" (the setting
# that puts one 2 MiB page across several processes' blocks): NUMACOLL_SHM_HUGEPAGES=off must
# keep every page small and "system" must show huge pages. Needs root and a writable
# /sys/kernel/mm/transparent_hugepage/shmem_enabled; the previous value is restored on exit.
add_test(NAME test_core_thp COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/thp_forced.sh $<TARGET_FILE:test_core>)
set_tests_properties(test_core_thp PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)

# numacoll-bench's fork harness with a member killed (SIGKILL) and the default
# NUMACOLL_TIMEOUT: the dead member stays a zombie while the harness waits for rank 0; the
# others must end within seconds naming it (library barrier, ping-pong, --logp probes).
add_test(NAME bench_dead_member
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/bench_dead_member.sh ${CMAKE_BINARY_DIR}/bin)
set_tests_properties(bench_dead_member PROPERTIES TIMEOUT 180
  PASS_REGULAR_EXPRESSION "bench_dead_member: PASS")
