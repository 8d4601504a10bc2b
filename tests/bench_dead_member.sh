#!/bin/bash
# A member of numacoll-bench's fork harness killed with SIGKILL, with the default
# NUMACOLL_TIMEOUT (0: wait forever). The harness is blocked in waitpid() for rank 0, so the
# dead member stays a zombie (kill(pid, 0) still succeeds on it). Every process must end
# within seconds, the error naming the dead member:
#   barrier    P = 3, rank 2 killed while the others wait in a library barrier
#   pingpong   P = 3, rank 2 killed while ranks 0 and 1 ping-pong (both alive) and rank 2
#              waited for them: the ping-pong loop itself must notice
#   partner    P = 2, rank 1 killed: rank 0 waits for its ping-pong answer
#   logp       --logp, rank 1 killed during the probes (skipped if the probes finish first)
#   bench_dead_member.sh BIN_DIR
set -u
bench="$1/numacoll-bench"
unset NUMACOLL_TIMEOUT NUMACOLL_VERBOSE
LIMIT=${BENCH_DEAD_LIMIT:-10} # seconds from the kill until every process has ended
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# alive PID: the process exists and is not a zombie (state after the last ')' of stat)
alive() {
    local st
    st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    st=${st##*) }
    [ "${st:0:1}" != Z ] && [ "${st:0:1}" != X ]
}

# the children of PID in fork order (ascending pids: no pid wrap-around within a run)
children() { ps -o pid= --ppid "$1" 2>/dev/null | sort -n | tr -d ' '; }

run_case() { # name nprocs victim-rank ready-regex want-regex args...
    local name=$1 np=$2 victim=$3 ready=$4 want=$5; shift 5
    local out="$tmp/$name.out"
    NUMACOLL_VERBOSE=1 "$bench" "$@" >"$out" 2>&1 &
    local b=$! kids=() i
    for ((i = 0; i < 400; i++)); do # up to 20 s for the members to start and be ready
        mapfile -t kids < <(children "$b")
        if [ "${#kids[@]}" = "$np" ] && { [ -z "$ready" ] || grep -Eq -- "$ready" "$out"; }; then
            break
        fi
        if ! alive "$b"; then break; fi
        sleep 0.05
    done
    if [ "${#kids[@]}" != "$np" ] || { [ -n "$ready" ] && ! grep -Eq -- "$ready" "$out"; }; then
        echo "FAIL: $name: not ready (${#kids[@]} of $np members; /$ready/ not seen):"
        cat "$out"; kill -9 "$b" "${kids[@]}" 2>/dev/null; wait "$b"; fail=1; return
    fi
    [ -n "$ready" ] && sleep 0.3 # into the loop
    local dead=${kids[$victim]}
    kill -9 "$dead"
    local t0=$(date +%s%N) ended=0
    for ((i = 0; i < LIMIT * 20; i++)); do
        ended=1
        for p in "$b" "${kids[@]}"; do alive "$p" && ended=0; done
        [ $ended = 1 ] && break
        sleep 0.05
    done
    local took=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
    if [ $ended = 0 ]; then
        echo "FAIL: $name: processes still running ${LIMIT} s after rank $victim (pid $dead) was killed:"
        for p in "$b" "${kids[@]}"; do alive "$p" && ps -o pid=,stat=,wchan=,args= -p "$p"; done
        kill -9 "$b" "${kids[@]}" 2>/dev/null
        wait "$b"
        cat "$out"; fail=1; return
    fi
    wait "$b"
    local rc=$?
    if [ "$name" = logp ] && [ $rc = 0 ] && grep -q "round trip" "$out"; then
        echo "$name: the probes finished before the kill; nothing to check"; return
    fi
    if [ $rc = 0 ] || ! grep -Eq -- "$want" "$out" ||
        ! grep -q "rank $victim (pid $dead) was killed by signal 9" "$out"; then
        echo "FAIL: $name: exit $rc; wanted /$want/ and the killed rank named in:"
        cat "$out"; fail=1; return
    fi
    echo "$name: all ended ${took} s after rank $victim was killed: $(grep -Eo -- "$want" "$out" | head -1)"
}

team="team 'bench'"
run_case barrier 3 2 "$team" "member\(s\) 2 \(exited\) exited before completing it" \
    barrier --procs 3 --iters 100000000 --reps 1 --algorithms dissemination
run_case pingpong 3 2 "$team" "ping-pong: rank [01] waiting for rank [01] \(rank [01] of 3\): member\(s\) 2 \(pid [0-9]+\) exited" \
    barrier --procs 3 --iters 100000000 --reps 1
run_case partner 2 1 "$team" "ping-pong: rank 0 waiting for rank 1 \(rank 0 of 2\): member\(s\) 1 \(pid [0-9]+\) exited" \
    barrier --procs 2 --iters 100000000 --reps 1
run_case logp 2 1 "" "LogP probe: rank 0 waiting for rank 1 \(rank 0 of 2\): member\(s\) 1 \(pid [0-9]+\) exited" \
    barrier --logp --reps 64
[ $fail = 0 ] && echo "bench_dead_member: PASS"
exit $fail
