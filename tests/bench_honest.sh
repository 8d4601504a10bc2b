#!/bin/bash
# make bench never reports a number for numacoll that numacoll did not measure:
#   - an invalid NUMACOLL_* value (or NUMACOLL_DISABLE=1) in the environment: bench.sh
#     refuses to start (exit 2), names the variable and writes no figure;
#   - ranks that run without numacoll although the environment passed the check (here: an
#     MPI benchmark binary wrapped to give its ranks an invalid value, or
#     NUMACOLL_MPI_BCAST=0 or NUMACOLL_MPI_REDUCE=0): the step fails, its rows are dropped,
#     bench.sh exits 1 naming it on the terminal and in summary.md;
#   - a good run records the host, CPU model and count, load average at start and end, MPI
#     versions, numacoll's commit (clean or dirty) and the date in summary.md.
#   bench_honest.sh BUILD_DIR BENCH_SH
set -u
build="$(cd "$1" && pwd)"; bench="$2"
fail=0
tmp="$(mktemp -d /tmp/nc-bench-honest.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
export BENCH_QUICK=1
unset BENCH_ONLY BENCH_MPIS
ok() { echo "ok: $*"; }
bad() { echo "FAILED: $*"; fail=1; }
# rows of OUT's CSV files whose algorithm is not a native MPI call or a physical
# reference: figures labelled numacoll
numacoll_rows() {
    local f n=0
    for f in "$1"/*.csv; do
        [ -f "$f" ] || continue
        [ "$(basename "$f")" = run_info.csv ] && continue # the run's machine, not a figure
        n=$((n + $(tail -n +2 "$f" | awk -F, '$2 !~ /^(native|native-sm|limit:.*)$/' | wc -l)))
    done
    echo $n
}
bench_run() { # name, then env assignments and bench.sh arguments (timeout: a failure)
    local name="$1"; shift
    timeout 100 env "$@" >"$tmp/$name.out" 2>&1
}

# 1. invalid value: refused before any step
out="$tmp/bad"
bench_run bad NUMACOLL_TIMEOUT=abc "$bench" "$build" "$out"; rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "refusing to start: .*NUMACOLL_TIMEOUT='abc'" "$tmp/bad.out"; then
    ok "NUMACOLL_TIMEOUT=abc: exit $rc, refused naming the variable"
else
    bad "NUMACOLL_TIMEOUT=abc: exit $rc (124: timeout), output: $(tail -n 5 "$tmp/bad.out")"
fi
n=$(numacoll_rows "$out")
if [ "$n" = 0 ] && ! grep -qs "numacoll default" "$out/summary.md"; then
    ok "NUMACOLL_TIMEOUT=abc: no numacoll figure written"
else
    bad "NUMACOLL_TIMEOUT=abc: $n CSV rows labelled numacoll in $out (native numbers under numacoll's name)"
fi
bench_run disable NUMACOLL_DISABLE=1 "$bench" "$build" "$tmp/disable"; rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "refusing to start: NUMACOLL_DISABLE=1" "$tmp/disable.out" &&
    [ "$(numacoll_rows "$tmp/disable")" = 0 ]; then
    ok "NUMACOLL_DISABLE=1: refused, no figure"
else
    bad "NUMACOLL_DISABLE=1: exit $rc, $(numacoll_rows "$tmp/disable") numacoll rows, output: $(tail -n 3 "$tmp/disable.out")"
fi

# 2. ranks without numacoll behind a valid environment: a build directory whose Open MPI
# benchmark gives its ranks an invalid value (the numacoll library then falls back to the
# native collectives), and one whose ranks run with NUMACOLL_MPI_BCAST=0
fake="$tmp/build"
mkdir -p "$fake/bin"
cp "$build/bin/numacoll-bench" "$build/bin/numacoll-info" "$fake/bin/"
wrap() { printf '#!/bin/sh\n%s exec %s "$@"\n' "$1" "$build/bin/numacoll-bench-mpi-openmpi" \
    >"$fake/bin/numacoll-bench-mpi-openmpi"; chmod +x "$fake/bin/numacoll-bench-mpi-openmpi"; }
wrap NUMACOLL_TIMEOUT=abc
out="$tmp/ranks"
bench_run ranks BENCH_MPIS=openmpi "BENCH_ONLY=^MPI barrier, Open MPI, np=2\$|summary" \
    "$bench" "$fake" "$out"; rc=$?
if [ $rc = 1 ] && grep -q "^step 1/2: MPI barrier, Open MPI, np=2 \.\.\. FAILED" "$tmp/ranks.out" &&
    grep -q "failed: step 1 (MPI barrier, Open MPI, np=2)" "$tmp/ranks.out"; then
    ok "ranks without numacoll: exit 1, the step failed and is named at the end"
else
    bad "ranks without numacoll: exit $rc, output: $(tail -n 25 "$tmp/ranks.out")"
fi
n=$(numacoll_rows "$out")
if [ "$n" = 0 ] && [ ! -e "$out/mpi_barrier.csv" ]; then
    ok "ranks without numacoll: the step's rows were dropped"
else
    bad "ranks without numacoll: $n rows labelled numacoll, files: $(ls "$out")"
fi
if ! /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
    echo "(no matplotlib: summary.md not checked)"
elif grep -q "failed: step 1 (MPI barrier, Open MPI, np=2)" "$out/summary.md" &&
    ! grep -q "numacoll default" "$out/summary.md"; then
    ok "ranks without numacoll: summary.md names the failed step and has no numacoll figure"
else
    bad "ranks without numacoll: summary.md: $(head -n 30 "$out/summary.md" 2>&1)"
fi
wrap NUMACOLL_MPI_BCAST=0
bench_run bcast BENCH_MPIS=openmpi BENCH_BCAST_MAX=1K "BENCH_ONLY=^MPI bcast, Open MPI, np=2\$" \
    "$bench" "$fake" "$tmp/bcast"; rc=$?
if [ $rc = 1 ] && grep -q "MPI bcast, Open MPI, np=2 \.\.\. FAILED.*rank 0 (0 of [0-9]* MPI_Bcast calls through numacoll)" "$tmp/bcast.out" &&
    [ "$(numacoll_rows "$tmp/bcast")" = 0 ]; then
    ok "broadcasts not through numacoll (NUMACOLL_MPI_BCAST=0 in the ranks): the step failed, no rows"
else
    bad "NUMACOLL_MPI_BCAST=0 in the ranks: exit $rc, $(numacoll_rows "$tmp/bcast") numacoll rows, output: $(tail -n 25 "$tmp/bcast.out")"
fi
wrap NUMACOLL_MPI_REDUCE=0
bench_run allreduce BENCH_MPIS=openmpi BENCH_REDUCE_MAX=64 \
    "BENCH_ONLY=^MPI (allreduce|reduce_scatter_block|scan), Open MPI, np=2\$" \
    "$bench" "$fake" "$tmp/allreduce"; rc=$?
for c in Allreduce:allreduce Reduce_scatter_block:reduce_scatter_block Scan:scan; do
    if [ $rc = 1 ] && grep -q "MPI ${c#*:}, Open MPI, np=2 \.\.\. FAILED.*rank 0 (0 of [0-9]* MPI_${c%:*} calls through numacoll)" "$tmp/allreduce.out" &&
        [ "$(numacoll_rows "$tmp/allreduce")" = 0 ]; then
        ok "MPI_${c%:*} not through numacoll (NUMACOLL_MPI_REDUCE=0 in the ranks): the step failed, no rows"
    else
        bad "NUMACOLL_MPI_REDUCE=0 in the ranks, MPI_${c%:*}: exit $rc, $(numacoll_rows "$tmp/allreduce") numacoll rows, output: $(tail -n 25 "$tmp/allreduce.out")"
    fi
done

# 3. a good run: its figures are kept, and the run is recorded
out="$tmp/good"
bench_run good BENCH_MPIS=openmpi "BENCH_ONLY=^MPI barrier, Open MPI, np=2\$|summary" \
    "$bench" "$build" "$out"; rc=$?
if [ $rc = 0 ] && [ "$(numacoll_rows "$out")" -gt 0 ]; then
    ok "good run: exit 0, numacoll's rows kept"
else
    bad "good run: exit $rc, $(numacoll_rows "$out") numacoll rows, output: $(tail -n 25 "$tmp/good.out")"
fi
s="$out/summary.md"
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null || s="$out/run.md"
for re in "^\| date \| [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8} UTC \(start\), [0-9:]{8} UTC" \
    "^\| host \| $(hostname)" "^\| CPU \| .+, $(nproc) CPUs \|" \
    "^\| load average .*\| start [0-9.]+ [0-9.]+ [0-9.]+, end [0-9.]+ [0-9.]+ [0-9.]+ \|" \
    "^\| MPI \| Open MPI [0-9]" "^\| numacoll \| commit [0-9a-f]{40}, tree (clean|dirty)"; do
    if grep -Eq -- "$re" "$s" 2>/dev/null; then ok "$(basename "$s") has /$re/"
    else bad "$(basename "$s") lacks /$re/: $(head -n 20 "$s" 2>&1)"; fi
done
[ $fail = 0 ] && echo "bench_honest: PASS"
exit $fail
