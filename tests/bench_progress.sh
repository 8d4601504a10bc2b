#!/bin/bash
# make bench's terminal output: one line per step ("step 1/2: MPI barrier, Open MPI,
# np=2 ... 1 s"), the launchers' and benchmarks' output only in bench.log, a headline table
# at the end instead of the whole summary.md; --dry-run lists the numbered plan, and the
# quick plan leaves out the slow parts (target launches, the oversubscribed MPI broadcast).
#   bench_progress.sh BUILD_DIR BENCH_SH
set -u
build="$(cd "$1" && pwd)"; bench="$2"
fail=0
tmp="$(mktemp -d /tmp/nc-bench-progress.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
unset BENCH_MPIS BENCH_LAUNCHES
ok() { echo "ok: $*"; }
bad() { echo "FAILED: $*"; fail=1; }

# the plan
plan="$(BENCH_QUICK=1 timeout 30 "$bench" "$build" "$tmp/plan" --dry-run 2>&1)"; rc=$?
n=$(grep -c "^step [0-9]*: " <<<"$plan")
if [ $rc = 0 ] && [ "$n" -ge 10 ] && grep -q "^($n steps)$" <<<"$plan" &&
    ! grep -q "bcast targets\|MPI bcast, Open MPI, np=8" <<<"$plan" && [ ! -e "$tmp/plan" ]; then
    ok "--dry-run: $n numbered quick steps, no target launches, nothing written"
else
    bad "--dry-run (quick): exit $rc: $plan"
fi
# every MPI collective has its steps: np = 2 with each MPI built, np = 8 with Open MPI
for c in barrier bcast allreduce reduce reduce_scatter_block scan allgather gather scatter \
    alltoall; do
    steps=("MPI $c, Open MPI, np=2")
    [ "$c" = bcast ] || steps+=("MPI $c, Open MPI, np=8")
    [ -x "$build/bin/numacoll-bench-mpi-mpich" ] && steps+=("MPI $c, MPICH, np=2")
    for st in "${steps[@]}"; do
        if grep -Eq "^step [0-9]+: $st( \(oversubscribed\))?\$" <<<"$plan"; then
            ok "--dry-run (quick) plans '$st'"
        else
            bad "--dry-run (quick) lacks a step '$st': $plan"
        fi
    done
done
plan="$(timeout 30 "$bench" "$build" "$tmp/plan" --dry-run 2>&1)"
if grep -q "^step [0-9]*: bcast targets, launch 6 of 6, Open MPI" <<<"$plan"; then
    ok "--dry-run (full): the target launches are planned"
else
    bad "--dry-run (full): $plan"
fi

# a short run: two steps, then the headline
only="^MPI barrier, Open MPI, np=2\$"
want=("MPI barrier, Open MPI, np=2")
if [ -x "$build/bin/numacoll-bench-mpi-mpich" ]; then
    only="$only|^MPI barrier, MPICH, np=2\$"
    want+=("MPI barrier, MPICH, np=2")
fi
out="$tmp/res"
BENCH_QUICK=1 BENCH_ONLY="$only" timeout 100 "$bench" "$build" "$out" >"$tmp/out" 2>&1; rc=$?
[ $rc = 0 ] || bad "short run: exit $rc: $(tail -n 25 "$tmp/out")"
i=0
for w in "${want[@]}"; do
    i=$((i + 1))
    re="^step $i/${#want[@]}: $w \.\.\. [0-9]+ s$"
    if grep -Eq -- "$re" "$tmp/out"; then ok "a line /$re/"
    else bad "no line /$re/ in: $(tail -n 25 "$tmp/out")"; fi
done
if grep -Eq "^ *(coll|barrier) .*(median_us|openmpi$)|numacoll-mpi stats|^\\$ |^\[bench" "$tmp/out"; then
    bad "benchmark output on the terminal: $(tail -n 25 "$tmp/out")"
elif grep -q "numacoll-mpi stats \[openmpi rank 0\]" "$out/bench.log" &&
    grep -q "^barrier *default *2 " "$out/bench.log"; then
    ok "the benchmarks' output is in bench.log only"
else
    bad "bench.log lacks the benchmark's output"
fi
if grep -Eq "^headline: " "$tmp/out" && grep -Eq "^  barrier +Open MPI +2 .* [0-9.]+x$" "$tmp/out" &&
    ! grep -q "^## \|^| MPI | np |" "$tmp/out"; then
    ok "the headline table ends the output, not summary.md"
else
    bad "no headline table, or summary.md printed: $(tail -n 25 "$tmp/out")"
fi
[ $fail = 0 ] && echo "bench_progress: PASS"
exit $fail
