#!/bin/bash
# The tools' interfaces (issue 36, part 4): --help complete (every option the tool takes is
# in it, exit 0, no traceback), --version the project's, numacoll-info --check says so on
# success, numacoll-kvbench's rates carry units and its Get profile explains P1..P7, the
# broadcast variants have numacoll-bench --mpi's names in the fork-based benchmark too, and
# the tabular outputs' headers name their units.
#   tools_cli.sh BIN_DIR VERSION LIB_DIR
set -u
bin="$1" version="$2" lib="$3"
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad() { echo "FAIL: $*"; fail=1; }

# run NAME ARGS...: stdout+stderr in $out, exit status in $rc
run() { out=$("$@" 2>&1); rc=$?; }

# help TOOL-COMMAND... -- OPTION...: --help exits 0, prints to stdout, names every option
help() {
    local cmd=() o
    while [ "$1" != -- ]; do cmd+=("$1"); shift; done
    shift
    local h
    h=$("${cmd[@]}" --help 2>"$tmp/err"); local r=$?
    if [ $r != 0 ] || [ -s "$tmp/err" ]; then
        bad "${cmd[*]##*/} --help: exit $r, stderr: $(head -5 "$tmp/err")"
        return
    fi
    for o in "$@"; do
        grep -q -- "$o\b" <<<"$h" || bad "${cmd[*]##*/} --help does not document $o"
    done
}
help "$bin/numacoll-info" -- --config --algorithms --check --json --markdown --version --help
help "$bin/numacoll-topo" -- --synthetic --procs --map-by --levels --json --version --help
help "$bin/numacoll-kvbench" -- --mode --readers --lock --csv --reps --duration --fixed \
    --profile-get --profile-clock --iters --keylen --version --help
help "$bin/numacoll-bench" -- barrier bcast --mpi --version --help
help "$bin/numacoll-bench" barrier -- --procs --iters --reps --warmup --csv --algorithms \
    --synthetic --map-by --logp --version --help
help "$bin/numacoll-bench" bcast -- --procs --sizes --iters --reps --csv --mode --root --variants
help "$bin/numacoll-bench" --mpi bcast -- --impl --csv --csv-slowest --iters --reps --target-ms \
    --min-bytes --max-bytes --variants --native-label --root-shift --quiet --version --help
help "$bin/numacoll-bench" --mpi barrier -- --impl --csv --iters --reps --target-ms --variants
help "$bin/numacoll-plot" -- RESULTS_DIR --version --help
# numacoll-bench's own --help carries every command's options (its man page is made from it)
run "$bin/numacoll-bench" --help
for o in --warmup --logp --sizes --root --target-ms --csv-slowest --root-shift; do
    grep -q -- "$o" <<<"$out" || bad "numacoll-bench --help lacks $o (a command's option)"
done
# its usage lines name every collective the MPI benchmark accepts (those of --mpi's usage)
usage=$(awk '/^usage:/ { on = 1 } on { print } on && /^ *numacoll-bench --version/ { exit }' <<<"$out")
mpi_colls=$(sed -n '/^usage: numacoll-bench --mpi \[--impl/,/\[--csv/p' <<<"$out" |
    tr -s ' |,' '\n\n\n' | grep -E '^[a-z_]+$' | grep -v -E '^(usage|numacoll|openmpi|mpich)$')
[ -n "$mpi_colls" ] || bad "numacoll-bench --help: no collectives in --mpi's usage"
for c in $mpi_colls; do
    grep -qw -- "$c" <<<"$usage" || bad "numacoll-bench's usage lines lack the collective $c"
done
# help texts name units
run "$bin/numacoll-bench" --mpi bcast --help
grep -q "milliseconds" <<<"$out" && grep -q "slowest_med_us (the slowest rank's median)" <<<"$out" ||
    bad "numacoll-bench --mpi --help names no units: $out"
# the MPI binaries behind it print the same help, and the version, without MPI
for m in "$bin"/numacoll-bench-mpi-*; do
    [ -x "$m" ] || continue
    run "$m" bcast --iters 5 --help
    [ $rc = 0 ] && grep -q "slowest_med_us (the slowest rank's median)" <<<"$out" ||
        bad "${m##*/} bcast --iters 5 --help: exit $rc: $out"
    run "$m" barrier --version
    [ $rc = 0 ] && [ "$out" = "numacoll-bench (numacoll) $version" ] ||
        bad "${m##*/} barrier --version: exit $rc: $out"
done
run "$bin/numacoll-kvbench" --help
for w in "P1 entry" "P2 before the read lock" "P3 lock" "P4 key found" "P5 value copied" \
    "P6 lock released" "P7 exit" "seconds per repetition" "lock acquisitions per second"; do
    grep -q "$w" <<<"$out" || bad "numacoll-kvbench --help lacks '$w'"
done

# --version: "<tool> (numacoll) <project version>", exit 0, also after a command
for t in numacoll-info numacoll-topo numacoll-kvbench numacoll-bench numacoll-plot; do
    run "$bin/$t" --version
    [ $rc = 0 ] && [ "$out" = "$t (numacoll) $version" ] ||
        bad "$t --version: exit $rc, '$out' (wanted '$t (numacoll) $version')"
done
for c in "barrier" "bcast" "--mpi bcast"; do
    run "$bin/numacoll-bench" $c --version
    [ $rc = 0 ] && [ "$out" = "numacoll-bench (numacoll) $version" ] ||
        bad "numacoll-bench $c --version: exit $rc, '$out'"
done

# numacoll-info --check: one line on success, counting the NUMACOLL_* variables set
run env -u NUMACOLL_VERBOSE NUMACOLL_TIMEOUT=5 NUMACOLL_BARRIER=auto "$bin/numacoll-info" --check
[ $rc = 0 ] && grep -Eq "^numacoll-info: configuration OK: [0-9]+ NUMACOLL_\* variables? set, all valid$" <<<"$out" &&
    ! grep -q "configuration OK: [01] " <<<"$out" || bad "numacoll-info --check (valid): exit $rc, '$out'"
run env NUMACOLL_TIMEOUT=soon "$bin/numacoll-info" --check
[ $rc = 1 ] && ! grep -q "configuration OK" <<<"$out" && grep -q NUMACOLL_TIMEOUT <<<"$out" ||
    bad "numacoll-info --check (invalid): exit $rc, '$out'"

# numacoll-kvbench: rates with units (never a raw count), a header saying what they are
run "$bin/numacoll-kvbench" --mode read-only --readers 1 --fixed --lock rwlock --reps 1 --duration 0.05
row=$(grep "^rwlock " <<<"$out")
if [ $rc != 0 ] || ! grep -Eq "^rwlock +read-only +1 +[0-9.]+( [kMG])? acq/s +[0-9.]+( [kMG])? acq/s" <<<"$row" ||
    grep -Eq "[0-9]{5,}" <<<"$row" || ! grep -q "^# acq/s: lock acquisitions per second" <<<"$out"; then
    bad "numacoll-kvbench rates: exit $rc: $out"
fi
# the Get profile's output explains P1..P7 and names its unit
run "$bin/numacoll-kvbench" --profile-get --readers 1 --fixed --lock seqlock --iters 2 --profile-clock clock
if [ $rc != 0 ] || ! grep -q "^# .*P1 entry, P2 before the read lock" <<<"$out" ||
    ! grep -q "^# .*P7-P6" <<<"$out" || ! grep -Eq "^ns +P7-P1 +P2-P1" <<<"$out"; then
    bad "numacoll-kvbench --profile-get output: exit $rc: $out"
fi

# the broadcast's copy-mode variants: the library's names (numacoll_bcast_variant_name),
# accepted by the fork-based benchmark too; a name of no variant (stream:root) is refused
# with the allowed names
names=""
for so in "$lib"/libnumacoll.so "$lib"/libnumacoll_mpi.so; do
    [ -f "$so" ] && names=$(strings "$so" | grep -Ex 'copy:[a-z-]+' | sort -u | paste -sd,) && break
done
[ -n "$names" ] || names="copy:plain,copy:stream-root,copy:stream-recv,copy:stream"
run "$bin/numacoll-bench" bcast --procs 2 --sizes 64K:64K --reps 1 --iters 5 --variants "$names"
if [ $rc != 0 ]; then
    bad "numacoll-bench bcast --variants $names: exit $rc: $out"
else
    for n in ${names//,/ }; do
        grep -q "^$n " <<<"$out" || bad "numacoll-bench bcast: no row for variant $n: $out"
    done
fi
run "$bin/numacoll-bench" bcast --variants stream:root
[ $rc = 2 ] && grep -q "'stream:root' is not a variant of mode size; allowed: .*copy:stream-root" <<<"$out" ||
    bad "numacoll-bench bcast --variants stream:root: exit $rc: $out"
# the trees as in numacoll-bench --mpi (tree:<name>), the bare names accepted too
run "$bin/numacoll-bench" bcast --procs 2 --sizes 1K:1K --reps 1 --iters 5 --variants tree:chain,flat
[ $rc = 0 ] && grep -q "^tree:chain " <<<"$out" && grep -q "^tree:flat " <<<"$out" ||
    bad "numacoll-bench bcast --variants tree:chain,flat: exit $rc: $out"

# tabular output: units in the header
run "$bin/numacoll-bench" bcast --procs 1 --sizes 8:8 --reps 1 --iters 5 --variants default
grep -Eq "^variant +bytes +median_us \[min_us\.\.max_us\]" <<<"$out" ||
    bad "numacoll-bench bcast: no header with units: $out"

# numacoll-bench barrier: every row through the same call (numacoll_barrier, the team's
# default set to the row's algorithm), which the output says, so that "default
# (=dissemination)" and "dissemination" time the same code; orders alternate
run "$bin/numacoll-bench" barrier --procs 2 --reps 2 --iters 200 --algorithms dissemination,default
if [ $rc != 0 ] || ! grep -q "^# every row: numacoll_barrier with the team's default set to that algorithm" <<<"$out" ||
    ! grep -Eq "^algorithm +median_us +min_us +max_us" <<<"$out" || ! grep -q "^default (=" <<<"$out"; then
    bad "numacoll-bench barrier: exit $rc: $out"
fi
run "$bin/numacoll-bench" barrier --logp --reps 1
[ $rc = 0 ] && grep -Eq "^ +P +central_ns +combining_ns +dissemination_ns +choice" <<<"$out" ||
    bad "numacoll-bench barrier --logp: no unit on every column: exit $rc: $out"

# numacoll-plot: a directory that is not one is an error, not a traceback
run "$bin/numacoll-plot" "$tmp/none"
[ $rc = 2 ] && ! grep -q Traceback <<<"$out" || bad "numacoll-plot on a missing directory: exit $rc: $out"

[ $fail = 0 ] && echo "tools_cli: PASS"
exit $fail
