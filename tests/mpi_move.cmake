# MPI tests of the gather family through numacoll (tests/mpi/mpi_move_test.c): MPI_Allgather,
# MPI_Allgatherv, MPI_Gather, MPI_Gatherv, MPI_Scatter, MPI_Scatterv (and _c), for every MPI
# libnumacoll_mpi was built for; nc_mpi_program, nc_mpi_test and NC_MPI_TDIR come from
# mpi.cmake.
if(NOT NC_MPI_FLAVORS OR NUMACOLL_MPI STREQUAL "off")
  return()
endif()

foreach(f ${NC_MPI_FLAVORS})
  set(t mpi_move_test_${f})
  nc_mpi_program(${t} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/mpi_move_test.c ${f})
  set(P ${NC_MPI_TDIR}/${t})
  # np 1: the MPI library's own (a communicator of one); np 2 up to 3 MiB blocks; np 3 and
  # 5 (oversubscribed) up to 256 KiB, every root; np 8 (Open MPI) up to 64 KiB
  set(cases "1 tiny" "2 full" "3 small" "5 tiny")
  if(NOT f STREQUAL "mpich")
    list(APPEND cases "8 tiny")
  endif()
  foreach(c ${cases})
    separate_arguments(c)
    list(GET c 0 np)
    list(GET c 1 level)
    if(np EQUAL 1)
      set(how "[0-9]+ calls checked, 0 of them numacoll's .the MPI library's")
    else()
      set(how "([0-9]+) calls checked, \\1 of them numacoll's .flat")
    endif()
    nc_mpi_test(mpi_${f}_move_np${np} ${f} ${np} --timeout 60 --expect "matrix: ${how}"
                --expect "matrix: PASS" -- ${P} matrix ${level})
  endforeach()
  # hierarchical (pseudo-nodes): node steps numacoll's, gatherv and scatterv native
  nc_mpi_test(mpi_${f}_move_fake2 ${f} 5 --timeout 60 --env NUMACOLL_FAKE_NODES=2
              --expect "matrix: [0-9]+ calls checked, [1-9][0-9]* of them numacoll's .hierarchical"
              --expect "matrix: PASS" -- ${P} matrix tiny)
  # a member's count off by one: an MPI error naming it, no hang, the next calls right; the
  # same between members (a gatherv's root expects another size than a sender sends)
  nc_mpi_test(mpi_${f}_move_mismatch ${f} 3 --timeout 60
              --expect "rank 2's send block is 36 bytes, but 32 are expected of it"
              --expect "mismatch: the bad call failed, the next 3 right"
              --expect "mismatch: the gatherv between members failed, the next one right"
              --expect "mismatch: PASS" -- ${P} mismatch)
  # the last rank's first MPI_Allgather, MPI_Alltoall, MPI_Alltoallw and MPI_Reduce_scatter
  # on a fresh communicator has a negative count (the MPI's MPI_ERR_COUNT), its MPI_Reduce and
  # MPI_Bcast a root out of range (MPI_ERR_ROOT): it joins the set-up first,
  # so the others fail in numacoll's call by NUMACOLL_TIMEOUT instead of hanging in a set-up
  # collective it never joins
  nc_mpi_test(mpi_${f}_move_firstbad ${f} 3 --timeout 40 --env NUMACOLL_TIMEOUT=1
              --expect "firstbad: MPI_Allgather: every member returned"
              --expect "firstbad: MPI_Alltoall: every member returned"
              --expect "firstbad: MPI_Reduce_scatter: every member returned"
              --expect "firstbad: MPI_Reduce: every member returned"
              --expect "firstbad: MPI_Bcast: every member returned"
              --expect "firstbad: MPI_Reduce .root -5.: every member returned"
              --expect "firstbad: MPI_Alltoallw: every member returned"
              --expect "member.s. that did not arrive: 2"
              --expect "firstbad: PASS" -- ${P} firstbad)
  # hierarchical (np 5, pseudo-nodes {0,1,2} {3,4}): the last rank's erroneous argument at
  # the first call of each collective with a hierarchical path (bcast, reduce, allgather(v),
  # gather, scatter, reduce_scatter; Open MPI also allreduce and scan): it joins its node team's set-ups, the others return
  # (its node's members by NUMACOLL_TIMEOUT naming it by node team member and communicator
  # rank, the other leaders by the timed MPI step between the leaders); Open MPI also after
  # a correct call (MPICH: 10 s a run)
  # With NUMACOLL_BCAST_CHECK=1 (MPICH's first, Open MPI's later run) the bad rank joins
  # the broadcast's check, which fails on every rank naming it.
  if(f STREQUAL "mpich")
    set(runs "first 1")
  else()
    set(runs "first 0" "later 1")
  endif()
  foreach(run ${runs})
    separate_arguments(run)
    list(GET run 0 m)
    list(GET run 1 check)
    set(expect_check)
    if(NOT f STREQUAL "mpich") # MPICH 4.0's own crash on these with a negative count
      list(APPEND expect_check --expect "hierbad: MPI_Allreduce .${m} call.: every member"
           --expect "hierbad: MPI_Scan .${m} call.: every member returned")
    endif()
    if(check)
      list(APPEND expect_check --expect "members passed different roots: rank 4 passed root 5")
    endif()
    nc_mpi_test(mpi_${f}_move_hierbad_${m} ${f} 5 --timeout 60 --env NUMACOLL_TIMEOUT=1
                --env NUMACOLL_FAKE_NODES=2 --env NUMACOLL_BCAST_CHECK=${check} ${expect_check}
                --expect "hierbad: MPI_Reduce .${m} call.: every member returned"
                --expect "hierbad: MPI_Allgatherv .${m} call.: every member returned"
                --expect "hierbad: MPI_Reduce_scatter .${m} call.: every member returned"
                --expect "did not arrive: 1.* members: 0 = rank 3, 1 = rank 4"
                --expect "between the node leaders .hierarchical mode, rank 0 of 5, node 0 of 2. timed out: .* waiting for the other node's leader, rank 3, which failed"
                --expect "hierbad: PASS" -- ${P} hierbad ${m})
  endforeach()
endforeach()

# numacoll-bench --mpi allgather|gather|scatterv at np = 2, 1 B .. 2 KiB: every row at every
# size (12), every received block checked (a wrong byte fails the run), `default` through
# numacoll (its counters on every rank)
foreach(f ${NC_MPI_FLAVORS})
  if(NOT TARGET numacoll-bench-mpi-${f})
    continue()
  endif()
  set(B ${CMAKE_BINARY_DIR}/bin/numacoll-bench-mpi-${f})
  set(rows --count "^allgather +native +2 " 12 --count "^allgather +default +2 " 12
           --count "^allgather +limit:xcore +2 " 12)
  if(f STREQUAL "openmpi")
    list(APPEND rows --count "^allgather +native-sm +2 " 12)
  endif()
  nc_mpi_test(mpi_${f}_bench_allgather ${f} 2 ${rows} --env NUMACOLL_MPI_STATS=1
              --count "MPI_Allgather [1-9][0-9]* .numacoll [1-9][0-9]*" 2
              -- ${B} allgather --reps 1 --iters 20 --target-ms 1 --max-bytes 2K)
  nc_mpi_test(mpi_${f}_bench_scatterv ${f} 2 --count "^scatterv +default +2 " 12
              --count "^scatterv +limit:xcore +2 " 12 --env NUMACOLL_MPI_STATS=1
              --count "MPI_Scatterv [1-9][0-9]* .numacoll [1-9][0-9]*" 2
              -- ${B} scatterv --root 1 --reps 1 --iters 20 --target-ms 1 --max-bytes 2K
              --variants native,default,limit:xcore)
endforeach()

# the last rank killed before or inside a loop of allgathers (copy: every member reads the
# dead one's slots), gathers to root 0 (the root waits for a dead owner) or scatters from
# root 0 with NUMACOLL_MOVE=cma (the root waits for its dead reader to be done with its
# buffer) (tests/mpi/reduce_kill.sh): the survivors return an error naming it, no hang,
# nothing left in /dev/shm
foreach(f ${NC_MPI_FLAVORS})
  foreach(coll allgather gather scatter)
    add_test(NAME mpi_${f}_move_kill_${coll}
             COMMAND ${CMAKE_COMMAND} -E env KILL_COLL=${coll}
                     ${CMAKE_CURRENT_SOURCE_DIR}/mpi/reduce_kill.sh ${CMAKE_BINARY_DIR}/bin ${f}
                     ${NC_MPI_TDIR}/mpi_move_test_${f})
    set_tests_properties(mpi_${f}_move_kill_${coll} PROPERTIES TIMEOUT 180
                         LABELS "mpi;mpi-${f}" RUN_SERIAL TRUE SKIP_RETURN_CODE 77
                         PASS_REGULAR_EXPRESSION "reduce_kill: PASS \\(${coll}\\)")
  endforeach()
endforeach()

# a member without memory for the stage of a non-contiguous datatype (RLIMIT_AS for one
# call) in allgather(v), gather (the root, then a sender), scatter (the root), alltoall(v,w):
# it fails, its readers fail naming it, none waits for it (NUMACOLL_TIMEOUT would end such a
# wait with another error), and the next call is right and numacoll's
# (tests/mpi/mpi_nomem_test.c). The same
# for the collectives with a hierarchical path on pseudo-nodes (np 2 and 3: the victim, the
# last rank, leads a node of its own; np 4: it does not, and the root's hop runs). Not under
# the sanitizers: ASan's allocator aborts the process when the limited address space runs
# out instead of letting malloc return NULL
foreach(f ${NC_MPI_FLAVORS})
  if(NUMACOLL_SANITIZE)
    break()
  endif()
  nc_mpi_program(mpi_nomem_test_${f} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/mpi_nomem_test.c ${f})
  foreach(np 2 3)
    nc_mpi_test(mpi_${f}_move_nomem_np${np} ${f} ${np} --timeout 90 --env NUMACOLL_TIMEOUT=10
                --expect "nomem: MPI_Allgather: rank [0-9] failed, and its readers naming it"
                --expect "nomem: MPI_Gather: rank [0-9] failed alone"
                --expect "nomem: MPI_Gather to rank 0: rank [0-9] failed, and the root naming"
                --expect "nomem: MPI_Alltoallw: rank [0-9] failed"
                --expect "nomem: PASS" -- ${NC_MPI_TDIR}/mpi_nomem_test_${f})
  endforeach()
  # a pair type's padding without memory to set it aside on one rank: said, and the
  # result right everywhere
  nc_mpi_test(mpi_${f}_reduce_pad_nomem ${f} 2 --timeout 60 --env NUMACOLL_VERBOSE=1
              --env NUMACOLL_MPI_STATS=1
              --expect "no memory .4194304 bytes. to keep the padding bytes of 1048576 pair-type"
              --expect "right everywhere without memory for the padding on rank 1"
              --expect "nomem: PASS" -- ${NC_MPI_TDIR}/mpi_nomem_test_${f} pad)
  foreach(np 2 3 4)
    math(EXPR np_last "${np} - 1")
    if(np LESS 4) # the victim leads a pseudo-node: it needs a reduce's scratch
      set(reduce_expect " failed, and the root naming it")
    else()
      set(reduce_expect ", no node's leader, needed nothing")
    endif()
    nc_mpi_test(mpi_${f}_move_nomem_fake2_np${np} ${f} ${np} --timeout 60
                --env NUMACOLL_TIMEOUT=10 --env NUMACOLL_FAKE_NODES=2
                --expect "nomem: MPI_Allgatherv: rank [0-9] failed, and its readers naming it"
                --expect "nomem: MPI_Gather: rank [0-9] failed alone"
                --expect "nomem: MPI_Gather to rank 0: rank [0-9] failed, and the root naming"
                --expect "nomem: MPI_Scatter: rank [0-9] failed, and its readers naming it"
                --expect "nomem: MPI_Reduce_scatter_block: rank [0-9] failed, and its readers"
                --expect "nomem: MPI_Scan: rank [0-9] failed, and its readers naming it"
                --expect "nomem: MPI_Reduce to rank 0: rank [0-9]${reduce_expect}"
                --expect "MPI_Allgather: rank ${np_last} had no memory for its buffers"
                --expect "nomem: PASS" -- ${NC_MPI_TDIR}/mpi_nomem_test_${f} hier)
  endforeach()
endforeach()
