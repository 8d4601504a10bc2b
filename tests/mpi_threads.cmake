# MPI tests of the team identity and the thread contract (tests/mpi/mpi_thread_test.c), for
# every MPI libnumacoll_mpi was built for; nc_mpi_program, nc_mpi_test and NC_MPI_TDIR come
# from mpi.cmake.
if(NOT NC_MPI_FLAVORS OR NUMACOLL_MPI STREQUAL "off")
  return()
endif()

foreach(f ${NC_MPI_FLAVORS})
  set(t mpi_thread_test_${f})
  nc_mpi_program(${t} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/mpi_thread_test.c ${f})
  set(P ${NC_MPI_TDIR}/${t})
  if(f STREQUAL "mpich") # oversubscribed MPICH busy-polls: fewer iterations
    set(churn_np3 20)
  else()
    set(churn_np3 100)
  endif()
  # each case three launches: a mix of teams shows up as a hang, wrong bytes or an
  # MPI error in some launches only
  foreach(rep 1 2 3)
    nc_mpi_test(mpi_${f}_threadchurn_np2_${rep} ${f} 2 --timeout 90
                --expect "threadchurn: PASS" -- ${P} threadchurn 150)
    nc_mpi_test(mpi_${f}_threadchurn_np3_${rep} ${f} 3 --timeout 90
                --expect "threadchurn: PASS" -- ${P} threadchurn ${churn_np3})
    nc_mpi_test(mpi_${f}_freeorder_np2_${rep} ${f} 2 --timeout 60
                --expect "freeorder: PASS" -- ${P} freeorder 10)
    nc_mpi_test(mpi_${f}_freeorder_np3_${rep} ${f} 3 --timeout 60
                --expect "freeorder: PASS" -- ${P} freeorder 10)
  endforeach()
  foreach(level single funneled serialized multiple)
    nc_mpi_test(mpi_${f}_thread_level_${level} ${f} 2 --timeout 60 --env NUMACOLL_VERBOSE=1
                --expect "thread level MPI_THREAD_[A-Z]+: supported"
                --expect "level: PASS" -- ${P} level ${level})
  endforeach()
endforeach()
