# MPI tests of MPI_Alltoall, MPI_Alltoallv and MPI_Alltoallw (and _c) through numacoll
# (tests/mpi/mpi_alltoall_test.c), for every MPI libnumacoll_mpi was built for;
# nc_mpi_program, nc_mpi_test and NC_MPI_TDIR come from mpi.cmake.
if(NOT NC_MPI_FLAVORS OR NUMACOLL_MPI STREQUAL "off")
  return()
endif()

foreach(f ${NC_MPI_FLAVORS})
  set(t mpi_alltoall_test_${f})
  nc_mpi_program(${t} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/mpi_alltoall_test.c ${f})
  set(P ${NC_MPI_TDIR}/${t})
  # np 1: the MPI library's own (a communicator of one); np 2 up to 1 MiB a pair, np 3 up
  # to 256 KiB, np 5 (oversubscribed) up to 64 KiB (alltoallw up to 256 KiB); every call
  # numacoll's and counted
  foreach(c "1 65536" "2 1048576" "3 262147" "5 65536")
    separate_arguments(c)
    list(GET c 0 np)
    list(GET c 1 max)
    if(np EQUAL 1)
      set(how "[0-9]+ calls checked, 0 of them numacoll's")
      set(whow "[1-9][0-9]* calls checked, 0 of them numacoll's")
      set(wstat "[1-9][0-9]* \\(numacoll 0\\)")
    else()
      set(how "([0-9]+) calls checked, \\1 of them numacoll's .mode 1")
      set(whow "([1-9][0-9]*) calls checked, \\1 of them numacoll's")
      set(wstat "[1-9][0-9]* \\(numacoll [1-9][0-9]*\\)")
    endif()
    nc_mpi_test(mpi_${f}_alltoall_np${np} ${f} ${np} --timeout 60 --env NUMACOLL_MPI_STATS=1
                --expect "matrix: ${how}" --expect "matrix: MPI_Alltoallw: ${whow}"
                --expect "matrix: PASS"
                --expect "MPI_Alltoall [1-9][0-9]* \\(numacoll [0-9]+\\), MPI_Alltoallv [1-9]"
                --expect "MPI_Alltoallw ${wstat}, alltoall staged"
                -- ${P} matrix ${max})
  endforeach()
  # hierarchical (pseudo-nodes): the MPI's own alltoall(v,w), right and counted
  nc_mpi_test(mpi_${f}_alltoall_fake2 ${f} 3 --timeout 60 --env NUMACOLL_FAKE_NODES=2
              --expect "matrix: [0-9]+ calls checked, 0 of them numacoll's .mode 2"
              --expect "matrix: MPI_Alltoallw: [1-9][0-9]* calls checked, 0 of them numacoll's"
              --expect "matrix: PASS" -- ${P} matrix 4099)
  # rank 1 expects one int more from rank 0 than it sends (alltoallv, then alltoallw): an
  # MPI error with numacoll's message on rank 1, no hang, the next calls right
  nc_mpi_test(mpi_${f}_alltoall_mismatch ${f} 3 --timeout 60
              --expect "numacoll-mpi: MPI_Alltoallv: .*rank 0 sends 12 bytes to rank 1, which expects 16"
              --expect "numacoll-mpi: MPI_Alltoallw: .*rank 0 sends 12 bytes to rank 1, which expects 16"
              --expect "mismatch: the bad call failed, the next 3 right"
              --expect "mismatch: the bad alltoallw failed, the next one right"
              --expect "mismatch: PASS" -- ${P} mismatch)
endforeach()

# numacoll-bench --mpi alltoall at np = 2, 1 B .. 2 KiB: every row at every size (12),
# every received block checked (a wrong byte fails the run), `default` through numacoll
# (its counters on every rank)
foreach(f ${NC_MPI_FLAVORS})
  if(NOT TARGET numacoll-bench-mpi-${f})
    continue()
  endif()
  set(B ${CMAKE_BINARY_DIR}/bin/numacoll-bench-mpi-${f})
  set(rows --count "^alltoall +native +2 " 12 --count "^alltoall +default +2 " 12
           --count "^alltoall +limit:xcore +2 " 12)
  if(f STREQUAL "openmpi")
    list(APPEND rows --count "^alltoall +native-sm +2 " 12)
  endif()
  nc_mpi_test(mpi_${f}_bench_alltoall ${f} 2 ${rows} --env NUMACOLL_MPI_STATS=1
              --count "MPI_Alltoall [1-9][0-9]* .numacoll [1-9][0-9]*" 2
              -- ${B} alltoall --reps 1 --iters 20 --target-ms 1 --max-bytes 2K)
endforeach()

# the last rank killed before or inside a loop of alltoalls (tests/mpi/reduce_kill.sh):
# the survivors return an error naming it, no hang, nothing left in /dev/shm
foreach(f ${NC_MPI_FLAVORS})
  add_test(NAME mpi_${f}_alltoall_kill
           COMMAND ${CMAKE_COMMAND} -E env KILL_COLL=alltoall
                   ${CMAKE_CURRENT_SOURCE_DIR}/mpi/reduce_kill.sh ${CMAKE_BINARY_DIR}/bin ${f}
                   ${NC_MPI_TDIR}/mpi_alltoall_test_${f})
  set_tests_properties(mpi_${f}_alltoall_kill PROPERTIES TIMEOUT 180 LABELS "mpi;mpi-${f}"
                       RUN_SERIAL TRUE PASS_REGULAR_EXPRESSION "reduce_kill: PASS \\(alltoall\\)"
                       SKIP_RETURN_CODE 77)
endforeach()
