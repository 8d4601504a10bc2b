# MPI tests of the neighbourhood collectives (MPI_Neighbor_allgather(v),
# MPI_Neighbor_alltoall(v,w) and their _c forms) through numacoll
# (tests/mpi/mpi_neighbor_test.c), for every MPI libnumacoll_mpi was built for;
# nc_mpi_program, nc_mpi_test and NC_MPI_TDIR come from mpi.cmake.
if(NOT NC_MPI_FLAVORS OR NUMACOLL_MPI STREQUAL "off")
  return()
endif()

foreach(f ${NC_MPI_FLAVORS})
  set(t mpi_neighbor_test_${f})
  nc_mpi_program(${t} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/mpi_neighbor_test.c ${f})
  set(P ${NC_MPI_TDIR}/${t})
  # np 1: the MPI library's own (a communicator of one); np 2, 3, 5 (oversubscribed): the
  # topologies that name no rank twice numacoll's (blocks up to 3000 x 8 B), the others
  # (a periodic dimension of size 1 or 2, a multigraph, the dist graph at np 3) the MPI's;
  # every result checked against the topology, every call counted
  foreach(np 1 2 3 5)
    if(np EQUAL 1)
      set(how "([0-9]+) calls checked, 0 of them numacoll's .0 expected.")
      set(stat "MPI_Neighbor_allgather [1-9][0-9]* \\(numacoll 0\\)")
    else()
      set(how "([0-9]+) calls checked, ([1-9][0-9]*) of them numacoll's .\\2 expected.")
      set(n "[1-9][0-9]* \\(numacoll [1-9][0-9]*\\)")
      set(stat "MPI_Neighbor_allgather ${n}, MPI_Neighbor_allgatherv ${n}, MPI_Neighbor_alltoall ${n}, MPI_Neighbor_alltoallv ${n}, MPI_Neighbor_alltoallw ${n}, neighbor staged [1-9]")
    endif()
    nc_mpi_test(mpi_${f}_neighbor_np${np} ${f} ${np} --timeout 60 --env NUMACOLL_MPI_STATS=1
                --expect "neighbor: ${how}" --expect "neighbor: PASS" --expect "${stat}"
                -- ${P} 3000)
  endforeach()
  # hierarchical (pseudo-nodes) and NUMACOLL_MPI_GATHER=0: the MPI's own, right and counted
  # (3 of the 6 cases of size and types)
  nc_mpi_test(mpi_${f}_neighbor_fake2 ${f} 3 --timeout 60 --env NUMACOLL_FAKE_NODES=2
              --expect "neighbor: [1-9][0-9]* calls checked, 0 of them numacoll's .0 expected."
              --expect "neighbor: PASS" -- ${P} 100 3)
  nc_mpi_test(mpi_${f}_neighbor_gather_off ${f} 3 --timeout 60 --env NUMACOLL_MPI_GATHER=0
              --env NUMACOLL_MPI_STATS=1
              --expect "MPI_Neighbor_alltoall [1-9][0-9]* \\(numacoll 0\\)"
              --expect "neighbor: PASS" -- ${P} 100 3)
  # rank 1 expects one int more from rank 0 than it sends: an MPI error with numacoll's
  # message on rank 1, no hang, the next call right
  nc_mpi_test(mpi_${f}_neighbor_mismatch ${f} 3 --timeout 60
              --expect "numacoll-mpi: MPI_Neighbor_alltoallv: .*rank 0 sends 12 bytes to rank 1, which expects 16"
              --expect "mismatch: the bad call failed, the next one right"
              --expect "neighbor: PASS" -- ${P} mismatch)
  # the deferral (NUMACOLL_MPI_SETUP_AFTER=32 units, 1 a call of 1 KiB or less): the first
  # calls the MPI's, numacoll's from about the 32nd on
  nc_mpi_test(mpi_${f}_neighbor_lazy ${f} 3 --timeout 60 --env NUMACOLL_MPI_SETUP_AFTER=32
              --env NUMACOLL_MPI_SETUP_AFTER_OVERSUB=32
              --expect "lazy: numacoll's from call (2[0-9]|3[0-9]|4[0-9]) on, the MPI's before"
              --expect "neighbor: PASS" -- ${P} lazy)
endforeach()
