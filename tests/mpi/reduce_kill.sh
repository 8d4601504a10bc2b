#!/bin/bash
# A member killed (SIGKILL) before, or inside, a loop of MPI_Allreduce calls on numacoll's
# flat team (np = 3, the last rank dies; mpi_reduce_test kill before|in). Every process
# must have ended within LIMIT seconds of the ranks being ready, and no shared-memory name
# of the job's processes may be left in /dev/shm (NUMACOLL_SHM_BACKEND=posix: the segments
# have names there until all members have attached). Open MPI runs with --enable-recovery,
# so its launcher leaves the survivors alone: each must return an error from MPI_Allreduce,
# numacoll naming the dead rank (NUMACOLL_ERR_PEER_DEAD ... member(s) 2 ...). MPICH's hydra
# kills the survivors within milliseconds of the failure even with -disable-auto-cleanup
# (SIGUSR1, then SIGKILL), often before they notice: there a survivor either reports the
# error or is ended by the launcher.
# KILL_COLL=alltoall: the same with MPI_Alltoall (mpi_alltoall_test kill before|in);
# KILL_COLL=allgather|gather|scatter with MPI_Allgather, MPI_Gather, MPI_Scatter (root 0;
# mpi_move_test kill COLL before|in): scatter with NUMACOLL_MOVE=cma, the dying rank a
# reader of the root's buffer (skipped, 77, where single copy is not permitted).
# Exit 77 (skipped) with the reason where the recorded MPI version's launcher cannot keep
# survivors (nc_mpi_launcher_defect, manifest.sh).
#   reduce_kill.sh BIN_DIR FLAVOR PROGRAM
set -u
bindir="$1"; flavor="$2"; prog="$3"
LIMIT=${REDUCE_KILL_LIMIT:-20}
coll=${KILL_COLL:-allreduce}
args=(kill)
case "$coll" in
allreduce) mpi_name=MPI_Allreduce ;;
alltoall) mpi_name=numacoll_alltoall ;; # the core names the call there
allgather | gather | scatter) mpi_name=numacoll_$coll args=(kill "$coll") ;;
*) echo "reduce_kill.sh: unknown KILL_COLL $coll; allowed: allreduce, alltoall, allgather," \
        "gather, scatter"; exit 2 ;;
esac
# scatter: every block by single copy from the root's buffer; rank 0 says whether the team
# may (NUMACOLL_VERBOSE=1: "single copy permitted")
[ "$coll" = scatter ] && export NUMACOLL_MOVE=cma NUMACOLL_VERBOSE=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_base_warn_component_unused=0
. "$(dirname "$0")/manifest.sh"
launcher="$(nc_mpi_launcher "$bindir/.." "$flavor")" || exit 2
nc_mpi_skip_defect "$bindir/.." "$flavor" recovery
case "$flavor" in
openmpi) launch=("$launcher" --oversubscribe --enable-recovery -np 3) ;;
mpich) launch=("$launcher" -disable-auto-cleanup -n 3) ;;
*) echo "reduce_kill.sh: unknown MPI $flavor"; exit 2 ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for when in before in; do
    out="$tmp/$when.out"
    NUMACOLL_SHM_BACKEND=posix NUMACOLL_MPI_SETUP_AFTER=0 timeout $((LIMIT + 30)) \
        "$bindir/numacoll-run" "${launch[@]}" "$prog" "${args[@]}" "$when" >"$out" 2>&1 &
    job=$!
    for ((i = 0; i < 600; i++)); do # up to 30 s for the three ranks to be ready
        [ "$(grep -c "^kill: rank [0-9] pid [0-9]* ready" "$out")" = 3 ] && break
        kill -0 $job 2>/dev/null || break
        sleep 0.05
    done
    t0=$(date +%s%N)
    wait $job
    rc=$?
    took=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
    pids=$(sed -n 's/^kill: rank [0-9] pid \([0-9]*\) ready$/\1/p' "$out" | tr '\n' ' ')
    left=""
    for p in $pids; do
        left+=$(ls /dev/shm 2>/dev/null | grep "^numacoll-$p-" | tr '\n' ' ')
    done
    survivors=$(grep -c "^kill: rank [01]: $coll [0-9]* failed" "$out")
    # rank 0 may see rank 1 gone too (it exits after its error)
    dead_re="member\(s\) ([01] \(exited\), )?2 \(exited\) exited before completing it"
    named=$(grep -Ec "NUMACOLL_ERR_PEER_DEAD \($mpi_name .*$dead_re" "$out")
    ended=$(grep -c "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)" "$out")
    midcopy="" # the scatter's victim says so just before it dies in the middle of a read
    if [ "$coll" = scatter ] && [ $when = in ]; then
        midcopy="; died inside a single copy: no"
        grep -q "dies while it reads" "$out" && midcopy="; died inside a single copy: yes"
    fi
    echo "kill $when ($flavor): exit $rc after ${took} s; survivors with an error: $survivors/2;" \
         "numacoll named rank 2: $named/2; ended by the launcher: $ended;" \
         "left in /dev/shm: ${left:-nothing}$midcopy"
    if [ "$coll" = scatter ] && ! grep -q "NUMACOLL_MOVE=cma, single copy permitted" "$out"; then
        grep -q "single copy not permitted" "$out" &&
            { echo "SKIP: single copy is not permitted between the ranks here"; exit 77; }
        echo "FAILED: kill $when: no word from the move layer on single copy"; fail=1
    fi
    if [ $flavor = mpich ] && [ "$ended" = 1 ]; then # survivors the launcher ended: fine
        survivors=2 named=2
    fi
    if [ $rc = 124 ] || [ "$survivors" != 2 ] || [ "$named" != 2 ] ||
        [ -n "$left" ] || [ "$(wc -w <<<"$pids")" != 3 ] ||
        awk -v t="$took" -v l="$LIMIT" 'BEGIN { exit !(t > l) }'; then
        echo "FAILED: kill $when:"; grep -v '^\s*$' "$out" | tail -30; fail=1
    fi
done
[ $fail = 0 ] && echo "reduce_kill: PASS ($coll)"
exit $fail
