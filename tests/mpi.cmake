# MPI-level tests of libnumacoll_mpi, for every MPI it was built for (NC_MPI_FLAVORS, set
# by src/mpi/CMakeLists.txt). Programs are plain MPI programs (not linked with numacoll);
# tests/mpi/run_mpi.sh runs them through numacoll-run, i.e. with the preload.
if(NOT NC_MPI_FLAVORS OR NUMACOLL_MPI STREQUAL "off")
  return()
endif()

set(NC_MPI_TDIR ${CMAKE_BINARY_DIR}/tests/mpi)
set(NC_MPI_RUN ${CMAKE_CURRENT_SOURCE_DIR}/mpi/run_mpi.sh ${CMAKE_BINARY_DIR}/bin)
file(MAKE_DIRECTORY ${NC_MPI_TDIR})

function(nc_mpi_test name flavor np)
  add_test(NAME ${name} COMMAND ${NC_MPI_RUN} ${flavor} ${np} ${ARGN})
  set_tests_properties(${name} PROPERTIES TIMEOUT 240 LABELS "mpi;mpi-${flavor}"
                       RUN_SERIAL TRUE)
endfunction()

# A test program for MPI @p flavor: plain MPI (not linked with numacoll; numacoll_mpi.h
# only for the counters' type), built into NC_MPI_TDIR after the preload and numacoll-run,
# from @p source, any further sources after @p flavor, and mpi_test_util.c.
function(nc_mpi_program target source flavor)
  add_executable(${target} ${source} ${ARGN} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/mpi_test_util.c)
  target_include_directories(${target} PRIVATE ${NC_MPI_${flavor}_INCS}
                             ${PROJECT_SOURCE_DIR}/src/mpi)
  target_link_libraries(${target} PRIVATE ${NC_MPI_${flavor}_LIBS} ${CMAKE_DL_LIBS}
                        Threads::Threads)
  target_compile_options(${target} PRIVATE ${NC_WARN} -Wno-missing-prototypes)
  set_target_properties(${target} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${NC_MPI_TDIR})
  add_dependencies(${target} numacoll_mpi_${flavor} numacoll-info)
endfunction()

foreach(f ${NC_MPI_FLAVORS})
  set(t mpi_coll_test_${f})
  set(d ${CMAKE_CURRENT_SOURCE_DIR}/mpi)
  nc_mpi_program(${t} ${d}/mpi_coll_test.c ${f} ${d}/mpi_coll_bcast.c ${d}/mpi_coll_mismatch.c
                 ${d}/mpi_coll_lazy.c ${d}/mpi_coll_soak.c ${d}/mpi_coll_cost.c)
  set(P ${NC_MPI_TDIR}/${t})

  # slow launches: MPICH busy-polls, oversubscribed runs of it are kept short
  if(f STREQUAL "mpich")
    set(it_small 20)
  else()
    set(it_small 60)
  endif()

  # MPI_Barrier at np 1, 2, 3 (odd, oversubscribed) and 8 (a power of two, oversubscribed;
  # np 4 adds no case np 8 lacks). Every algorithm (NUMACOLL_BARRIER, list from
  # numacoll-info at test time) runs through the preload at np 2 and 3 under Open MPI and
  # at np 3 under MPICH, the automatic choice elsewhere: the algorithms are the core's, the
  # same under either MPI, test_barrier runs each at P = 1 to 16, and a launch costs
  # 0.7-3 s.
  nc_mpi_test(mpi_${f}_barrier_np1 ${f} 1 -- ${P} barrier 100)
  foreach(np 2 3 8)
    if(np GREATER 2)
      set(iters ${it_small})
    else()
      set(iters 100)
    endif()
    set(algs --algs)
    if(np EQUAL 8 OR (np EQUAL 2 AND f STREQUAL "mpich"))
      set(algs)
    endif()
    nc_mpi_test(mpi_${f}_barrier_np${np} ${f} ${np} ${algs} -- ${P} barrier ${iters})
  endforeach()
  nc_mpi_test(mpi_${f}_noop_detected ${f} 3 -- ${P} noop 30)
  # the team of a communicator of 2 (ranks 0 and 2) knows the job's 3 processes on the
  # node (the launcher's count), which makes it oversubscribed on a node of fewer CPUs
  nc_mpi_test(mpi_${f}_job_procs ${f} 3 --env NUMACOLL_VERBOSE=1
              --expect "team '[^']*': 2 processes on [0-9]+ CPU.s. .(oversubscribed: )?the job has 3 processes on this node's [0-9]+ CPUs"
              -- ${P} barrier 10)
  # ... the count srun gives (SLURM_STEP_TASKS_PER_NODE at SLURM_NODEID) when the
  # launcher's own variable is absent: 100000 processes on this node (2 + 2 + 100000 + 1
  # tasks on 4 nodes, this is node 2), more than any node's CPUs, make the team of 2
  # oversubscribed
  nc_mpi_test(mpi_${f}_job_procs_slurm ${f} 3 --env NUMACOLL_VERBOSE=1
              --expect "the job has 100000 processes on this node .SLURM_STEP_TASKS_PER_NODE."
              --expect "team '[^']*': 2 processes on [0-9]+ CPU.s. .oversubscribed: the job has 100000 processes on this node's [0-9]+ CPUs"
              -- ${P} slurmenv "2(x2),100000,1" 2)
  # ... a malformed list is said (NUMACOLL_VERBOSE=1) and ignored: the count is unknown
  nc_mpi_test(mpi_${f}_job_procs_slurm_malformed ${f} 3 --env NUMACOLL_VERBOSE=1
              --expect "SLURM_STEP_TASKS_PER_NODE=2.x2,100000 is not a list of task counts.*: ignored"
              --reject "the job has [0-9]+ processes"
              -- ${P} slurmenv "2(x2,100000" 2)
  # ... under mpirun / mpiexec inside a Slurm allocation the launcher's own variable wins
  # over the Slurm variables it inherited
  nc_mpi_test(mpi_${f}_job_procs_slurm_inherited ${f} 3 --env NUMACOLL_VERBOSE=1
              --env SLURM_STEP_TASKS_PER_NODE=100000 --env SLURM_NODEID=0
              --expect "the job has 3 processes on this node .(OMPI_COMM_WORLD_LOCAL_SIZE|MPI_LOCALNRANKS)."
              --reject "100000 processes"
              -- ${P} barrier 10)
  nc_mpi_test(mpi_${f}_churn ${f} 2 --expect "churn: 10000 x" -- ${P} churn 10000)
  nc_mpi_test(mpi_${f}_churn_np3 ${f} 3 --env NUMACOLL_MPI_TEAM_CACHE_QUEUE=0 -- ${P} churn 300)
  nc_mpi_test(mpi_${f}_errors ${f} 3 -- ${P} errors)
  # deferred set-up (NUMACOLL_MPI_SETUP_AFTER): the default threshold at np=2, a small one
  # oversubscribed and on the hierarchical path (pseudo-nodes)
  # (NUMACOLL_VERBOSE=1 says once that communicators start with the MPI's calls, and the
  # stats name those that stayed there: one of the lazy mode's communicators never makes
  # enough calls)
  nc_mpi_test(mpi_${f}_lazy ${f} 2 --env NUMACOLL_MPI_SETUP_AFTER=2048
              --env NUMACOLL_VERBOSE=1 --env NUMACOLL_MPI_STATS=1
              --expect "lazy: threshold 2048. barriers from call 2048, 256 KiB broadcasts from call 8. flat"
              --count "run their first calls through the MPI library until their calls add up to NUMACOLL_MPI_SETUP_AFTER .here 2048 units" 1
              --count "numacoll-mpi.${f} rank [01].: 1 of the 4 deferred communicators stayed with the MPI library" 2
              -- ${P} lazy)
  nc_mpi_test(mpi_${f}_lazy_np3 ${f} 3 --env NUMACOLL_MPI_SETUP_AFTER=100
              --env NUMACOLL_MPI_SETUP_AFTER_OVERSUB=100
              --expect "lazy: threshold 100.*. barriers from call 128, 256 KiB broadcasts from call 1. flat"
              -- ${P} lazy)
  # a node with more processes than CPUs: NUMACOLL_MPI_SETUP_AFTER_OVERSUB (32) applies
  nc_mpi_test(mpi_${f}_lazy_crowded ${f} 3 --env NUMACOLL_MPI_SETUP_AFTER=2048
              --env NUMACOLL_OVERSUBSCRIBED=yes
              --expect "lazy: threshold 32 .crowded node.. barriers from call 32, 256 KiB broadcasts from call 1. flat"
              -- ${P} lazy)
  # the last rank's NUMACOLL_MPI_SETUP_AFTER is 4: the members' largest applies on every rank
  # (deciding by its own, that rank would set a communicator up alone and the job hang)
  nc_mpi_test(mpi_${f}_lazy_env_mismatch ${f} 3 --timeout 60 --env NUMACOLL_MPI_SETUP_AFTER=100
              --env NUMACOLL_MPI_SETUP_AFTER_OVERSUB=100
              --expect "lazy: threshold 100.*. barriers from call 128, 256 KiB broadcasts from call 1. flat"
              -- ${P} lazyenv)
  # members that differ in NUMACOLL_MPI_BCAST (the last rank turns it off): native, no hang
  nc_mpi_test(mpi_${f}_bcast_env_mismatch ${f} 3 --timeout 60 --env NUMACOLL_MPI_SETUP_AFTER=4
              --env NUMACOLL_VERBOSE=1 --expect "members differ in NUMACOLL_MPI_BCAST\\)"
              --expect "bcastenv: 8 communicators, 152 calls, bytes right, native" -- ${P} bcastenv)
  # ... in a setting of the team itself (NUMACOLL_BARRIER: the last rank's dissemination):
  # team creation fails on every member, said without NUMACOLL_VERBOSE (before, a hang)
  nc_mpi_test(mpi_${f}_barrier_env_mismatch ${f} 3 --timeout 60 --env NUMACOLL_MPI_SETUP_AFTER=4
              --env NUMACOLL_BARRIER=combining-tree
              --expect "NUMACOLL_BARRIER differs between members 0 and 2 .member [0-9] has"
              --expect "barrierenv: 8 communicators, 152 calls, bytes right, native" -- ${P} barrierenv)
  # ... in NUMACOLL_DISABLE, or with an invalid setting on one rank: that rank still takes
  # part in the set-up agreement, the communicators stay native on all, no hang
  nc_mpi_test(mpi_${f}_disable_mismatch ${f} 3 --timeout 60 --env NUMACOLL_MPI_SETUP_AFTER=4
              --env NUMACOLL_VERBOSE=1 --expect "1 of 3 members run with NUMACOLL_DISABLE=1 or an invalid"
              --expect "disableenv: 8 communicators, 152 calls, bytes right, native" -- ${P} disableenv)
  # ... in NUMACOLL_MPI_REDUCE or NUMACOLL_MPI_GATHER (the first calls of some of the
  # communicators are reductions and data-movement calls)
  nc_mpi_test(mpi_${f}_reduce_env_mismatch ${f} 3 --timeout 60 --env NUMACOLL_MPI_SETUP_AFTER=0
              --env NUMACOLL_VERBOSE=1 --expect "members differ in NUMACOLL_MPI_REDUCE\\)"
              --expect "reduceenv: 8 communicators, 152 calls, bytes right, native" -- ${P} reduceenv)
  nc_mpi_test(mpi_${f}_gather_env_mismatch ${f} 3 --timeout 60 --env NUMACOLL_MPI_SETUP_AFTER=0
              --env NUMACOLL_VERBOSE=1 --expect "members differ in NUMACOLL_MPI_GATHER\\)"
              --expect "gatherenv: 8 communicators, 152 calls, bytes right, native" -- ${P} gatherenv)
  # ... in a data-movement setting (the last rank's NUMACOLL_MOVE_CMA_MIN): said without
  # NUMACOLL_VERBOSE, the calls native with the right bytes
  nc_mpi_test(mpi_${f}_move_env_mismatch ${f} 3 --timeout 60 --env NUMACOLL_MPI_SETUP_AFTER=0
              --expect "warning: .*NUMACOLL_MOVE_CMA_MIN=4K here differs from rank 0's setting"
              --expect "moveenv: 12 calls, bytes right, native" -- ${P} moveenv)
  nc_mpi_test(mpi_${f}_badenv_mismatch ${f} 3 --timeout 60 --env NUMACOLL_MPI_SETUP_AFTER=0
              --env NUMACOLL_VERBOSE=1 --expect "NUMACOLL_BCAST_TREE"
              --expect "1 of 3 members run with NUMACOLL_DISABLE=1 or an invalid"
              --expect "badenv: 8 communicators, 152 calls, bytes right, native" -- ${P} badenv)
  nc_mpi_test(mpi_${f}_lazy_fake2 ${f} 5 --env NUMACOLL_MPI_SETUP_AFTER=40
              --env NUMACOLL_MPI_SETUP_AFTER_OVERSUB=40
              --env NUMACOLL_FAKE_NODES=2 --expect "lazy: threshold 40.* barriers from call 64, .*hierarchical" -- ${P} lazy)
  # seeded random barriers and broadcasts (0 B - 4 MiB, type pairs), reductions,
  # reduce-scatters and scans, the gather family and alltoalls on six overlapping
  # communicators, one re-created now and then; the deferral ends mid-run; the seed is
  # printed (NC_SOAK_SEED reruns it)
  if(f STREQUAL "mpich") # oversubscribed MPICH busy-polls: fewer steps, fewer ranks
    set(soak_n 3000)
    set(soak_fake_np 4)
    set(soak_fake_n 1000)
  else()
    set(soak_n 5000)
    set(soak_fake_np 5)
    set(soak_fake_n 3000)
  endif()
  # every kind of reduce-scatter and scan among the steps (soak_scatter_scan.h)
  set(ss_kinds "MPI_Reduce_scatter_block [1-9][0-9]* .numacoll [0-9]+., MPI_Reduce_scatter [1-9][0-9]* .numacoll [0-9]+., MPI_Scan [1-9][0-9]* .numacoll [0-9]+., MPI_Exscan [1-9]")
  nc_mpi_test(mpi_${f}_soak ${f} 3 --env NUMACOLL_MPI_SETUP_AFTER=64
              --expect "soak: ${soak_n} steps" --expect "${ss_kinds}" -- ${P} soak ${soak_n})
  nc_mpi_test(mpi_${f}_soak_fake2 ${f} ${soak_fake_np} --env NUMACOLL_FAKE_NODES=2
              --expect "soak: ${soak_fake_n} steps" --expect "${ss_kinds}"
              -- ${P} soak ${soak_fake_n})
  if(NOT f STREQUAL "mpich")
    nc_mpi_test(mpi_${f}_soak_np8 ${f} 8 --env NUMACOLL_MPI_SETUP_AFTER=32
                --expect "soak: 2000 steps" -- ${P} soak 2000)
    nc_mpi_test(mpi_${f}_soak_check ${f} 4 --env NUMACOLL_BCAST_CHECK=1
                --expect "soak: 3000 steps" -- ${P} soak 3000)
  endif()
  # its barrier check must catch no-op barriers
  nc_mpi_test(mpi_${f}_soak_noop_detected ${f} 3 --env NC_SOAK_NOOP=1
              --expect "soak: no-op barriers: [1-9][0-9]* exits before a member had entered"
              -- ${P} soak 1000)
  # MPMD launches (two app contexts, ':' and an appfile/configfile): every rank preloaded
  add_test(NAME mpi_${f}_mpmd
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_mpmd.sh ${CMAKE_BINARY_DIR}/bin ${f} ${P})
  set_tests_properties(mpi_${f}_mpmd PROPERTIES TIMEOUT 240 LABELS "mpi;mpi-${f}" RUN_SERIAL TRUE
                       SKIP_RETURN_CODE 77)
  nc_mpi_test(mpi_${f}_threads ${f} 2 -- ${P} threads)
  nc_mpi_test(mpi_${f}_bcast_np2 ${f} 2 -- ${P} bcast 3)
  nc_mpi_test(mpi_${f}_bcast_np4 ${f} 4 -- ${P} bcast 1)
  nc_mpi_test(mpi_${f}_bcast_truncate ${f} 3 -- ${P} truncate)
  # NUMACOLL_BCAST_CHECK: a self-root and a size mismatch fail on every rank, nothing moves
  nc_mpi_test(mpi_${f}_bcast_check ${f} 3 --env NUMACOLL_BCAST_CHECK=1
              --expect "rank 2 passed root 2, 8 bytes, but rank 0 passed root 0"
              --expect "rank 1 passed root 0, 200000 bytes, but rank 0 passed root 0, 100000"
              -- ${P} check)
  # ... in hierarchical mode: one check over the whole communicator, so a member of a
  # non-root node with another root or size fails every rank too, not only its node
  nc_mpi_test(mpi_${f}_bcast_check_fake2 ${f} 4 --env NUMACOLL_BCAST_CHECK=1
              --env NUMACOLL_FAKE_NODES=2
              --expect "all 4 members of a hierarchical communicator.: members passed different roots: rank 3 passed root 3, but rank 0 passed root 0"
              --expect "different sizes: rank 3 passed 200000 bytes, but rank 0 passed 100000 bytes"
              --expect "different sizes: rank 1 passed 16 bytes, but rank 0 passed 8 bytes"
              -- ${P} check)
  # members that differ in NUMACOLL_BCAST_CHECK (it adds a collective per broadcast in
  # hierarchical mode): native on all, no hang
  nc_mpi_test(mpi_${f}_check_env_mismatch ${f} 3 --timeout 60 --env NUMACOLL_MPI_SETUP_AFTER=4
              --env NUMACOLL_FAKE_NODES=2 --env NUMACOLL_VERBOSE=1
              --expect "members differ in NUMACOLL_BCAST_CHECK\\)"
              --expect "checkenv: 8 communicators, 152 calls, bytes right, native" -- ${P} checkenv)
  # broadcasts of more than 2 GiB (about 5 GB of memory at np = 2; skipped without it)
  nc_mpi_test(mpi_${f}_bcast_big ${f} 2 --timeout 200 --env NUMACOLL_MPI_SETUP_AFTER=0
              --expect "bcastbig: PASS" -- ${P} bcastbig)
  set_tests_properties(mpi_${f}_bcast_big PROPERTIES SKIP_RETURN_CODE 77)
  if(f STREQUAL "openmpi") # the same through the leaders' broadcast (one rank per node)
    nc_mpi_test(mpi_${f}_bcast_big_fake2 ${f} 2 --timeout 200 --env NUMACOLL_MPI_SETUP_AFTER=0
                --env NUMACOLL_FAKE_NODES=2 --expect "bcastbig: PASS" -- ${P} bcastbig)
    set_tests_properties(mpi_${f}_bcast_big_fake2 PROPERTIES SKIP_RETURN_CODE 77)
  endif()
  # MPI_Bcast_c and MPI_Bcast mixed in the same broadcasts: MPI-4 MPIs (here MPICH 4);
  # from the first call (every call numacoll's) and with the deferral ending mid-test
  if(f STREQUAL "mpich")
    nc_mpi_test(mpi_${f}_bcastc ${f} 3 --timeout 60
                --expect "bcastc: 20 mixed broadcasts, 20 through numacoll" -- ${P} bcastc)
    # a sessions-only process (no MPI_Init: no MPI_COMM_WORLD / MPI_COMM_SELF)
    nc_mpi_test(mpi_${f}_sessions ${f} 3 --timeout 60 --env NUMACOLL_MPI_STATS=1
                --expect "sessions: 3 ranks, 2 barriers and 19 broadcasts numacoll's"
                --count "numacoll-mpi stats .mpich pid [0-9]+.: .* comms 1 set up / 1 freed" 3
                -- ${P} sessions)
    nc_mpi_test(mpi_${f}_bcastc_deferred ${f} 2 --timeout 60 --env NUMACOLL_MPI_SETUP_AFTER=300
                --expect "bcastc: PASS" -- ${P} bcastc)
  endif()
  # a rank out of file descriptors or address space (its soft limits lowered after
  # MPI_Init): team, queue and buffer set-ups fail on every member alike, the calls succeed
  # through the native collectives, one verbose line says why (no idle teams: each case
  # must set up its own)
  # (MPICH's UCX transport: shared memory through SysV and CMA, which attach without a file
  # descriptor; its default POSIX one opens the peer's segment through /proc at a large
  # message, and newer UCX (1.18, Debian 13) aborts when that finds no descriptor)
  set(exhaust_env)
  if(f STREQUAL "mpich")
    set(exhaust_env --env UCX_TLS=self,sysv,cma)
  endif()
  nc_mpi_test(mpi_${f}_exhaust ${f} 2 ${exhaust_env} --env NUMACOLL_VERBOSE=1 --env NUMACOLL_MPI_TEAM_CACHE=0
              --expect "using the native MPI collectives there"
              --expect "exhaust: [24] squeezed rounds passed" -- ${P} exhaust)
  nc_mpi_test(mpi_${f}_exhaust_np3 ${f} 3 ${exhaust_env} --env NUMACOLL_MPI_TEAM_CACHE=0
              --expect "exhaust: [24] squeezed rounds passed" -- ${P} exhaust)
  # a communicator used for small messages only costs little shared memory (its reduction
  # buffers get the rest of their pages at the first large reduction), and
  # NUMACOLL_SHM_MAX bounds what a process holds: past it, set-ups run natively
  nc_mpi_test(mpi_${f}_commcost ${f} 2 --expect "commcost: PASS" -- ${P} commcost 20 320)
  nc_mpi_test(mpi_${f}_shmmax ${f} 2 --env NUMACOLL_MPI_TEAM_CACHE=0 --env NUMACOLL_SHM_MAX=16M
              --env NUMACOLL_VERBOSE=1 --expect "past NUMACOLL_SHM_MAX"
              --expect "shmmax: numacoll ran" -- ${P} shmmax 12)
  # a broadcast queue that cannot get its memory (/dev/shm filled, in a private mount
  # namespace with its own small tmpfs; root only, skipped otherwise): the call and the
  # communicator's later ones go to the MPI's own broadcast, with the right data
  add_test(NAME mpi_${f}_bcast_nospace
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mpi/small_shm.sh 48m ${NC_MPI_RUN} ${f} 2
                   --env NUMACOLL_SHM_BACKEND=posix --env NUMACOLL_VERBOSE=1
                   --expect "could not get the memory of its queue"
                   --expect "nospace: [0-9]+ bytes were left free; the broadcasts fell back"
                   -- ${P} nospace)
  set_tests_properties(mpi_${f}_bcast_nospace PROPERTIES TIMEOUT 240 LABELS "mpi;mpi-${f}"
                       RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
  # the MPI benchmark's broadcast references: limit:inline carries the payload (every
  # receiver checks it; a wrong byte fails the run) at each size up to its 1 KiB blocks
  # and is left out above them (11 rows for 1 B .. 1 KiB, none at 2 KiB); limit:xcore's
  # receivers copy the root's message and check it too (np = 3: two receivers); the
  # variants demote:on / demote:off (the inline path's cache hint forced) and
  # prefetch:on / prefetch:off (its write prefetch forced) are measured and checked the same
  # way at every size
  if(TARGET numacoll-bench-mpi-${f})
    nc_mpi_test(mpi_${f}_bench_bcast_limits ${f} 2 --count "^bcast +limit:inline " 11
                --count "^bcast +limit:signal " 12 --reject "limit:inline +2 +2048 "
                --count "^bcast +limit:xcore " 12 --count "^bcast +demote:on " 12
                --count "^bcast +demote:off " 12 --count "^bcast +prefetch:on " 12
                --count "^bcast +prefetch:off " 12
                -- ${CMAKE_BINARY_DIR}/bin/numacoll-bench-mpi-${f} bcast --reps 2 --iters 50
                --target-ms 1 --max-bytes 2048
                --variants
                default,limit:signal,limit:inline,limit:xcore,demote:on,demote:off,prefetch:on,prefetch:off)
    nc_mpi_test(mpi_${f}_bench_bcast_xcore ${f} 3 --count "^bcast +limit:xcore +3 " 4
                -- ${CMAKE_BINARY_DIR}/bin/numacoll-bench-mpi-${f} bcast --reps 2 --iters 20
                --target-ms 1 --min-bytes 128K --max-bytes 1M --variants limit:xcore)
    # limit:pipe (spins: np = 2, the CPUs here) from one fragment to 16 of its 64 KiB; the
    # receiver checks the first and last byte of every call (a wrong byte fails the run)
    nc_mpi_test(mpi_${f}_bench_bcast_pipe ${f} 2 --count "^bcast +limit:pipe +2 " 11
                -- ${CMAKE_BINARY_DIR}/bin/numacoll-bench-mpi-${f} bcast --reps 2 --iters 20
                --target-ms 1 --min-bytes 1K --max-bytes 1M --variants limit:pipe)
    # --root-shift (IMB's -root_shift on): the root of call i is i mod np, its content is
    # written there and every other rank checks it; limit:inline's acks then come from
    # every rank (a missing one hangs the run), and at np = 3 three roots take turns on the
    # hot path
    nc_mpi_test(mpi_${f}_bench_bcast_root_shift ${f} 2 --count "^bcast +default +2 " 12
                --count "^bcast +limit:inline +2 " 11 --count "^bcast +limit:signal +2 " 12
                -- ${CMAKE_BINARY_DIR}/bin/numacoll-bench-mpi-${f} bcast --root-shift --reps 2
                --iters 50 --target-ms 1 --max-bytes 2048
                --variants native,default,limit:signal,limit:inline,limit:memcpy)
    nc_mpi_test(mpi_${f}_bench_bcast_root_shift3 ${f} 3 --count "^bcast +default +3 " 10
                -- ${CMAKE_BINARY_DIR}/bin/numacoll-bench-mpi-${f} bcast --root-shift --reps 2
                --iters 30 --target-ms 1 --min-bytes 64 --max-bytes 32K --variants native,default)
    # (the message of one rank at least: Open MPI 5's launcher ends the other rank as soon
    # as one exits with an error, sometimes before it has printed)
    nc_mpi_test(mpi_${f}_bench_root_shift_barrier ${f} 2 --fail
                --expect "--root-shift is an option of bcast"
                -- ${CMAKE_BINARY_DIR}/bin/numacoll-bench-mpi-${f} barrier --root-shift)
    # numacoll-bench --mpi allreduce|reduce at np = 2, 8 B .. 2 KiB: every row at every size
    # (limit:inline up to its 1 KiB blocks: 8 sizes), every member that gets the result
    # checks it (a wrong sum fails the run), and `default` went through numacoll (its
    # counters); a reduce to root 1. Then the errors after MPI_Init: a root beyond the
    # communicator (Open MPI), an unknown variant (MPICH), each named with what is allowed
    set(rb_rows --count "^allreduce +native +2 " 9 --count "^allreduce +default +2 " 9
                --count "^allreduce +flat +2 " 9 --count "^allreduce +rsag +2 " 9
                --count "^allreduce +hier +2 " 9
                --count "^allreduce +limit:inline +2 " 8 --count "^allreduce +limit:fold +2 " 9
                --reject "limit:inline +2 +2048 ")
    if(f STREQUAL "openmpi")
      list(APPEND rb_rows --count "^allreduce +native-sm +2 " 9)
    endif()
    nc_mpi_test(mpi_${f}_bench_allreduce ${f} 2 ${rb_rows} --env NUMACOLL_MPI_STATS=1
                --count "MPI_Allreduce [1-9][0-9]* .numacoll [1-9][0-9]*" 2
                -- ${CMAKE_BINARY_DIR}/bin/numacoll-bench-mpi-${f} allreduce --reps 1
                --iters 20 --target-ms 1 --max-bytes 2K)
    nc_mpi_test(mpi_${f}_bench_reduce ${f} 2 --count "^reduce +default +2 " 9
                --count "^reduce +rsag +2 " 9 --count "^reduce +limit:inline +2 " 8
                --env NUMACOLL_MPI_STATS=1 --count "MPI_Reduce [1-9][0-9]* .numacoll [1-9]" 2
                -- ${CMAKE_BINARY_DIR}/bin/numacoll-bench-mpi-${f} reduce --root 1 --reps 1
                --iters 20 --target-ms 1 --max-bytes 2K
                --variants default,rsag,limit:inline)
    # numacoll-bench --mpi reduce_scatter_block|scan at np = 2, 8 B .. 64 KiB (one chunk and
    # many): every row at every size, results checked, `default` numacoll's (its counters)
    foreach(c reduce_scatter_block scan)
      if(c STREQUAL "scan")
        set(stat "MPI_Scan [1-9][0-9]* .numacoll [1-9][0-9]*")
      else()
        set(stat "MPI_Reduce_scatter_block [1-9][0-9]* .numacoll [1-9][0-9]*")
      endif()
      nc_mpi_test(mpi_${f}_bench_${c} ${f} 2 --count "^${c} +native +2 " 14
                  --count "^${c} +default +2 " 14 --count "^${c} +core +2 " 14
                  --count "^${c} +limit:fold +2 " 14 --env NUMACOLL_MPI_STATS=1
                  --count "${stat}" 2
                  -- ${CMAKE_BINARY_DIR}/bin/numacoll-bench-mpi-${f} ${c} --reps 1 --iters 10
                  --target-ms 1 --max-bytes 64K --variants native,default,core,limit:fold)
    endforeach()
    if(f STREQUAL "openmpi")
      nc_mpi_test(mpi_${f}_bench_reduce_bad_root ${f} 2 --fail
                  --count "--root 2 is not valid with 2 processes. allowed: 0..1" 1
                  -- ${CMAKE_BINARY_DIR}/bin/numacoll-bench-mpi-${f} reduce --root 2)
    else()
      nc_mpi_test(mpi_${f}_bench_allreduce_bad_variant ${f} 2 --fail
                  --count "unknown variant 'no-such'. allowed: native, .*limit:fold, flat, rsag" 1
                  -- ${CMAKE_BINARY_DIR}/bin/numacoll-bench-mpi-${f} allreduce
                  --variants default,no-such)
    endif()
    # a name --variants does not know is an error naming it and the allowed names; a known
    # one this run cannot measure (limit:memcpy for the barrier) is said, not skipped
    nc_mpi_test(mpi_${f}_bench_bad_variant ${f} 2 --fail
                --count "unknown variant 'no-such'. allowed: native, default, .*limit:xcore" 1
                --count "variant 'limit:memcpy' is not measured in this run" 1
                -- ${CMAKE_BINARY_DIR}/bin/numacoll-bench-mpi-${f} barrier --reps 1
                --variants default,limit:memcpy,no-such)
  endif()
  # hierarchical path on one machine: pseudo-nodes
  foreach(k 2 3)
    nc_mpi_test(mpi_${f}_fake${k}_barrier ${f} 5 --env NUMACOLL_FAKE_NODES=${k}
                --env NUMACOLL_VERBOSE=1 --expect "hierarchical, ${k} pseudo-nodes"
                -- ${P} barrier ${it_small})
    nc_mpi_test(mpi_${f}_fake${k}_bcast ${f} 5 --env NUMACOLL_FAKE_NODES=${k} -- ${P} bcast 1)
  endforeach()
  # pass-through and diagnostics
  nc_mpi_test(mpi_${f}_disabled ${f} 2 --env NUMACOLL_DISABLE=1 --env NC_EXPECT=native
              -- ${P} barrier 50)
  # ... and the valid rows still hold: NUMACOLL_MPI_STATS shows every call went native
  nc_mpi_test(mpi_${f}_bad_config ${f} 2 --env NUMACOLL_BARRIER=no-such-barrier
              --env NC_EXPECT=native --env NUMACOLL_MPI_STATS=1
              --count "NUMACOLL_BARRIER='no-such-barrier' is not valid. allowed: auto, " 2
              --count "numacoll-mpi stats .${f} rank [01].: MPI_Barrier [1-9][0-9]* .numacoll 0" 2
              -- ${P} barrier 20)
  nc_mpi_test(mpi_${f}_verbose ${f} 3 --env NUMACOLL_VERBOSE=1
              --count "numacoll-mpi\\[${f}\\]: MPI_COMM_WORLD \\(size 3\\): one node team" 1
              -- ${P} barrier 10)
  nc_mpi_test(mpi_${f}_stats ${f} 2 --env NUMACOLL_MPI_STATS=1
              --expect "numacoll-mpi stats \\[${f} rank 1\\]: MPI_Barrier [0-9]+ \\(numacoll [1-9]"
              -- ${P} barrier 10)

  # Fortran (mpif.h): the calls must be intercepted (counter "fortran N", N > 0)
  # the Fortran wrapper found beside the MPI's mpicc (src/mpi/find_mpis.cmake)
  set(NC_FC_${f} "${NC_MPI_${f}_FC}")
  if(NC_FC_${f})
    set(fp ${NC_MPI_TDIR}/fortran_test_${f})
    add_custom_command(OUTPUT ${fp}
      COMMAND ${NC_FC_${f}} -O1 -fallow-argument-mismatch -w -o ${fp}
              ${CMAKE_CURRENT_SOURCE_DIR}/mpi/fortran_test.f90
      DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/mpi/fortran_test.f90
      WORKING_DIRECTORY ${NC_MPI_TDIR}
      COMMENT "Building the Fortran MPI test for ${f}")
    add_custom_target(fortran_test_${f} ALL DEPENDS ${fp})
    # ... and its 15 allreduces and 5 reduces (mpif.h and `use mpi`, INTEGER8, LOGICAL and the
    # pair types among them), one scan and one reduce_scatter_block numacoll's, and its
    # allgather, gather (MPI_IN_PLACE), scatterv, alltoall, alltoallw, neighbor_alltoall and
    # neighbor_alltoallw
    nc_mpi_test(mpi_${f}_fortran ${f} 3 --env NUMACOLL_MPI_STATS=1
                --expect "fortran: PASS"
                --expect "numacoll-mpi stats \\[${f} rank 2\\]: MPI_Barrier [0-9]+ \\(numacoll [1-9][0-9]*\\), MPI_Bcast [0-9]+ \\([^)]*\\), MPI_Allreduce 15 \\(numacoll 15\\), MPI_Reduce 5 \\(numacoll 5\\), fortran [1-9]"
                --expect "MPI_Reduce_scatter_block 1 \\(numacoll 1\\), MPI_Reduce_scatter 0 \\(numacoll 0\\), MPI_Scan 1 \\(numacoll 1\\)"
                --expect "numacoll-mpi stats \\[${f} rank 2\\]: .*MPI_Allgather 1 \\(numacoll 1\\), MPI_Allgatherv 0 \\(numacoll 0\\), MPI_Gather 1 \\(numacoll 1\\), .*MPI_Scatterv 1 \\(numacoll 1\\)"
                --expect "numacoll-mpi stats \\[${f} rank 2\\]: .*MPI_Alltoall 1 \\(numacoll 1\\)"
                --expect "numacoll-mpi stats \\[${f} rank 2\\]: .*MPI_Alltoallw 1 \\(numacoll 1\\)"
                --expect "numacoll-mpi stats \\[${f} rank 2\\]: .*MPI_Neighbor_alltoall 1 \\(numacoll 1\\), MPI_Neighbor_alltoallv 0 \\(numacoll 0\\), MPI_Neighbor_alltoallw 1 \\(numacoll 1\\)"
                -- ${fp})
    # the mpi_f08 module (Open MPI: mpi_barrier_f08 -> ompi_barrier_f, ompi_allreduce_f, ...;
    # MPICH: mpi_barrier_f08_ calls PMPI_Barrier, its bcast, allreduce and reduce call the C
    # MPI_Bcast, MPI_Allreduce, MPI_Reduce): interposed too, 21 allreduces and 10 reduces, an
    # allgather, a gather, a scatter, an alltoall, an alltoallw, a reduce-scatter-block, a
    # scan, a neighbour allgather and a neighbour alltoall (an open line)
    set(fp8 ${NC_MPI_TDIR}/fortran_f08_test_${f})
    add_custom_command(OUTPUT ${fp8}
      COMMAND ${NC_FC_${f}} -O1 -w -o ${fp8} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/fortran_f08_test.f90
      DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/mpi/fortran_f08_test.f90
      WORKING_DIRECTORY ${NC_MPI_TDIR}
      COMMENT "Building the Fortran mpi_f08 test for ${f}")
    add_custom_target(fortran_f08_test_${f} ALL DEPENDS ${fp8})
    nc_mpi_test(mpi_${f}_fortran_f08 ${f} 2 --env NUMACOLL_MPI_STATS=1 --expect "f08: PASS"
                --expect "numacoll-mpi stats \\[${f} rank 1\\]: MPI_Barrier 30 \\(numacoll 30\\), MPI_Bcast 30 \\(numacoll 30[^)]*\\), MPI_Allreduce 21 \\(numacoll 21\\), MPI_Reduce 10 \\(numacoll 10\\), fortran [1-9]"
                --expect "numacoll-mpi stats \\[${f} rank 1\\]: .*MPI_Allgather 1 \\(numacoll 1\\), MPI_Allgatherv 0 \\(numacoll 0\\), MPI_Gather 1 \\(numacoll 1\\)"
                --expect "numacoll-mpi stats \\[${f} rank 1\\]: .*MPI_Alltoall 1 \\(numacoll 1\\)"
                --expect "numacoll-mpi stats \\[${f} rank 1\\]: .*MPI_Alltoallw 1 \\(numacoll 1\\)"
                --expect "MPI_Reduce_scatter_block 1 \\(numacoll 1\\), MPI_Reduce_scatter 0 \\(numacoll 0\\), MPI_Scan 1 \\(numacoll 1\\)"
                --expect "numacoll-mpi stats \\[${f} rank 1\\]: .*MPI_Scatter 1 \\(numacoll 1\\)"
                --expect "numacoll-mpi stats \\[${f} rank 1\\]: .*MPI_Neighbor_allgather 1 \\(numacoll 1\\), MPI_Neighbor_allgatherv 0 \\(numacoll 0\\), MPI_Neighbor_alltoall 1 \\(numacoll 1\\)"
                -- ${fp8})
  endif()
endforeach()

# A further MPI of a family (NC_MPI_EXTRAS: another major version, openmpi5 beside the
# openmpi4 the family's tests above run with) has its own preload and a few tests, not the
# whole suite: what its library says it is (numacoll-info --mpi-identity: the family and the
# major version its preload is named by), and a small program built with it, run through
# numacoll-run with its own launcher at np 2: numacoll-run must choose its preload (the
# file that defines numacoll's counters in the ranks) and every barrier, broadcast and
# allreduce must be numacoll's. mpi_preload_links below checks its preload as every other.
foreach(k ${NC_MPI_EXTRAS})
  set(id ${NC_MPI_${k}_ID})
  set(t mpi_abi_name_${k})
  add_executable(${t} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/mpi_abi_name.c)
  target_include_directories(${t} PRIVATE ${NC_MPI_${k}_INCS} ${PROJECT_SOURCE_DIR}/src/mpi)
  target_link_libraries(${t} PRIVATE ${NC_MPI_${k}_LIBS} ${CMAKE_DL_LIBS})
  target_compile_options(${t} PRIVATE ${NC_WARN} -Wno-missing-prototypes)
  set_target_properties(${t} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${NC_MPI_TDIR})
  add_dependencies(${t} numacoll_mpi_${k} numacoll-info)
  string(REGEX MATCH "^[0-9]+" major "${NC_MPI_${k}_VERSION}")
  if(NC_MPI_${k}_FAMILY STREQUAL "openmpi")
    set(ident "^Open MPI v${major}\\.")
  else() # MPICH of that major version, or a derivative that says its own name
    set(ident "^MPICH Version:[ \t]*${major}\\.|Intel|MVAPICH|CRAY|Cray")
  endif()
  add_test(NAME mpi_${k}_identity
           COMMAND ${CMAKE_BINARY_DIR}/bin/numacoll-info --mpi-identity ${NC_MPI_${k}_LIB})
  set_tests_properties(mpi_${k}_identity PROPERTIES TIMEOUT 60 LABELS "mpi;mpi-${k}"
                       PASS_REGULAR_EXPRESSION "${ident}")
  nc_mpi_test(mpi_${k}_preload ${k} 2
              --count "^abi_name: rank [01]: preloaded by libnumacoll_mpi-${id}\\.so. barrier 20 \\(numacoll 20\\), bcast 20 \\(numacoll 20\\), allreduce 20 \\(numacoll 20\\). 0 wrong results" 2
              -- ${NC_MPI_TDIR}/${t} 20)
endforeach()

# no preload names an MPI library or binds an Open MPI object when it loads, none references
# MPI-4 entry points strongly, each loads into a process without MPI (test_renamed_mpi.sh)
add_test(NAME mpi_preload_links
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_renamed_mpi.sh links ${CMAKE_BINARY_DIR}/bin)
set_tests_properties(mpi_preload_links PROPERTIES TIMEOUT 60 LABELS mpi
                     PASS_REGULAR_EXPRESSION "preload links: PASS")
# the MPICH-family preload runs a program linked against MPICH's library renamed
# libmpi.so.12 (as Intel MPI, MVAPICH and Cray MPICH name it) with only that library loaded
if("mpich" IN_LIST NC_MPI_FLAVORS)
  list(GET NC_MPI_mpich_LIBS 0 nc_mpich_lib)
  add_test(NAME mpi_mpich_renamed_lib
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_renamed_mpi.sh run ${CMAKE_BINARY_DIR}/bin
                   ${nc_mpich_lib} "${NC_MPI_mpich_INCS}" ${CMAKE_C_COMPILER} ${PROJECT_SOURCE_DIR})
  set_tests_properties(mpi_mpich_renamed_lib PROPERTIES TIMEOUT 180 LABELS "mpi;mpi-mpich"
                       RUN_SERIAL TRUE PASS_REGULAR_EXPRESSION "renamed MPI library: PASS")
endif()

# an MPI in a cluster-style prefix (bin/mpicc, bin/mpirun, bin/mpif90) that is alone on
# PATH is found and recorded with its own launcher, and a scratch build's preload and
# numacoll-run run a program built with its mpicc under its mpirun, numacoll's counters
# proving every call numacoll's (about 20 s: the scratch build); then two MPIs of one
# family in that build (the prefix's Open MPI and a stand-in of the next major version):
# a preload for each, numacoll-run choosing by version (about 20 s more); bad
# -DNUMACOLL_MPICC values fail the configure
if("openmpi" IN_LIST NC_MPI_FLAVORS AND NC_MPI_openmpi_LAUNCHER AND NC_MPI_openmpi_FC)
  add_test(NAME mpi_cluster_prefix
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_cluster_prefix.sh ${PROJECT_SOURCE_DIR}
                   ${NC_MPI_openmpi_CC} ${NC_MPI_openmpi_LAUNCHER} ${NC_MPI_openmpi_FC})
  set_tests_properties(mpi_cluster_prefix PROPERTIES TIMEOUT 240 LABELS mpi
                       PASS_REGULAR_EXPRESSION "cluster prefix: PASS")
endif()

# numacoll-run picks the library that matches the launcher
add_test(NAME mpi_numacoll_run_print COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_numacoll_run.sh
         ${CMAKE_BINARY_DIR}/bin "${NC_MPI_FLAVORS}")
set_tests_properties(mpi_numacoll_run_print PROPERTIES TIMEOUT 60 LABELS mpi)

# mpi4py's own test suite under the preload, built against the system MPI (the default
# one; needs the network once to fetch the sdist, skipped otherwise)
if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_mpi4py.sh)
  foreach(f ${NC_MPI_DEFAULT})
    add_test(NAME mpi_${f}_mpi4py COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_mpi4py.sh
             ${CMAKE_BINARY_DIR} ${f})
    set_tests_properties(mpi_${f}_mpi4py PROPERTIES TIMEOUT 600 LABELS "mpi;mpi4py"
                         SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
  endforeach()
endif()

# make bench (tools/scripts/dev/bench.sh) reports no figure for numacoll that numacoll did not
# measure (an invalid NUMACOLL_* value or NUMACOLL_DISABLE refuses the run; ranks without
# numacoll fail their step, whose rows are dropped, and the exit status names it), records
# the run (host, CPU, load, MPIs, commit, date) in summary.md, and prints one line per step
# and a headline table (benchmark output only in bench.log)
if("openmpi" IN_LIST NC_MPI_FLAVORS AND TARGET numacoll-bench-mpi-openmpi)
  foreach(t bench_honest bench_progress)
    add_test(NAME ${t} COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/${t}.sh ${CMAKE_BINARY_DIR}
             ${CMAKE_SOURCE_DIR}/tools/scripts/dev/bench.sh)
    set_tests_properties(${t} PROPERTIES TIMEOUT 180 LABELS "mpi;bench" RUN_SERIAL TRUE
                         PASS_REGULAR_EXPRESSION "${t}: PASS")
  endforeach()
endif()
