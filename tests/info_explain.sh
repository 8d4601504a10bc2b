#!/bin/bash
# numacoll-info --explain (issue 36): on a synthetic topology the barrier it names is a
# registered one (numacoll-info --json), its groups are numacoll-topo's, --parsable is all
# key:value lines and --json holds the same facts, the inline path ends where it should, bad
# arguments fail with a message naming what is allowed, no human line is over 100 columns,
# and what it explains is what a real team of the same size logs under NUMACOLL_VERBOSE=1.
#   info_explain.sh BIN_DIR
set -u
bin="$1"
info="$bin/numacoll-info"
topo="$bin/numacoll-topo"
bench="$bin/numacoll-bench"
SYN="pack:2 numa:2 l3:1 core:8 pu:1"
# the defaults, whatever the caller's environment holds
for v in $(env | sed -n 's/^\(NUMACOLL_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
failf() {
    echo "FAIL: $*"
    fail=1
}
# value of key $1 in the --parsable output $2 (the key up to the first ':')
val() { awk -v k="$1" 'index($0, k ":") == 1 { print substr($0, length(k) + 2); exit }' "$2"; }

# ---- --parsable on the synthetic machine: every line key:value ------------------------------
"$info" --explain --synthetic "$SYN" --np 16 --parsable >"$tmp/p" 2>"$tmp/err"
rc=$?
[ $rc = 0 ] ||
    failf "numacoll-info --explain --synthetic '$SYN' --np 16 --parsable: exit $rc:" \
        "$(cat "$tmp/err")"
[ -s "$tmp/p" ] || failf "--parsable printed nothing"
notkv=$(grep -Evn '^[A-Za-z0-9_.-]+:' "$tmp/p" | head -3)
[ -z "$notkv" ] || failf "--parsable lines that are not key:value: $notkv"
dups=$(cut -d: -f1 "$tmp/p" | sort | uniq -d | head -3)
[ -z "$dups" ] || failf "--parsable repeats keys: $dups"

# the configuration table's --parsable form too
"$info" --parsable >"$tmp/pc" 2>&1 || failf "numacoll-info --parsable: exit status $?"
notkv=$(grep -Evn '^[A-Za-z0-9_.-]+:' "$tmp/pc" | head -3)
[ -z "$notkv" ] && grep -q '^config\.NUMACOLL_BARRIER\.value:auto$' "$tmp/pc" ||
    failf "numacoll-info --parsable: not all key:value, or no config.NUMACOLL_BARRIER.value: $notkv"

# ---- the barrier it names is registered (numacoll-info --json lists it) ---------------------
algs=$("$info" --json | python3 -c 'import json, sys
print("\n".join(a["name"] for a in json.load(sys.stdin)["barrier_algorithms"]))')
[ -n "$algs" ] || failf "numacoll-info --json lists no barrier algorithm"
for k in barrier.auto.choice barrier.default barrier.logp.argmin; do
    a=$(val $k "$tmp/p")
    if [ -z "$a" ] || ! grep -qx -- "$a" <<<"$algs"; then
        failf "$k is '$a', not one of numacoll-info --json's algorithms: $(echo $algs)"
    fi
done
# 16 processes on 2 NUMA nodes of a 32-core machine: a hierarchy of 2 levels -> topo
[ "$(val barrier.auto.choice "$tmp/p")" = topo ] ||
    failf "auto picked '$(val barrier.auto.choice "$tmp/p")' on '$SYN' at np 16, expected topo"
[ "$(val bcast.tree "$tmp/p")" = topo ] ||
    failf "bcast.tree is '$(val bcast.tree "$tmp/p")', expected topo"

# ---- the groups are numacoll-topo's ---------------------------------------------------------
for map in core numa socket; do
    "$info" --explain --synthetic "$SYN" --np 16 --map-by $map --parsable >"$tmp/pm" 2>&1
    want=$("$topo" --synthetic "$SYN" --procs 16 --map-by $map --json)
    got=$(val topo.hierarchy "$tmp/pm")
    [ -n "$want" ] && [ "$got" = "$want" ] ||
        failf "map-by $map: explain's groups $got differ from numacoll-topo --json's $want"
done

# ---- --json holds the same facts as --parsable ----------------------------------------------
"$info" --explain --synthetic "$SYN" --np 16 --json >"$tmp/j" 2>&1 || failf "--json: exit status $?"
python3 - "$tmp/p" "$tmp/j" <<'EOF' || fail=1
import json, sys
facts = {}
for line in open(sys.argv[1]):
    k, _, v = line.rstrip("\n").partition(":")
    facts[k] = v
try:
    j = json.load(open(sys.argv[2]))["explain"]
except Exception as e:
    print("FAIL: --json is not a JSON object with 'explain':", e)
    sys.exit(1)
bad = []
if set(j) != set(facts):
    bad.append("keys differ: only --json %s, only --parsable %s"
               % (sorted(set(j) - set(facts))[:5], sorted(set(facts) - set(j))[:5]))
for k in set(j) & set(facts):
    v = j[k]
    same = (v == facts[k]) if isinstance(v, str) else \
           (v == json.loads(facts[k])) if isinstance(v, (dict, list)) else \
           (float(v) == float(facts[k]))
    if not same:
        bad.append("%s: --json %r, --parsable %r" % (k, v, facts[k]))
for b in bad[:5]:
    print("FAIL: --json against --parsable:", b)
sys.exit(1 if bad else 0)
EOF

# ---- the inline path ends at the inline limit -----------------------------------------------
"$info" --explain --synthetic "$SYN" --np 16 --bytes 8 --parsable >"$tmp/b8" 2>&1
[ "$(val bcast.msg.8.path "$tmp/b8")" = inline ] ||
    failf "--bytes 8: path '$(val bcast.msg.8.path "$tmp/b8")', expected inline"
"$info" --explain --synthetic "$SYN" --np 16 --bytes 4194304 --parsable >"$tmp/b4m" 2>&1
p4=$(val bcast.msg.4194304.path "$tmp/b4m")
[ -n "$p4" ] && [ "$p4" != inline ] || failf "--bytes 4194304: path '$p4', expected not inline"
[ "$p4" = queue ] || failf "--bytes 4194304: path '$p4', expected queue (CMA is off by default)"
lim=$(val bcast.inline.limit "$tmp/b8")
"$info" --explain --np 2 --bytes "$lim" --parsable >"$tmp/bl" 2>&1
"$info" --explain --np 2 --bytes $((lim + 1)) --parsable >"$tmp/bl1" 2>&1
at=$(val bcast.msg.$lim.path "$tmp/bl")
over=$(val bcast.msg.$((lim + 1)).path "$tmp/bl1")
[ "$at" = inline ] && [ "$over" = queue ] ||
    failf "the inline limit $lim: $lim bytes go '$at', one more '$over' (wanted inline, queue)"

# ---- the reductions' automatic choice (src/coll/reduce/registry.c) -------------------------
# np 16 on 2 NUMA nodes of 32 cores: hier for small messages, rsag for large ones; np 2: a
# reduce stays flat at every size; np 64 (more processes than the 32 CPUs): so does a reduce,
# and an allreduce is rbcast (a flat reduce to member 0 and its broadcast) at every size
for want in "16 8 allreduce hier" "16 1048576 allreduce rsag" "16 1048576 reduce rsag" \
    "2 1048576 allreduce rsag" "2 1048576 reduce flat" "64 1048576 allreduce rbcast" \
    "64 8 allreduce rbcast" "64 1048576 reduce flat"; do
    read -r np bytes kind alg <<<"$want"
    "$info" --explain --synthetic "$SYN" --np "$np" --parsable >"$tmp/r" 2>&1
    got=$(val "reduce.$bytes.$kind" "$tmp/r")
    [ "$got" = "$alg" ] || failf "reduce.$bytes.$kind at np $np on '$SYN' is '$got', expected $alg"
done

# ---- data movement's path by collective and block size (src/coll/move/state.c, its rule) --
# np 16 on 32 CPUs: the slots below NUMACOLL_MOVE_CMA_MIN (plain stores below
# NUMACOLL_MOVE_STREAM_MIN, non-temporal from it); from it, with NUMACOLL_MOVE_CMA_COST 1.5,
# single copy where the busiest member is done sooner: gather never (c < 1), scatter at
# np >= 3 (c < P-1), allgather at np 2 only (c (P-1) < P), alltoall always (c < 2); c 0.5:
# gather too, c 3: none at np 2; np 64 (oversubscribed): single copy where the bytes it
# saves the busiest member reach NUMACOLL_MOVE_CMA_READ_OVERSUB (80 KiB) per read: scatter
# from 80 KiB / 61.5 (1332 bytes), alltoall from 2 x 80 KiB, gather and allgather never;
# NUMACOLL_MOVE=copy: the slots
for want in "16 - gather 1024 copy plain" "16 - alltoall 16384 copy nt" \
    "16 - gather 1048576 copy nt" "16 - scatter 1048576 cma -" \
    "16 - allgather 1048576 copy nt" "16 - alltoall 1048576 cma -" \
    "2 - scatter 1048576 copy nt" "2 - allgather 1048576 cma -" "2 - alltoall 1048576 cma -" \
    "2 0.5 gather 1048576 cma -" "2 3 alltoall 1048576 copy nt" \
    "64 - alltoall 1048576 cma -" "64 - scatter 1048576 cma -" \
    "64 - scatter 1024 copy plain" "64 - scatter 8192 cma -" "64 - alltoall 65536 copy nt" \
    "64 - alltoall 262144 cma -" "64 - gather 16777216 copy nt" \
    "64 - allgather 16777216 copy nt" "copy - scatter 1048576 copy nt"; do
    read -r np cost kind bytes path stores <<<"$want"
    env=()
    [ "$cost" = - ] || env+=(NUMACOLL_MOVE_CMA_COST="$cost")
    if [ "$np" = copy ]; then
        env NUMACOLL_MOVE=copy "${env[@]}" "$info" --explain --synthetic "$SYN" --np 16 \
            --parsable >"$tmp/m" 2>&1
    else
        env "${env[@]}" "$info" --explain --synthetic "$SYN" --np "$np" --parsable >"$tmp/m" 2>&1
    fi
    got="$(val "move.$kind.$bytes.path" "$tmp/m") $(val "move.$kind.$bytes.owner_stores" "$tmp/m")"
    [ "$got" = "$path $stores" ] ||
        failf "move.$kind.$bytes at np $np (cost $cost): '$got', expected '$path $stores'"
done
[ "$(val move.alltoall.1048576.path_if_no_cma "$tmp/m")" = copy ] ||
    failf "move.alltoall.1048576.path_if_no_cma is not copy"

# ---- the default MPI preload: the manifest's first MPI (numacoll-info --mpis) --------------
manifest="$bin/../share/numacoll/mpis.tsv"
if [ -f "$manifest" ]; then
    first=$(awk -F'\t' '!/^#/ && NF { print $1 "/" $8; exit }' "$manifest")
    "$info" --explain --parsable >"$tmp/d" 2>&1
    got="$(val mpi.default.flavor "$tmp/d")/$(val mpi.default.name "$tmp/d")"
    [ "$got" = "$first" ] ||
        failf "--explain's default MPI is '$got', the manifest's first '$first'"
fi

# ---- bad arguments: exit status 2 and a message naming what is allowed ----------------------
bad() { # expected-message-regex args...
    local want="$1"
    shift
    local out rc
    out=$("$info" "$@" 2>&1)
    rc=$?
    if [ "$rc" != 2 ] || ! grep -Eq -- "$want" <<<"$out"; then
        failf "numacoll-info $* -> exit $rc, output: $out (wanted exit 2 and /$want/)"
    fi
}
bad "--np '0' is not valid; allowed: an integer in 1\.\.1048576" --explain --np 0
bad "--np 'abc' is not valid; allowed: an integer in 1\.\.1048576" --explain --np abc
bad "--np '\(missing\)' is not valid; allowed: an integer" --explain --np
bad "--bytes '-1' is not valid; allowed: a byte count 0\.\.2\^62" --explain --bytes -1
bad "--bytes '4X' is not valid; allowed: a byte count" --explain --bytes 4X
bad "--map-by 'board' is not valid; allowed: core, numa, socket" --explain --map-by board
bad "not a valid hwloc synthetic topology" --explain --synthetic "pack:2 widget:3" --np 4
bad "--json and --parsable exclude each other" --explain --json --parsable
bad "unknown argument '--bogus'; allowed: --config, --algorithms, --check, .*--explain" --bogus
out=$(NUMACOLL_BARRIER=nosuch "$info" --explain 2>&1)
rc=$?
[ $rc = 1 ] && grep -q "NUMACOLL_BARRIER='nosuch' is not valid; allowed: auto" <<<"$out" ||
    failf "NUMACOLL_BARRIER=nosuch numacoll-info --explain -> exit $rc: $out (wanted exit 1)"

# ---- human output: no line over 100 columns -------------------------------------------------
width() { # label command...
    local label="$1"
    shift
    "$@" >"$tmp/h" 2>&1 || failf "$label: exit status $?"
    local long
    long=$(awk 'length($0) > 100 { print length($0) ": " substr($0, 1, 60) "..." }' "$tmp/h" |
        head -3)
    [ -z "$long" ] || failf "$label: lines over 100 columns: $long"
    [ -s "$tmp/h" ] || failf "$label: no output"
}
width "numacoll-info" "$info"
width "numacoll-info --help" "$info" --help
width "numacoll-info with a long value" env NUMACOLL_TOPO_SYNTHETIC="$SYN" "$info" --config
width "--explain synthetic np 16" "$info" --explain --synthetic "$SYN" --np 16
width "--explain synthetic np 16, 8 B" "$info" --explain --synthetic "$SYN" --np 16 --bytes 8
width "--explain synthetic np 16, 4 MiB" "$info" --explain --synthetic "$SYN" --np 16 --bytes 4M
width "--explain synthetic np 64, 6000 B" "$info" --explain --synthetic "$SYN" --np 64 --bytes 6000
width "--explain this machine" "$info" --explain
width "--explain np 1" "$info" --explain --np 1
width "--explain np 200" "$info" --explain --np 200 --synthetic "pack:4 numa:2 l3:2 core:32 pu:2"

# ---- what it explains is what a real team logs ----------------------------------------------
# numacoll-bench forks a real team; with the model's constants configured nothing is measured,
# and NUMACOLL_OVERSUBSCRIBED=no makes 16 processes on this machine's CPUs a team like one on
# the synthetic machine's
agree() { # label np env...
    local label="$1" np="$2"
    shift 2
    env "$@" NUMACOLL_BCAST_MODEL_T=0.1 NUMACOLL_BCAST_MODEL_TW=200 \
        "$info" --explain --np "$np" --parsable >"$tmp/x" 2>&1
    env "$@" NUMACOLL_BCAST_MODEL_T=0.1 NUMACOLL_BCAST_MODEL_TW=200 NUMACOLL_VERBOSE=1 \
        "$bench" bcast --procs "$np" --reps 1 --iters 1 --sizes 8:8 --variants default \
        >"$tmp/log" 2>&1 ||
        failf "$label: numacoll-bench bcast --procs $np failed: $(tail -3 "$tmp/log")"
    local logged
    logged=$(python3 - "$tmp/log" <<'EOF'
import re, sys
t = open(sys.argv[1]).read()
pick = lambda rx: (re.search(rx, t) or [None, "?"])[1]
# the slots before a cut to fit /dev/shm (a run-time condition --explain names, not applies)
cut = re.search(r"queue cut from (\d+) to \d+ slots", t)
print(pick(r"auto barrier: (\S+)"), pick(r"bcast: segment .*?, f = (\d+)"),
      cut[1] if cut else pick(r"bcast: segment .*?, s = (\d+)"),
      pick(r"bcast: segment .*?, q = (\d+)"),
      pick(r"bcast: segment .*?, tree (\S+)"), pick(r"bcast: segment .*?\(k (\d+)\)"),
      pick(r"bcast: segment .*?, relay (on|off)"), pick(r"bcast: segment .*?inline <= (\d+)"),
      pick(r"bcast: segment .*?\(room (\d+)"))
EOF
)
    local relay=off
    [ "$(val bcast.relay "$tmp/x")" = 1 ] && relay=on
    local explained="" k
    for k in barrier.auto.choice bcast.queue.fragment bcast.queue.slots bcast.queue.sets \
        bcast.tree bcast.tree.k; do
        explained="$explained$(val $k "$tmp/x") "
    done
    explained="$explained$relay $(val bcast.inline.max "$tmp/x") $(val bcast.inline.room "$tmp/x")"
    [ "$logged" = "$explained" ] || failf "$label: a real team logged '$logged' (barrier f s q" \
        "tree k relay inline room), --explain says '$explained'"
}
agree "synthetic np 16" 16 NUMACOLL_TOPO_SYNTHETIC="$SYN" NUMACOLL_OVERSUBSCRIBED=no
agree "this machine np 2" 2
agree "this machine np 4, oversubscribed" 4 NUMACOLL_OVERSUBSCRIBED=yes
agree "synthetic np 8 map-by numa, set parameters" 8 NUMACOLL_TOPO_SYNTHETIC="$SYN" \
    NUMACOLL_TOPO_MAP_BY=numa NUMACOLL_OVERSUBSCRIBED=no NUMACOLL_BCAST_QUEUE_BYTES=1M \
    NUMACOLL_BCAST_SETS=4 NUMACOLL_BCAST_K=3 NUMACOLL_BCAST_INLINE_MAX=512

# ---- oversubscribed teams (issue 41): the allreduce is rbcast at every size, waits sleep in
# the kernel after NUMACOLL_WAIT_FUTEX_AFTER_US's auto value; not oversubscribed: neither ---
NUMACOLL_OVERSUBSCRIBED=yes "$info" --explain --np 16 --parsable >"$tmp/os" 2>&1 ||
    failf "--explain --np 16 (oversubscribed): exit status $?"
NUMACOLL_OVERSUBSCRIBED=no "$info" --explain --np 16 --parsable >"$tmp/nos" 2>&1 ||
    failf "--explain --np 16 (not oversubscribed): exit status $?"
for b in 8 4096 65536 1048576 16777216; do
    [ "$(val reduce.$b.allreduce "$tmp/os")" = rbcast ] ||
        failf "oversubscribed np 16: allreduce of $b bytes is '$(val reduce.$b.allreduce "$tmp/os")'," \
            "not rbcast"
    [ "$(val reduce.$b.reduce "$tmp/os")" = flat ] ||
        failf "oversubscribed np 16: reduce of $b bytes is '$(val reduce.$b.reduce "$tmp/os")', not flat"
    [ "$(val reduce.$b.allreduce "$tmp/nos")" != rbcast ] ||
        failf "np 16, not oversubscribed: allreduce of $b bytes is rbcast"
done
[ "$(val wait.futex_after_us "$tmp/os")" = 200 ] ||
    failf "oversubscribed: wait.futex_after_us is '$(val wait.futex_after_us "$tmp/os")', not 200"
[ "$(val wait.futex_after_us "$tmp/nos")" = -1 ] ||
    failf "not oversubscribed: wait.futex_after_us is '$(val wait.futex_after_us "$tmp/nos")', not -1"
NUMACOLL_OVERSUBSCRIBED=yes "$info" --explain --np 16 | grep -q "allreduce rbcast: oversubscribed" ||
    failf "--explain --np 16 (oversubscribed) does not give the reason for rbcast"

[ $fail = 0 ] && echo "info_explain: all checks passed"
exit $fail
