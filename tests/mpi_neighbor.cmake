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
      set(stat "MPI_Neighbor_allgather [1-9][0-9]* \\(numacoll [1-9][0-9]*\\), MPI_Neighbor_allgatherv [1-9][0-9]* \\(numacoll [1-9][0-9]*\\), MPI_Neighbor_alltoall [1-9][0-9]* \\(numacoll [1-9][0-9]*\\), MPI_Neighbor_alltoallv [1-9][0-9]* \\(numacoll [1-9][0-9]*\\), MPI_Neighbor_alltoallw [1-9][0-9]* \\(numacoll [1-9][0-9]*\\), neighbor staged [1-9]")
    endif()
    nc_mpi_test(mpi_${f}_neighbor_np${np} ${f} ${np} --timeout 60 --env NUMACOLL_MPI_STATS=1
                --expect "neighbor: ${how}" --expect "neighbor: PASS" --expect "${stat}"
                -- ${P} 3000)
  endforeach()
  # hierarchical (pseudo-nodes) and NUMACOLL_MPI_GATHER=0: the MPI's own, right and counted
  nc_mpi_test(mpi_${f}_neighbor_fake2 ${f} 3 --timeout 60 --env NUMACOLL_FAKE_NODES=2
              --expect "neighbor: [1-9][0-9]* calls checked, 0 of them numacoll's .0 expected."
              --expect "neighbor: PASS" -- ${P} 100)
  nc_mpi_test(mpi_${f}_neighbor_gather_off ${f} 3 --timeout 60 --env NUMACOLL_MPI_GATHER=0
              --env NUMACOLL_MPI_STATS=1
              --expect "MPI_Neighbor_alltoall [1-9][0-9]* \\(numacoll 0\\)"
              --expect "neighbor: PASS" -- ${P} 100)
endforeach()
