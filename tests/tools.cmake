# The tools' command-line interfaces (tests/tools_cli.sh): --help, --version, units, names.
add_test(NAME tools_cli
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tools_cli.sh ${CMAKE_BINARY_DIR}/bin ${PROJECT_VERSION}
                 ${CMAKE_BINARY_DIR}/lib)
set_tests_properties(tools_cli PROPERTIES TIMEOUT 300 PASS_REGULAR_EXPRESSION "tools_cli: PASS"
                     FAIL_REGULAR_EXPRESSION "FAIL:")

# numacoll-bench --mpi's table names the unit of every time column (a run under each MPI)
foreach(f ${NC_MPI_FLAVORS})
  add_test(NAME tools_bench_mpi_header_${f}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mpi/run_mpi.sh ${CMAKE_BINARY_DIR}/bin ${f} 2
                   --expect "coll +algorithm +procs +bytes +median_us +min_us +max_us +slowest_med_us +iters +mpi"
                   -- ${CMAKE_BINARY_DIR}/bin/numacoll-bench-mpi-${f} barrier --iters 50 --reps 1
                   --variants native,default)
  set_tests_properties(tools_bench_mpi_header_${f} PROPERTIES TIMEOUT 120 LABELS "mpi;mpi-${f}"
                       RUN_SERIAL TRUE)
endforeach()

# numacoll-plot draws every plot (headline, variants, the papers' figures) from a small
# fixture of CSVs and summary.md opens with the headline table (tests/report_plots.sh)
add_test(NAME report_plots
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/report_plots.sh ${CMAKE_BINARY_DIR}/bin
                 ${CMAKE_CURRENT_SOURCE_DIR}/report)
set_tests_properties(report_plots PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77
                     PASS_REGULAR_EXPRESSION "report_plots: PASS" FAIL_REGULAR_EXPRESSION "FAIL:")
