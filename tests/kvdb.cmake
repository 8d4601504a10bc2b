# Key-value store (paper 4). test_kvdb_table / test_kvdb_locks are registered automatically.

# The benchmark's correctness mode for every lock scheme: 3 readers (oversubscribed on
# small machines) check under the read lock that two fields changed under the write lock
# always agree; a torn read makes the tool exit 1.
add_test(NAME kvbench_correctness_all_locks
         COMMAND $<TARGET_FILE:numacoll-kvbench> --mode correctness --readers 3 --fixed
                 --lock all --reps 2 --duration 0.05)
set_tests_properties(kvbench_correctness_all_locks PROPERTIES TIMEOUT 120
  PASS_REGULAR_EXPRESSION "reader-flags +correctness +3 .*ok: 0 torn reads"
  FAIL_REGULAR_EXPRESSION "FAIL")

# Every mode runs and writes the CSV header the plots expect.
add_test(NAME kvbench_modes_csv
         COMMAND sh -c "\"$0\" --mode all --readers 2 --lock n-mutex-signal --reps 1 --duration 0.02 --csv kvbench_smoke.csv >/dev/null && head -1 kvbench_smoke.csv && wc -l < kvbench_smoke.csv"
                 $<TARGET_FILE:numacoll-kvbench>)
set_tests_properties(kvbench_modes_csv PROPERTIES TIMEOUT 120
  PASS_REGULAR_EXPRESSION
  "^lock,mode,readers,ops_per_sec_median,ops_per_sec_min,ops_per_sec_max,writer_acquire_us_median\n9\n$")

# The Get profiler prints the seven segments (clock_gettime: works everywhere, VMs too).
add_test(NAME kvbench_profile_get
         COMMAND $<TARGET_FILE:numacoll-kvbench> --profile-get --readers 2 --fixed
                 --lock seqlock --iters 5 --profile-clock clock)
set_tests_properties(kvbench_profile_get PROPERTIES TIMEOUT 60
  PASS_REGULAR_EXPRESSION "P7-P1 +P2-P1 +P3-P2 +P4-P3 +P5-P4 +P6-P5 +P7-P6\nmean .*\nmedian ")

# Bad arguments: a message naming the allowed values, exit status 2.
add_test(NAME kvbench_bad_args
         COMMAND sh -c "\"$0\" --mode read-mostly --readers 2 2>&1; test $? -eq 2 && \"$0\" --mode read-only --readers 2 --lock 3n-mutex 2>&1; test $? -eq 2 && echo EXIT2"
                 $<TARGET_FILE:numacoll-kvbench>)
set_tests_properties(kvbench_bad_args PROPERTIES
  PASS_REGULAR_EXPRESSION "allowed: read-only, write-only, concurrent, correctness, all\n.*allowed: all, rwlock, 1n-mutex, 2n-mutex, n-mutex-signal, seqlock, reader-flags\nEXIT2")
