#!/bin/bash
# numacoll-bench's command line: bad values get exit status 2 and a message naming the
# option and what is allowed; the paper-figure modes (slots, fragment) write their rows.
#   bench_cli.sh BIN_DIR
set -u
bench="$1/numacoll-bench"
fail=0
bad() { # expected-message-regex args...
    local want="$1"; shift
    local out rc
    out=$("$bench" "$@" 2>&1); rc=$?
    if [ "$rc" != 2 ] || ! grep -Eq -- "$want" <<<"$out"; then
        echo "FAIL: numacoll-bench $* -> exit $rc, output: $out (wanted exit 2 and /$want/)"
        fail=1
    fi
}
bad "--procs '2x' is not valid; allowed: an integer in 1\.\.256" bcast --procs 2x
bad "--procs '0' is not valid" bcast --procs 0
bad "--reps '1000000' is not valid; allowed: an integer in 1\.\.1000" bcast --reps 1000000
bad "--iters 'abc' is not valid" bcast --iters abc
bad "--root 5 is not valid with --procs 2; allowed: 0\.\.1" bcast --root 5
bad "--root 'x' is not valid; allowed: a rank 0\.\.255, or shift" bcast --root x
bad "--mode fragment needs --procs >= 2" bcast --mode fragment --procs 1
bad "--mode 'xx'; allowed: size, slots, fragment" bcast --mode xx
bad "--sizes '5:3'; allowed: MIN:MAX" bcast --sizes 5:3
bad "--procs '1e3' is not valid; allowed: an integer in 1\.\.4096" barrier --procs 1e3
bad "unknown command 'bcats'; allowed: barrier, bcast, --mpi" bcats
# numacoll-kvbench: whole numbers in range only (an int that would wrap is refused)
bench="$1/numacoll-kvbench"
bad "numacoll-kvbench: --readers '2x' is not valid; allowed: an integer in 1\.\.256" --mode read-only --readers 2x
bad "--readers '4294967297' is not valid" --mode read-only --readers 4294967297
bad "--keylen '0' is not valid; allowed: an integer in 1\.\." --mode read-only --readers 1 --keylen 0
bad "--duration '1s' is not valid; allowed: seconds in \\(0, 60\\]" --mode read-only --readers 1 --duration 1s
bad "--duration '0' is not valid" --mode read-only --readers 1 --duration 0
bench="$1/numacoll-bench"
# the MPI mode checks its options before MPI_Init (no launcher needed)
if ls "$1"/numacoll-bench-mpi-* >/dev/null 2>&1; then
    bad "--reps '5x' is not valid; allowed: an integer in 1\.\.1000" --mpi bcast --reps 5x
    bad "--target-ms '0' is not valid" --mpi bcast --target-ms 0
    bad "--min-bytes '4Q' is not valid; allowed: a size like" --mpi bcast --min-bytes 4Q
    bad "unknown option '--frob'" --mpi barrier --frob 1
    bad "unknown collective 'allreduc'; allowed: barrier, bcast, allreduce, reduce, reduce_scatter_block, scan" --mpi allreduc
    bad "--min-bytes '12' is not valid; allowed: a multiple of 8 bytes" --mpi allreduce --min-bytes 12
    bad "--max-bytes '2G' is not valid; allowed: a multiple of 8 bytes .* from 8 to 1G" \
        --mpi reduce --max-bytes 2G
    bad "--min-bytes 1024 is above --max-bytes 64" --mpi allreduce --min-bytes 1K --max-bytes 64
    bad "--root is an option of reduce \(an allreduce has no root\)" --mpi allreduce --root 1
    bad "--root 'x' is not valid; allowed: an integer in 0\.\." --mpi reduce --root x
    bad "unknown option '--root-shift' for reduce; allowed: .*--root," --mpi reduce --root-shift
    bad "--root is an option of gather, gatherv, scatter and scatterv" --mpi allgather --root 1
    bad "--max-bytes '512M' is not valid; allowed: a block size from 1 byte to 256M" \
        --mpi scatterv --max-bytes 512M
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Fig. 7: one row per s and its normalised twin, s = 1 normalised to exactly 1
if ! "$bench" bcast --mode slots --sizes 64K:64K --reps 1 --iters 20 --csv "$tmp/s.csv" >/dev/null; then
    echo "FAIL: slots mode exited $?"; fail=1
fi
ns=$(grep -c '^bcast,queue:s=' "$tmp/s.csv" 2>/dev/null)
nn=$(grep -c '^bcast,norm:s=' "$tmp/s.csv" 2>/dev/null)
if [ "${ns:-0}" -lt 5 ] || [ "$ns" != "$nn" ] || ! grep -q '^bcast,norm:s=1,2,65536,1\.0000,' "$tmp/s.csv"; then
    echo "FAIL: slots CSV: $ns queue rows, $nn norm rows:"; cat "$tmp/s.csv"; fail=1
fi
# Fig. 8/9: a measured row and a model row (positive time) for every f
if ! "$bench" bcast --mode fragment --sizes 256K:256K --reps 1 --iters 5 --csv "$tmp/f.csv" >/dev/null; then
    echo "FAIL: fragment mode exited $?"; fail=1
fi
nq=$(grep -c '^bcast,queue:f=' "$tmp/f.csv" 2>/dev/null)
nm=$(awk -F, '$2 ~ /^model:f=/ && $5 > 0' "$tmp/f.csv" 2>/dev/null | wc -l)
if [ "${nq:-0}" -lt 5 ] || [ "$nq" != "$nm" ]; then
    echo "FAIL: fragment CSV: $nq measured rows, $nm model rows with a positive time:"
    cat "$tmp/f.csv"; fail=1
fi
# --root shift (IMB's -root_shift on): three roots take turns; every receiver checks the
# data of each call (the run fails on a wrong byte), on the inline and the queue path
if ! out=$("$bench" bcast --procs 3 --root shift --sizes 512:64K --reps 1 --iters 30 \
        --variants default,chain,queue,limit:memcpy 2>&1) ||
    ! grep -q "root shift (i mod 3)" <<<"$out" || [ "$(grep -c '^default ' <<<"$out")" != 8 ]; then
    echo "FAIL: --root shift: $out"; fail=1
fi
# the streaming thresholds a team applies (its verbose set-up line): oversubscribed and
# NUMACOLL_BCAST_STREAM_MIN unset, the root streams only where the receivers do
# (STREAM_OUT_MIN); set, it is kept; not oversubscribed, the defaults (16 KiB / 256 KiB)
streams() { # expected "root / receivers" env...
    local want="$1"; shift
    local out
    out=$(env "$@" NUMACOLL_VERBOSE=1 "$bench" bcast --procs 2 --sizes 1:1 --reps 1 --iters 5 2>&1)
    if ! grep -q "streamed copies from $want bytes" <<<"$out"; then
        echo "FAIL: $* -> wanted 'streamed copies from $want bytes' in: $out"; fail=1
    fi
}
streams "262144 (root) / 262144 (receivers)" NUMACOLL_OVERSUBSCRIBED=yes
streams "65536 (root) / 65536 (receivers)" NUMACOLL_OVERSUBSCRIBED=yes NUMACOLL_BCAST_STREAM_OUT_MIN=64K
streams "16384 (root) / 262144 (receivers)" NUMACOLL_OVERSUBSCRIBED=yes NUMACOLL_BCAST_STREAM_MIN=16K
streams "16384 (root) / 262144 (receivers)" NUMACOLL_OVERSUBSCRIBED=no
# the model's fragment stays within the queue budget b whatever t_W is: f <= b / (2q), so
# s = b / f >= 2q buffers take at most b (4 MiB by default, 1 MiB set here); a t_W of 5 ms
# once gave f = 19 MB, s = 4: 77 MB per process. Also the write prefetch shows (on by default)
budget() { # budget-bytes wanted-prefetch env...
    local cap="$1" pf="$2"; shift 2
    local out line qb f s
    out=$(env "$@" NUMACOLL_VERBOSE=1 "$bench" bcast --procs 2 --sizes 1:1 --reps 1 --iters 5 2>&1)
    line=$(grep -m1 "bcast: segment" <<<"$out")
    qb=$(sed -n 's/.*queue b = \([0-9]*\) per process.*/\1/p' <<<"$line")
    f=$(sed -n 's/.*, f = \([0-9]*\) (model), s = \([0-9]*\),.*/\1/p' <<<"$line")
    s=$(sed -n 's/.*, f = \([0-9]*\) (model), s = \([0-9]*\),.*/\2/p' <<<"$line")
    if [ -z "$qb" ] || [ -z "$f" ] || [ "$qb" -gt "$cap" ] || [ $((f * s)) -gt "$cap" ]; then
        echo "FAIL: $* -> wanted f (model) * s = queue b <= $cap in: $line"; fail=1
    fi
    if ! grep -q "write prefetch $pf)" <<<"$line"; then
        echo "FAIL: $* -> wanted 'write prefetch $pf' in: $line"; fail=1
    fi
}
budget 4194304 on NUMACOLL_BCAST_MODEL_TW=5000000
budget 1048576 off NUMACOLL_BCAST_MODEL_TW=5000000 NUMACOLL_BCAST_QUEUE_BYTES=1M NUMACOLL_BCAST_PREFETCH=0
budget 4194304 on NUMACOLL_BCAST_SETS=4 NUMACOLL_BCAST_MODEL_TW=20000000
[ $fail = 0 ] && echo "bench_cli: PASS"
exit $fail
