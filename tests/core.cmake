# test_core once more inside a private mount namespace with a 64 KiB /dev/shm: team
# creation must fail cleanly on every member (no SIGBUS, no leftovers). Needs root and
# unshare(1); skipped (exit 77) otherwise.
add_test(NAME test_core_small_devshm
         COMMAND sh -c "export NUMACOLL_SHM_BACKEND=posix; unshare -m true 2>/dev/null || exit 77; exec unshare -m --propagation private sh -c 'mount -t tmpfs -o size=64k tmpfs /dev/shm && NC_TEST_SMALL_SHM=1 exec \"$0\"' $<TARGET_FILE:test_core>")
set_tests_properties(test_core_small_devshm PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
