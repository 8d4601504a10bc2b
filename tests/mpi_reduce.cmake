# MPI tests of MPI_Allreduce / MPI_Reduce through numacoll (tests/mpi/mpi_reduce_test.c),
# for every MPI libnumacoll_mpi was built for; nc_mpi_program, nc_mpi_test and NC_MPI_TDIR
# come from mpi.cmake.
if(NOT NC_MPI_FLAVORS OR NUMACOLL_MPI STREQUAL "off")
  return()
endif()

foreach(f ${NC_MPI_FLAVORS})
  set(t mpi_reduce_test_${f})
  nc_mpi_program(${t} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/mpi_reduce_test.c ${f})
  target_link_libraries(${t} PRIVATE m)
  set(P ${NC_MPI_TDIR}/${t})
  # every type x op, sizes 0 .. 1 MiB (3 MiB at np = 2), all entry points, in place and
  # not; oversubscribed launches draw fewer sizes (MPICH's busy-polling fewest). One
  # process: the MPI library's own
  if(f STREQUAL "mpich") # np = 3: pseudo-nodes of 2 and 1 (the latter without a team)
    set(level_over tiny)
    set(fake_np 3)
  else()
    set(level_over small)
    set(fake_np 4)
  endif()
  foreach(np 1 2 3 5 8)
    if(np EQUAL 1)
      set(how "types, [0-9]+ calls checked, 0 of them numacoll's .the MPI library's")
    else()
      set(how "types, ([0-9]+) calls checked, \\1 of them numacoll's .flat")
    endif()
    if(np EQUAL 2)
      set(level full)
    elseif(np EQUAL 8)
      set(level tiny)
    elseif(np EQUAL 5)
      set(level ${level_over})
    else()
      set(level small)
    endif()
    nc_mpi_test(mpi_${f}_reduce_np${np} ${f} ${np} --timeout 60 --expect "matrix: [0-9]+ ${how}"
                --expect "matrix: PASS" -- ${P} matrix ${level})
  endforeach()
  # hierarchical (pseudo-nodes): floating point compared across ranks; pairs that the MPI
  # library's own reduction (the leaders' step) gets wrong are listed, not failed
  nc_mpi_test(mpi_${f}_reduce_fake2 ${f} ${fake_np} --timeout 60 --env NUMACOLL_FAKE_NODES=2
              --expect "types, ([0-9]+) calls checked, \\1 of them numacoll's .hierarchical"
              --expect "matrix: PASS" -- ${P} matrix ${level_over})
  # a user op and a vector type go to the MPI library (said once per process with
  # NUMACOLL_VERBOSE=1); members with different counts get MPI_ERR_ARG naming the rank
  nc_mpi_test(mpi_${f}_reduce_edges ${f} 3 --timeout 60 --env NUMACOLL_VERBOSE=1
              --count "^numacoll-mpi: MPI_(Allreduce|Reduce): a user-defined op, .*once\\)$" 3
              --expect "rank 2 passed other arguments than rank [01]"
              --expect "native: a user op .* not numacoll's" --expect "mismatch: every member"
              --expect "edges: PASS" -- ${P} edges)
  # a member killed before / inside MPI_Allreduce: the others fail with numacoll's error
  # naming it (Open MPI; MPICH's launcher ends them itself), no hang, nothing in /dev/shm
  add_test(NAME mpi_${f}_reduce_kill
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mpi/reduce_kill.sh ${CMAKE_BINARY_DIR}/bin ${f} ${P})
  set_tests_properties(mpi_${f}_reduce_kill PROPERTIES TIMEOUT 180 LABELS "mpi;mpi-${f}"
                       RUN_SERIAL TRUE PASS_REGULAR_EXPRESSION "reduce_kill: PASS"
                       SKIP_RETURN_CODE 77)
endforeach()

# MPI_Reduce_scatter(_block), MPI_Scan, MPI_Exscan (and _c) through numacoll
# (tests/mpi/mpi_scatter_scan_test.c): np 3 flat, every call numacoll's and counted in the
# stats line; pseudo-nodes (2 and 1): every call numacoll's too (hierarchical: node teams
# and the leaders' MPI step), checked within a few epsilons (the order groups by node)
foreach(f ${NC_MPI_FLAVORS})
  set(t mpi_scatter_scan_test_${f})
  nc_mpi_program(${t} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/mpi_scatter_scan_test.c ${f})
  target_link_libraries(${t} PRIVATE m)
  nc_mpi_test(mpi_${f}_scatter_scan_np3 ${f} 3 --timeout 60 --env NUMACOLL_MPI_STATS=1
              --expect "scatter_scan: ([0-9]+) calls checked, \\1 of them numacoll's .flat"
              --expect "MPI_Reduce_scatter_block [1-9][0-9]* \\(numacoll [1-9][0-9]*\\), MPI_Reduce_scatter [1-9][0-9]* \\(numacoll [1-9][0-9]*\\), MPI_Scan [1-9][0-9]* \\(numacoll [1-9][0-9]*\\), MPI_Exscan [1-9][0-9]* \\(numacoll [1-9][0-9]*\\)"
              --expect "scatter_scan: PASS" -- ${NC_MPI_TDIR}/${t})
  # ranks that pass other counts: MPI_ERR_ARG on every rank, naming rank 2; the next works
  nc_mpi_test(mpi_${f}_scatter_scan_mismatch ${f} 3 --timeout 60
              --count "^numacoll-mpi: MPI_(Scan|Reduce_scatter): rank 2 passed other arguments than rank [01] " 4
              --expect "mismatch: PASS" -- ${NC_MPI_TDIR}/${t} mismatch)
  # the padding of MPI_DOUBLE_INT / MPI_SHORT_INT in recvbuf stays untouched, flat (np 3:
  # small and large paths) and on pseudo-nodes, in every reduction
  nc_mpi_test(mpi_${f}_reduce_padding ${f} 3 --timeout 60 --env NUMACOLL_MPI_STATS=1
              --expect "MPI_Allreduce [1-9][0-9]* \\(numacoll [1-9]"
              --expect "padding: [0-9]+ calls, PASS" -- ${NC_MPI_TDIR}/${t} padding)
  nc_mpi_test(mpi_${f}_reduce_padding_fake2 ${f} 3 --timeout 60 --env NUMACOLL_FAKE_NODES=2
              --expect "padding: [0-9]+ calls, PASS" -- ${NC_MPI_TDIR}/${t} padding)
  nc_mpi_test(mpi_${f}_scatter_scan_fake2 ${f} 3 --timeout 60 --env NUMACOLL_FAKE_NODES=2
              --env NUMACOLL_MPI_STATS=1
              --expect "scatter_scan: ([0-9]+) calls checked, \\1 of them numacoll's .hierarchical"
              --expect "MPI_Reduce_scatter_block [1-9][0-9]* \\(numacoll [1-9][0-9]*\\), MPI_Reduce_scatter [1-9][0-9]* \\(numacoll [1-9][0-9]*\\), MPI_Scan [1-9][0-9]* \\(numacoll [1-9][0-9]*\\), MPI_Exscan [1-9][0-9]* \\(numacoll [1-9][0-9]*\\)"
              --expect "scatter_scan: PASS" -- ${NC_MPI_TDIR}/${t})
endforeach()
