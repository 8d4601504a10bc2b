#!/bin/bash
# `make bench`: numacoll against the native MPI collectives on this machine.
#
#   tools/scripts/dev/bench.sh [--build] [--dry-run] [BUILD_DIR [RESULTS_DIR]]   (build, results)
#
#   --build     configure and build BUILD_DIR first (cmake; its output goes to the log, the
#               terminal gets one line; CMAKE_FLAGS: extra configure arguments)
#   --dry-run   print the numbered steps and exit
#
# Runs, one numbered step at a time ("step 7/35: MPI bcast, Open MPI, np=2 ... 41 s"; every
# command and its output go to RESULTS_DIR/bench.log):
#   1. the fork-based core benchmarks: barrier at P = nproc and P = 8, bcast at P = 2, and
#      the paper's broadcast parameter figures (time vs s, Fig. 7; vs f with the model,
#      Fig. 8/9) in model_bcast_{slots,fragment}.csv; paper 1's barrier table (every
#      algorithm at P = 2, 4, 8 in 5 runs: paper1_barrier_runs.csv) and the groups of its
#      Fig. 2/3 (paper1_groups_fig{2,3}.json); paper 2's LogP parameters and model
#      (logp_params.csv, logp_model.csv)
#   2. the MPI mode for every MPI built (Open MPI, MPICH): barrier at np = nproc and an
#      oversubscribed np = 8, bcast at np = 2 (and np = 8 with Open MPI); native (Open MPI:
#      also coll/sm as `native-sm`), numacoll's default, every numacoll algorithm (bcast:
#      the tree and CMA variants, with Open MPI) and the references limit:signal and
#      limit:memcpy measured alternately in one run. Bcast figures: OSU's mean over the
#      ranks in mpi_bcast.csv, the slowest rank's in slowest_mpi_bcast.csv (same run)
#      The reductions (MPI_DOUBLE, MPI_SUM, 8 B - 4 MiB): allreduce and reduce at np = 2 and
#      (Open MPI) an oversubscribed np = 8, rows native, native-sm, default, every reduction
#      algorithm and the references limit:inline and limit:fold: mpi_{allreduce,reduce}.csv
#      (BENCH_QUICK=1: up to 64 KiB, np = 8 with fewer calls)
#      MPI_Reduce_scatter_block (the size: each rank's block) and MPI_Scan the same way, rows
#      native, native-sm, default, core (numacoll's C call on the communicator's team) and
#      the floor limit:fold: mpi_{reduce_scatter_block,scan}.csv (np = 8: blocks up to
#      BENCH_REDUCE_MAX / 8, the allreduce's largest vector)
#      The gather family (MPI_BYTE blocks of 1 B - 4 MiB per member): allgather, gather,
#      scatter and alltoall (blocks per pair) at np = 2 and (Open MPI) np = 8, rows native, native-sm, default and the floor
#      limit:xcore (every member copies the bytes it must receive from their owners' shared
#      memory) and the reference limit:cma (the same bytes by process_vm_readv) in one launch, then `default` again under NUMACOLL_MOVE=copy and =cma (the
#      copy mode is a process's setting) as move:copy and move:cma in two more launches:
#      mpi_{allgather,gather,scatter,alltoall}.csv (BENCH_MOVE_MAX; quick: up to 64 KiB)
#   2b. the broadcast's target sizes again in BENCH_LAUNCHES (default 6) separate launches
#      (launches_mpi_bcast.csv): how often a target holds as the VM's regime changes;
#      then in as many launches the other collectives (allgather, gather, scatter, alltoall,
#      reduce_scatter_block, scan at np = 2; alltoall, reduce_scatter_block, scan
#      oversubscribed at np = 8, Open MPI), rows native, native-sm and default
#      (launches_mpi_coll.csv): in how many launches default <= 1.0x the best native
#   2c. oversubscribed far beyond the CPUs (Open MPI, np = 16 and 32, BENCH_STARVE_NP; about
#      30 s each): barrier, bcast (1 B, 64 KiB, 4 MiB) and allreduce (8 B, 64 KiB, 4 MiB),
#      rows native and default, one launch per collective and size, into
#      mpi_{barrier,bcast,allreduce}.csv (the summary's headline has a row per np); target:
#      default <= 1.0x native at every size (BENCH_QUICK=1: np = 16, the small sizes only)
#   3. the key-value store lock schemes (numacoll-kvbench, every mode and lock) and the
#      Get profile of paper 4's Table 1 (kvdb_get_profile.csv)
#   4. RESULTS_DIR/summary.md (numacoll-plot: the headline table of ratios first, this
#      run's host, CPU, load, MPI versions, numacoll commit and date from run.md, the
#      details and the four papers) and PNG plots (matplotlib); run_info.csv names the
#      machine for the plots' titles
# and ends with a headline table (numacoll's default against the best native of the same
# run); the full tables are in summary.md.
#
# No number is reported for numacoll unless numacoll ran it:
#   - the environment is checked first (`numacoll-info --check`, and NUMACOLL_DISABLE=1 /
#     NUMACOLL_MPI_BCAST=0, which would send the MPI calls to the native MPI): an invalid
#     or disabling setting stops the run before any step, naming the variable (exit 2);
#   - every MPI run prints numacoll's call counters (NUMACOLL_MPI_STATS=1): each rank must
#     report its MPI's library and barriers (bcast: every MPI_Bcast call) through
#     numacoll, else the step fails and its rows are dropped;
#   - a step's CSV rows reach RESULTS_DIR only when the step succeeded.
# Exit status: 0 when every step ran, 1 when a step failed or was skipped (all are named at
# the end and in summary.md), 2 when the run could not start.
#
# Knobs (environment): BENCH_REPS (repetitions, default 11), BENCH_TARGET_MS (time per
# sample run, default 20), BENCH_BCAST_MAX (largest bcast, default 4M), BENCH_REDUCE_MAX
# (largest allreduce, reduce and scan, and reduce_scatter_block's block, default 4M; quick:
# 64K), BENCH_MOVE_MAX (largest block of allgather, gather, scatter, alltoall, default 4M;
# quick: 64K), BENCH_QUICK=1
# (a smoke run of 4-5 minutes on 2 CPUs: 3 repetitions, 5 ms samples, bcast up to 64K, fewer
# calls, variants and sizes (the fragment figure at 1 MiB), no oversubscribed MPI broadcast,
# no target launches), BENCH_LAUNCHES (launches of the broadcast's target sizes, default 6),
# BENCH_MPIS (the MPIs to measure, default "openmpi mpich"; one not built is a skipped
# step), BENCH_STARVE_NP (the process counts of step 2c, default "16 32"; quick: 16),
# BENCH_ONLY (an extended regex: only the steps whose description matches, e.g.
# 'MPI barrier|summary'; see --dry-run).
set -u
SRC="$(cd "$(dirname "$0")/../../.." && pwd)"
usage() { sed -n '4,8p' "$0" | sed 's/^# \{0,1\}//'; }
DO_BUILD=0
DRY=0
pos=()
for a in "$@"; do
    case "$a" in
    --build) DO_BUILD=1 ;;
    --dry-run) DRY=1 ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "bench: unknown option '$a'" >&2; usage >&2; exit 2 ;;
    *) pos+=("$a") ;;
    esac
done
if [ ${#pos[@]} -gt 2 ]; then usage >&2; exit 2; fi
BUILD="${pos[0]:-build}"
OUT="${pos[1]:-results}"
BIN="$BUILD/bin"
NP=$(nproc 2>/dev/null || echo 2)
QUICK="${BENCH_QUICK:-0}"
REPS="${BENCH_REPS:-11}"
TMS="${BENCH_TARGET_MS:-20}"
BMAX="${BENCH_BCAST_MAX:-4M}"
MPIS="${BENCH_MPIS:-openmpi mpich}"
ONLY="${BENCH_ONLY:-}"
LAUNCHES="${BENCH_LAUNCHES:-6}"
CORE_BAR=()
CORE_BAR8=(--iters 1000 --reps 5)
CORE_BC=(--sizes "1:$BMAX")
MODEL_REPS=5
MODEL_FRAG=()
KV_ARGS=(--reps 5)
KV_PROFILE=(--iters 200)
PAPER1_ITERS=1000
BAR8_MPICH=(--iters 200)
RMAX="${BENCH_REDUCE_MAX:-4M}"
RED8=()
MMAX="${BENCH_MOVE_MAX:-4M}"
MOVE8=()
STARVE_NP="${BENCH_STARVE_NP:-16 32}"
STARVE_SPECS="barrier:1 bcast:1 bcast:64K bcast:4M allreduce:8 allreduce:64K allreduce:4M"
STARVE_ARGS=(--reps 5)
if [ "$QUICK" = 1 ]; then
    REPS="${BENCH_REPS:-3}"; TMS="${BENCH_TARGET_MS:-5}"; BMAX="${BENCH_BCAST_MAX:-64K}"
    CORE_BAR=(--iters 500 --reps 3)
    CORE_BAR8=(--iters 200 --reps 3)
    CORE_BC=(--sizes 1:64K --reps 2 --iters 200)
    MODEL_REPS=1
    MODEL_FRAG=(--sizes 1M:1M)
    KV_ARGS=(--reps 1 --duration 0.02)
    KV_PROFILE=(--iters 20)
    PAPER1_ITERS=300
    BAR8_MPICH=(--iters 20 --variants native,default)
    RMAX="${BENCH_REDUCE_MAX:-64K}"
    RED8=(--reps 2 --iters 100)
    MMAX="${BENCH_MOVE_MAX:-64K}"
    MOVE8=(--reps 2 --iters 100)
    LAUNCHES="${BENCH_LAUNCHES:-0}"
    STARVE_NP="${BENCH_STARVE_NP:-16}"
    STARVE_SPECS="barrier:1 bcast:1 allreduce:8"
    STARVE_ARGS=(--reps 3)
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_base_warn_component_unused=0

mpi_name() { case "$1" in openmpi) echo "Open MPI" ;; mpich) echo MPICH ;; *) echo "$1" ;; esac; }
now() { date +%s; }
START=$(now)
LOG="$OUT/bench.log"
STAGE="$OUT/.step"
log() { [ "$DRY" = 1 ] || printf '[bench %4ss] %s\n' "$(($(now) - START))" "$*" >>"$LOG"; }
say() { printf '%s\n' "$*"; log "$*"; }

# ---- steps -------------------------------------------------------------------------------
# The plan runs twice: once to count (and to list with --dry-run), once to run.
MODE=count
TOTAL=0
STEP=0
FAILED=()
SKIPPED=()
PASSED=0
selected() { [ -z "$ONLY" ] || [[ "$1" =~ $ONLY ]]; }
why() { printf '%s\n' "$*" >>"$STAGE/.reason"; } # a failing step's reason, for the terminal
merge_stage() { # the step's CSV files into RESULTS_DIR (one header per file), and JSON files
    local f name
    for f in "$STAGE"/*.json; do
        [ -f "$f" ] || continue
        cp "$f" "$OUT/"
    done
    for f in "$STAGE"/*.csv; do
        [ -f "$f" ] || continue
        name="$(basename "$f")"
        if [ -s "$OUT/$name" ]; then tail -n +2 "$f" >>"$OUT/$name"; else cp "$f" "$OUT/$name"; fi
    done
}
run() { # description, command... (output to the log; a failure is reported, not fatal)
    local d="$1"; shift
    selected "$d" || return 0
    if [ "$MODE" = count ]; then
        TOTAL=$((TOTAL + 1))
        [ "$DRY" = 1 ] && printf 'step %d: %s\n' "$TOTAL" "$d"
        return 0
    fi
    STEP=$((STEP + 1))
    rm -rf "$STAGE" && mkdir -p "$STAGE"
    local t0 rc dt reason
    t0=$(now)
    printf 'step %d/%d: %s ... ' "$STEP" "$TOTAL" "$d"
    { echo; log "step $STEP/$TOTAL: $d"; echo "\$ $*"; } >>"$LOG"
    "$@" >>"$LOG" 2>&1
    rc=$?
    dt=$(($(now) - t0))
    if [ $rc -eq 0 ]; then
        merge_stage
        echo "$dt s"
        log "step $STEP/$TOTAL done in $dt s"
        PASSED=$((PASSED + 1))
    else
        reason="$(paste -sd ';' "$STAGE/.reason" 2>/dev/null | sed 's/;/; /g')"
        [ -n "$reason" ] || reason="exit status $rc"
        echo "FAILED after $dt s: $reason"
        log "step $STEP/$TOTAL FAILED after $dt s: $reason (its rows are not kept)"
        FAILED+=("step $STEP ($d): $reason")
    fi
    rm -rf "$STAGE"
    return 0
}
skip() { # description, reason: a step that cannot run here
    local d="$1" r="$2"
    selected "$d" || return 0
    if [ "$MODE" = count ]; then
        TOTAL=$((TOTAL + 1))
        [ "$DRY" = 1 ] && printf 'step %d: %s (will be skipped: %s)\n' "$TOTAL" "$d" "$r"
        return 0
    fi
    STEP=$((STEP + 1))
    printf 'step %d/%d: %s ... skipped: %s\n' "$STEP" "$TOTAL" "$d" "$r"
    log "step $STEP/$TOTAL: $d: skipped: $r"
    SKIPPED+=("step $STEP ($d): $r")
}

# ---- MPI runs ----------------------------------------------------------------------------
# check_numacoll OUTPUT MPI NP COLL: did numacoll run this launch? Every rank must print
# numacoll's counters (NUMACOLL_MPI_STATS=1, at MPI_Finalize) for MPI, with barriers through
# numacoll (COLL barrier) or every MPI_Bcast / MPI_Allreduce / MPI_Reduce / MPI_Allgather /
# ... call through numacoll (COLL bcast, allreduce, reduce, reduce_scatter_block, scan,
# allgather, gather, scatter, alltoall and their v-forms). An invalid
# NUMACOLL_* value, NUMACOLL_DISABLE, a failed set-up or a library of the other MPI would
# give no line, or zero calls.
check_numacoll() {
    local out="$1" mpi="$2" np="$3" coll="$4" res
    if grep -q "numacoll is not active on this communicator" "$out"; then
        why "numacoll was not active in the run ('default' would be the native MPI's)"
        return 1
    fi
    res="$(awk -v mpi="$mpi" -v coll="$coll" '
        /^numacoll-mpi stats \[/ {
            line = $0
            if (!match(line, /\[[a-z]+ (rank|pid) [0-9]+\]/)) next
            split(substr(line, RSTART + 1, RLENGTH - 2), id, " ")
            if (id[1] != mpi) { other = other " " id[1]; next }
            n++
            match(line, /MPI_Barrier [0-9]+ \(numacoll [0-9]+/)
            split(substr(line, RSTART, RLENGTH), b, /[ (]+/)   # MPI_Barrier N numacoll M
            match(line, /MPI_Bcast [0-9]+ \(numacoll [0-9]+/)
            split(substr(line, RSTART, RLENGTH), c, /[ (]+/)
            if (coll ~ /^(allreduce|reduce|reduce_scatter_block|scan)$/ ||
                coll ~ /^(allgather|gather|scatter|alltoall)v?$/) {
                name = "MPI_" toupper(substr(coll, 1, 1)) substr(coll, 2)
                match(line, name " [0-9]+ [(]numacoll [0-9]+")
                split(substr(line, RSTART, RLENGTH), c, /[ (]+/)
                if (c[4] + 0 == 0 || c[4] + 0 < c[2] + 0)
                    bad = bad (bad ? "," : "") " rank " id[3] " (" c[4] " of " c[2] " " \
                          c[1] " calls through numacoll)"
                next
            }
            if (coll == "barrier" && b[4] + 0 == 0) bad = bad (bad ? "," : "") " rank " id[3] " (0 barriers through numacoll)"
            if (coll == "bcast" && (c[4] + 0 == 0 || c[4] + 0 < c[2] + 0))
                bad = bad (bad ? "," : "") " rank " id[3] " (" c[4] " of " c[2] " MPI_Bcast calls through numacoll)"
        }
        END { printf "%d|%s|%s", n, bad, other }' "$out")"
    local n="${res%%|*}" rest="${res#*|}"
    local bad="${rest%%|*}" other="${rest#*|}"
    if [ -n "$other" ]; then
        why "the ranks ran numacoll's library for$other, not for $mpi"
        return 1
    fi
    if [ "$n" != "$np" ]; then
        why "numacoll did not run it: $n of $np ranks reported numacoll's call counters" \
            "(an invalid NUMACOLL_* value or a library that was not loaded: see the log)"
        return 1
    fi
    if [ -n "$bad" ]; then
        why "not every call went through numacoll:$bad"
        return 1
    fi
    return 0
}

mpi_bench() { # mpi np collective extra-bench-args... -- extra-launcher-args...
    local mpi="$1" np="$2" coll="$3"; shift 3
    local bargs=() largs=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do bargs+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    largs=("$@")
    local csv="${MB_CSV:-$STAGE/mpi_${coll}.csv}" slow=() out="$STAGE/.out" rc cmd
    # the broadcast's slowest-rank figures of the same run go to a second CSV (not for the
    # target launches below, which set MB_CSV)
    if [ "$coll" = bcast ] && [ -z "${MB_CSV:-}" ]; then
        slow=(--csv-slowest "$STAGE/slowest_mpi_bcast.csv")
    fi
    case "$mpi" in
    openmpi) cmd=("$(mpi_recorded "$mpi" 5 mpirun.openmpi)" --oversubscribe -np "$np") ;;
    mpich) # Hydra leaves ranks unbound unless asked (Open MPI binds to core up to 2
        # ranks, to socket beyond): bind to distinct cores when not oversubscribed, so that
        # both MPIs' ranks sit on their own CPU like the fork benchmark's
        cmd=("$(mpi_recorded "$mpi" 5 mpiexec.mpich)")
        if [ "$np" -le "$NP" ]; then cmd+=(-bind-to core); fi
        cmd+=(-n "$np") ;;
    esac
    cmd+=("${largs[@]+"${largs[@]}"}" "$BIN/numacoll-bench" --mpi "$coll" --csv "$csv"
        "${slow[@]+"${slow[@]}"}" --reps "$REPS" --target-ms "$TMS" "${bargs[@]+"${bargs[@]}"}")
    # MB_ENV: NAME=VALUE words for the ranks (a process's copy mode, NUMACOLL_MOVE)
    echo "\$ ${MB_ENV:+$MB_ENV }NUMACOLL_MPI_STATS=1 ${cmd[*]}"
    # shellcheck disable=SC2086 # MB_ENV: words
    env ${MB_ENV:-} NUMACOLL_MPI_STATS=1 "${cmd[@]}" >"$out" 2>&1
    rc=$?
    cat "$out"
    if [ $rc -ne 0 ]; then
        why "the launch exited with status $rc"
        grep -m1 -E "^numacoll[^ ]*: " "$out" | sed 's/^/    /' >>"$STAGE/.reason"
        return 1
    fi
    check_numacoll "$out" "$mpi" "$np" "$coll"
}

move_bench() { # mpi np collective extra-bench-args...: the rows of one launch, then the
    # default again under each copy mode (NUMACOLL_MOVE, a process's setting) as move:<mode>
    local mpi="$1" np="$2" coll="$3" mode
    shift 3
    mpi_bench "$mpi" "$np" "$coll" --max-bytes "$MMAX" \
        --variants native,native-sm,default,limit:xcore,limit:cma "$@" || return 1
    for mode in copy cma; do
        MB_ENV="NUMACOLL_MOVE=$mode" mpi_bench "$mpi" "$np" "$coll" --max-bytes "$MMAX" \
            --variants "move:$mode" --default-label "move:$mode" "$@" || return 1
    done
}

block_of() { # SIZE NP: the bytes of one of NP blocks of SIZE (64, 4K, 16M, 1G), a multiple
    # of 8 bytes and at least 8
    local n="${1%[KkMmGg]}" m=1 b
    [[ "$n" =~ ^[0-9]+$ ]] || { echo "$1"; return; } # numacoll-bench names what is wrong
    case "$1" in *[Kk]) m=1024 ;; *[Mm]) m=1048576 ;; *[Gg]) m=1073741824 ;; esac
    b=$((n * m / $2 / 8 * 8))
    echo $((b < 8 ? 8 : b))
}

root_shift() { # mpi variants
    local max=1M
    [ "$QUICK" = 1 ] && max=$BMAX
    MB_CSV="$STAGE/rootshift_mpi_bcast.csv" mpi_bench "$1" 2 bcast --root-shift \
        --max-bytes "$max" --variants "$2"
}

launch_part() { # mpi launch min max variants
    local tmp="$STAGE/.launch.csv"
    MB_CSV="$tmp" mpi_bench "$1" 2 bcast --reps 5 --min-bytes "$3" --max-bytes "$4" \
        --variants "$5" --quiet || return 1
    { echo "$(head -n 1 "$tmp"),launch"; tail -n +2 "$tmp" | sed "s/\$/,$2/"; } \
        >"$STAGE/launches_mpi_bcast.csv"
}

coll_launch() { # mpi np launch: the collectives of the targets over launches (step 2b), one
    # mpirun each, rows native, native-sm and default; sizes as in step 2 (np = 8:
    # reduce_scatter_block's blocks up to BENCH_REDUCE_MAX / 8, alltoall's up to 1 MiB)
    local tmp="$STAGE/.launch.csv" out="$STAGE/launches_mpi_coll.csv" coll max
    local colls="allgather gather scatter alltoall reduce_scatter_block scan"
    # 3 samples of 10 ms; oversubscribed, where one call takes milliseconds and the
    # scheduler's slices add their own spread, 5 of 20 ms
    local reps=(--reps 3 --target-ms 10)
    if [ "$2" -gt 2 ]; then
        colls="alltoall reduce_scatter_block scan"
        reps=(--reps 5 --target-ms 20)
    fi
    for coll in $colls; do
        max="$MMAX"
        case "$coll" in reduce_scatter_block | scan) max="$RMAX" ;; esac
        if [ "$2" -gt 2 ]; then
            [ "$coll" = reduce_scatter_block ] && max="$(block_of "$RMAX" "$2")"
            [ "$coll" = alltoall ] && max=1M
        fi
        rm -f "$tmp"
        MB_CSV="$tmp" mpi_bench "$1" "$2" "$coll" "${reps[@]}" --max-bytes "$max" \
            --variants native,native-sm,default --quiet || return 1
        [ -s "$out" ] || echo "$(head -n 1 "$tmp"),launch" >"$out"
        tail -n +2 "$tmp" | sed "s/\$/,$3/" >>"$out"
    done
}

starve_bench() { # np: native and default of a few sizes, one launch each (sizes double
    # from --min-bytes, so a launch per size keeps the step short)
    local np="$1" spec
    for spec in $STARVE_SPECS; do
        set -- ${spec//:/ }
        mpi_bench openmpi "$np" "$1" --min-bytes "$2" --max-bytes "$2" \
            --variants native,default "${STARVE_ARGS[@]}" || return 1
    done
}

paper1_runs() { # the paper's barrier method: 5 runs (launches) of every algorithm at each P
    local run p tmp="$STAGE/.run.csv" csv="$STAGE/paper1_barrier_runs.csv"
    for run in 1 2 3 4 5; do
        for p in 2 4 8; do
            rm -f "$tmp"
            "$BIN/numacoll-bench" barrier --procs "$p" --iters "$PAPER1_ITERS" --reps 1 \
                --csv "$tmp" || return 1
            [ -s "$csv" ] || echo "$(head -n 1 "$tmp"),run" >"$csv"
            tail -n +2 "$tmp" | sed "s/\$/,$run/" >>"$csv"
        done
    done
}

paper1_groups() { # the groups of the paper's Fig. 2 and Fig. 3, planned on its machine
    local desc="pack:2 numa:2 l3:1 core:32 pu:1"
    "$BIN/numacoll-topo" --synthetic "$desc" --procs 128 --map-by core --json \
        >"$STAGE/paper1_groups_fig2.json" &&
        "$BIN/numacoll-topo" --synthetic "$desc" --procs 14 --map-by numa --json \
            >"$STAGE/paper1_groups_fig3.json"
}

logp_model() { # paper 2: the LogP parameters (ns) and the model's estimates per P, as CSV
    local out="$STAGE/.logp.txt"
    "$BIN/numacoll-bench" barrier --logp >"$out" || return 1
    cat "$out"
    { echo "parameter,value_ns"
        sed -n 's/^NUMACOLL_BARRIER_LOGP_\([A-Z]*\)=\([0-9.eE+-]*\)$/\1,\2/p' "$out"
        sed -n 's/^round trip \([0-9.]*\) ns$/round_trip,\1/p' "$out"
    } >"$STAGE/logp_params.csv"
    { echo "procs,central_ns,combining_ns,dissemination_ns,choice"
        awk '$1 ~ /^[0-9]+$/ && NF == 5 { print $1 "," $2 "," $3 "," $4 "," $5 }' "$out"
    } >"$STAGE/logp_model.csv"
    if [ "$(wc -l <"$STAGE/logp_model.csv")" -le 1 ]; then
        why "no model table in numacoll-bench barrier --logp's output"
        return 1
    fi
}

plan() {
    # ---- 1. core (fork-based) ---------------------------------------------------------
    run "core barrier, P=$NP" "$BIN/numacoll-bench" barrier --procs "$NP" \
        --csv "$STAGE/core_barrier_p$NP.csv" "${CORE_BAR[@]+"${CORE_BAR[@]}"}"
    if [ "$NP" != 8 ]; then
        run "core barrier, P=8 (oversubscribed)" "$BIN/numacoll-bench" barrier --procs 8 \
            --csv "$STAGE/core_barrier_p8.csv" "${CORE_BAR8[@]}"
    fi
    run "core bcast, P=2" "$BIN/numacoll-bench" bcast --procs 2 \
        --csv "$STAGE/core_bcast.csv" "${CORE_BC[@]}"
    # the paper's queue-parameter figures: time vs s (Fig. 7, 1 MiB, f = 8 KiB) and time
    # vs f with the model's curve (Fig. 8/9, 4 MiB, s = 16); a few seconds each
    run "core bcast, P=2, time vs slots s (paper Fig. 7)" "$BIN/numacoll-bench" bcast \
        --procs 2 --mode slots --reps "$MODEL_REPS" --csv "$STAGE/model_bcast_slots.csv"
    run "core bcast, P=2, time vs fragment f and the model (paper Fig. 8/9)" \
        "$BIN/numacoll-bench" bcast --procs 2 --mode fragment --reps "$MODEL_REPS" \
        --csv "$STAGE/model_bcast_fragment.csv" "${MODEL_FRAG[@]+"${MODEL_FRAG[@]}"}"
    # paper 1: every barrier algorithm at P = 2, 4, 8, 5 runs (the summary drops the min and
    # max run and averages the rest); the groups of its Fig. 2/3 on its synthetic machine
    run "core barrier, P=2,4,8, 5 runs (paper 1 table)" paper1_runs
    run "topology groups of paper 1 Fig. 2 and 3 (synthetic)" paper1_groups
    # paper 2: the LogP parameters measured between two CPUs and the model's estimates
    run "LogP parameters and the model's estimates (paper 2)" logp_model

    # ---- 2. MPI ------------------------------------------------------------------------
    local mpi np nm extra bv rv coll max8
    for mpi in $MPIS; do
        nm="$(mpi_name "$mpi")"
        if [ ! -x "$BIN/numacoll-bench-mpi-$mpi" ]; then
            skip "MPI barrier and bcast, $nm" \
                "not built (no $BIN/numacoll-bench-mpi-$mpi; BENCH_MPIS chooses the MPIs)"
            continue
        fi
        for np in $(printf '%s\n' "$NP" 8 | sort -un); do
            extra=()
            # MPICH busy-polls: oversubscribed, its native barrier takes milliseconds per
            # call
            if [ "$mpi" = mpich ] && [ "$np" -gt "$NP" ]; then extra=("${BAR8_MPICH[@]}"); fi
            # (Open MPI: native-sm, coll/sm on a duplicate communicator, interleaved)
            run "MPI barrier, $nm, np=$np$([ "$np" -gt "$NP" ] && echo " (oversubscribed)")" \
                mpi_bench "$mpi" "$np" barrier "${extra[@]+"${extra[@]}"}"
        done
        # native (and Open MPI's coll/sm), numacoll's default, the physical references
        # limit:signal (a bare flag store and wait), limit:inline (a minimal inline
        # broadcast with its payload, up to 1 KiB), limit:memcpy (one local copy),
        # limit:xcore (one copy of the root's just written message by the other core), and
        # the reference limit:pipe (a bare pipelined copy-in copy-out through a shared
        # window, plain stores); numacoll's broadcast variants (notification trees, CMA,
        # the inline path's cache hint and write prefetch off and on) once, with Open MPI
        # (quick: the trees and CMA only)
        bv=native,native-sm,default,limit:signal,limit:inline,limit:memcpy,limit:xcore,limit:pipe
        if [ "$mpi" = openmpi ]; then
            if [ "$QUICK" = 1 ]; then
                bv="native,native-sm,default,limit:signal,limit:memcpy,tree:kary,tree:flat,cma"
            else
                bv="$bv,core,tree:kary,tree:knomial,tree:flat,tree:chain,tree:topo,cma,demote:off,demote:on,prefetch:off,prefetch:on"
            fi
        fi
        run "MPI bcast, $nm, np=2" mpi_bench "$mpi" 2 bcast --max-bytes "$BMAX" --variants "$bv"
        # the same with a rotating root (call i from rank i mod np, IMB's -root_shift on as
        # in the paper's runs), up to 1 MiB: rootshift_mpi_bcast.csv
        rv=native,default
        [ "$mpi" = openmpi ] && rv=native,native-sm,default
        run "MPI bcast, $nm, np=2, rotating root" root_shift "$mpi" "$rv"
        if [ "$mpi" = openmpi ] && [ "$QUICK" != 1 ]; then
            run "MPI bcast, $nm, np=8 (oversubscribed)" mpi_bench openmpi 8 bcast \
                --max-bytes "$BMAX" --variants native,native-sm,default,limit:memcpy
        fi
        # the reductions: every row the benchmark has at np = 2, and oversubscribed (Open MPI)
        for coll in allreduce reduce; do
            run "MPI $coll, $nm, np=2" mpi_bench "$mpi" 2 "$coll" --max-bytes "$RMAX"
            [ "$mpi" = openmpi ] || continue
            run "MPI $coll, $nm, np=8$([ 8 -gt "$NP" ] && echo " (oversubscribed)")" \
                mpi_bench openmpi 8 "$coll" --max-bytes "$RMAX" "${RED8[@]+"${RED8[@]}"}"
        done
        # reduce_scatter_block (the size: each rank's block) and scan: no algorithm rows;
        # core is the C call on the communicator's team, limit:fold the floor. At np = 8
        # reduce_scatter_block's blocks stop at BENCH_REDUCE_MAX / 8, so that its largest
        # vector is the allreduce's largest message (4 MiB blocks, a 32 MiB vector, took
        # most of a 218 s step, the natives 0.3 s a call)
        for coll in reduce_scatter_block scan; do
            run "MPI $coll, $nm, np=2" mpi_bench "$mpi" 2 "$coll" --max-bytes "$RMAX" \
                --variants native,native-sm,default,core,limit:fold
            [ "$mpi" = openmpi ] || continue
            max8="$RMAX"
            [ "$coll" = reduce_scatter_block ] && max8="$(block_of "$RMAX" 8)"
            run "MPI $coll, $nm, np=8$([ 8 -gt "$NP" ] && echo " (oversubscribed)")" \
                mpi_bench openmpi 8 "$coll" --max-bytes "$max8" \
                --variants native,native-sm,default,core,limit:fold "${RED8[@]+"${RED8[@]}"}"
        done
        # the gather family: np = 2, and oversubscribed (Open MPI)
        for coll in allgather gather scatter alltoall; do
            run "MPI $coll, $nm, np=2" move_bench "$mpi" 2 "$coll"
            [ "$mpi" = openmpi ] || continue
            run "MPI $coll, $nm, np=8$([ 8 -gt "$NP" ] && echo " (oversubscribed)")" \
                move_bench openmpi 8 "$coll" "${MOVE8[@]+"${MOVE8[@]}"}"
        done
    done

    # ---- 2c. oversubscribed far beyond the CPUs ------------------------------------------
    # Every member waits for CPU time most of the time: the chunked pipelines and
    # the waits' kernel sleeps show there. Open MPI only (MPICH busy-polls: its native
    # collectives take milliseconds per call there, step 2's np = 8 note).
    if [ -x "$BIN/numacoll-bench-mpi-openmpi" ] && [[ " $MPIS " == *" openmpi "* ]]; then
        for np in $STARVE_NP; do
            run "MPI barrier, bcast, allreduce, Open MPI, np=$np (oversubscribed, few sizes)" \
                starve_bench "$np"
        done
    fi

    # ---- 2b. the broadcast targets over several launches ---------------------------------
    # The host moves this VM's two vCPUs every few tens of seconds, and a launch's ratios
    # follow (MEASURING.md): one run says little about whether a target holds. So the
    # target sizes run again in LAUNCHES separate launches, each interleaving numacoll with
    # the natives and the references: 1 B - 1 KiB against the best native (Open MPI: its
    # default and coll/sm), with the floors limit:signal and limit:inline beside them;
    # 1-4 MiB against limit:memcpy, with the floor limit:xcore beside it. Rows go to
    # launches_mpi_bcast.csv (the CSV schema plus a `launch` column, mean over the ranks).
    local l
    for l in $(seq 1 "$LAUNCHES"); do
        for mpi in $MPIS; do
            [ -x "$BIN/numacoll-bench-mpi-$mpi" ] || continue
            nm="$(mpi_name "$mpi")"
            if [ "$mpi" = openmpi ]; then
                run "bcast targets, launch $l of $LAUNCHES, $nm, np=2, 1 B - 1 KiB" \
                    launch_part openmpi "$l" 1 1K native,native-sm,default,limit:signal,limit:inline
            fi
            run "bcast targets, launch $l of $LAUNCHES, $nm, np=2, 1-4 MiB" \
                launch_part "$mpi" "$l" 1M 4M native,default,limit:memcpy,limit:xcore
        done
    done
    # The targets of the other collectives (every size <= 1.0x the best native) in as many
    # launches, each collective its own mpirun: launches_mpi_coll.csv (with a `launch`
    # column), in the summary as the sizes that held in every launch and in the median
    for l in $(seq 1 "$LAUNCHES"); do
        for mpi in $MPIS; do
            [ -x "$BIN/numacoll-bench-mpi-$mpi" ] || continue
            nm="$(mpi_name "$mpi")"
            run "collective targets, launch $l of $LAUNCHES, $nm, np=2" coll_launch "$mpi" 2 "$l"
            [ "$mpi" = openmpi ] || continue
            run "collective targets, launch $l of $LAUNCHES, $nm, np=8 (oversubscribed)" \
                coll_launch openmpi 8 "$l"
        done
    done

    # ---- 3. key-value store lock schemes (no MPI) ----------------------------------------
    run "key-value store locks, readers 1..$NP, every mode and lock" \
        "$BIN/numacoll-kvbench" --mode all --readers "$NP" --lock all \
        --csv "$STAGE/kvdb.csv" "${KV_ARGS[@]}"
    # paper 4, Table 1: the Get profile (lfence + rdtsc: cpuid traps to a hypervisor in a VM)
    run "key-value store Get profile, readers 1..$NP (paper 4 Table 1)" \
        "$BIN/numacoll-kvbench" --profile-get --readers "$NP" --lock all --profile-clock lfence \
        --csv "$STAGE/kvdb_get_profile.csv" "${KV_PROFILE[@]}"
    if [ "$NP" -lt 8 ]; then
        run "key-value store locks, readers=8 (oversubscribed)" "$BIN/numacoll-kvbench" \
            --mode read-only --readers 8 --fixed --lock all \
            --csv "$STAGE/kvdb_oversubscribed.csv" "${KV_ARGS[@]}"
    fi

    # ---- 4. summary and plots ----------------------------------------------------------
    [ "$MODE" = run ] && run_info_end
    if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
        run "summary.md and plots" summary
    else
        skip "summary.md and plots" \
            "no /usr/bin/python3 with matplotlib (apt-get install python3-matplotlib)"
    fi
}

# ---- this run: host, CPU, load, MPIs, numacoll's commit, date -------------------------------
load_avg() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?"; }
cpu_model() {
    local m
    m="$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo 2>/dev/null | head -n 1)"
    [ -n "$m" ] || m="$(LC_ALL=C lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -n 1)"
    echo "${m:-unknown}"
}
# mpi_recorded FAMILY COLUMN DEFAULT: a column of FAMILY's line in the build's MPI
# manifest (share/numacoll/mpis.tsv: 2 version, 4 C wrapper, 5 launcher), else DEFAULT
mpi_recorded() {
    local v
    v="$(awk -F'\t' -v f="$1" -v c="$2" '$1 == f { print $c; exit }' \
        "$BIN/../share/numacoll/mpis.tsv" 2>/dev/null)"
    echo "${v:-$3}"
}
mpi_version() {
    mpi_recorded "$1" 2 unknown
}
run_info_start() {
    DATE_START="$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    LOAD_START="$(load_avg)"
    local m v commit dirty
    MPI_VERS=""
    for m in $MPIS; do
        v="$(mpi_version "$m")"
        MPI_VERS+="${MPI_VERS:+, }$(mpi_name "$m") ${v:-(version unknown)}"
        [ -x "$BIN/numacoll-bench-mpi-$m" ] || MPI_VERS+=" (numacoll not built for it)"
    done
    commit="$(git -C "$SRC" rev-parse HEAD 2>/dev/null)"
    if [ -n "$commit" ]; then
        dirty="$(git -C "$SRC" status --porcelain --untracked-files=no 2>/dev/null | wc -l)"
        if [ "$dirty" -gt 0 ]; then
            NC_COMMIT="$commit, tree dirty ($dirty tracked files modified)"
        else
            NC_COMMIT="$commit, tree clean"
        fi
    else
        NC_COMMIT="unknown (not a git checkout: $SRC)"
    fi
    NC_ENV="$(env | grep '^NUMACOLL_' | sort | paste -sd ' ')"
}
run_info_end() {
    LOAD_END="$(load_avg)"
    DATE_END="$(date -u '+%H:%M:%S UTC')"
    local f m
    {
        echo "## This run"
        echo
        echo "| | |"
        echo "|---|---|"
        echo "| date | $DATE_START (start), $DATE_END (end of the measurements) |"
        echo "| host | $(hostname 2>/dev/null) ($(uname -srm)) |"
        echo "| CPU | $(cpu_model), $NP CPUs |"
        echo "| load average (1, 5, 15 min) | start $LOAD_START, end $LOAD_END |"
        echo "| MPI | ${MPI_VERS:-none} |"
        echo "| numacoll | commit $NC_COMMIT; build $BUILD |"
        echo "| settings | $([ "$QUICK" = 1 ] && echo "BENCH_QUICK=1, ")reps $REPS, ${TMS} ms samples, MPI bcast up to $BMAX, $LAUNCHES target launches${ONLY:+, BENCH_ONLY='$ONLY'} |"
        echo "| NUMACOLL_* set | ${NC_ENV:-none} |"
        echo "| steps | $TOTAL planned; before this summary $PASSED ran, ${#FAILED[@]} failed, ${#SKIPPED[@]} skipped |"
        echo
        if [ ${#FAILED[@]} -gt 0 ] || [ ${#SKIPPED[@]} -gt 0 ]; then
            echo "**Steps that failed or were skipped; none of their figures is in this summary:**"
            echo
            for f in "${FAILED[@]+"${FAILED[@]}"}"; do echo "- failed: $f"; done
            for f in "${SKIPPED[@]+"${SKIPPED[@]}"}"; do echo "- skipped: $f"; done
            echo
        fi
    } >"$OUT/run.md"
    # the same for the plots' titles (numacoll-plot reads it; key,value)
    {
        echo "key,value"
        echo "date,$(date -u -d "$DATE_START" '+%Y-%m-%d' 2>/dev/null || echo "${DATE_START%% *}")"
        echo "host,$(hostname 2>/dev/null | tr ',' ' ')"
        echo "cpu,$(cpu_model | tr ',' ' ')"
        echo "cpus,$NP"
        for m in $MPIS; do echo "mpi:$m,$(mpi_name "$m") $(mpi_version "$m" | tr ',' ' ')"; done
        echo "commit,${NC_COMMIT%%,*}"
        echo "quick,$QUICK"
    } >"$OUT/run_info.csv"
}
summary() { # numacoll-plot: summary.md (with run.md as its "This run" section) and the plots
    /usr/bin/python3 "$SRC/tools/scripts/numacoll-plot" "$OUT" || return 1
    [ -f "$OUT/summary.md" ] || { why "numacoll-plot wrote no summary.md"; return 1; }
}

# headline: numacoll's default against the best native (Open MPI: its default or coll/sm) of
# the same run, from mpi_barrier.csv, mpi_bcast.csv, mpi_allreduce.csv, mpi_reduce.csv,
# mpi_reduce_scatter_block.csv, mpi_scan.csv, mpi_allgather.csv, mpi_gather.csv,
# mpi_scatter.csv and mpi_alltoall.csv (a few sizes)
headline() {
    local files=() f
    for f in "$OUT/mpi_barrier.csv" "$OUT/mpi_bcast.csv" "$OUT/mpi_allreduce.csv" \
        "$OUT/mpi_reduce.csv" "$OUT/mpi_reduce_scatter_block.csv" "$OUT/mpi_scan.csv" \
        "$OUT/mpi_allgather.csv" "$OUT/mpi_gather.csv" \
        "$OUT/mpi_scatter.csv" "$OUT/mpi_alltoall.csv"; do
        [ -s "$f" ] && files+=("$f")
    done
    [ ${#files[@]} -gt 0 ] || return 0
    echo
    echo "headline: numacoll's default against the best native of the same run (< 1: numacoll faster)"
    printf '  %-20s %-9s %3s %6s %12s %-12s %12s %7s\n' collective MPI np bytes "native us" "(which)" \
        "numacoll us" ratio
    awk -F, '
        FNR == 1 { next }
        {
            k = $1 SUBSEP $8 SUBSEP $3 SUBSEP $4
            keys[k] = 1
            if ($2 == "default") d[k] = $5
            if (($2 == "native" || $2 == "native-sm") && (!(k in n) || $5 < n[k])) { n[k] = $5; w[k] = $2 }
        }
        END {
            for (k in keys) {
                split(k, p, SUBSEP)
                if (!(k in d) || !(k in n) || n[k] <= 0) continue
                b = p[4] + 0
                if (p[1] ~ /^(bcast|allgather|gather|scatter|alltoall)$/ && b != 1 && b != 1024 && b != 65536 && b != 1048576 && b != 4194304)
                    continue
                if (p[1] ~ /^(allreduce|reduce|reduce_scatter_block|scan)$/ && b != 8 && b != 1024 && b != 65536 && b != 1048576 && b != 4194304)
                    continue
                sz = p[1] == "barrier" ? "-" : b >= 1048576 ? b / 1048576 "M" : b >= 1024 ? b / 1024 "K" : b
                mpi = p[2] == "openmpi" ? "Open MPI" : p[2] == "mpich" ? "MPICH" : p[2]
                printf "%s %s %05d %012d|  %-20s %-9s %3d %6s %12.3f %-12s %12.3f %6.2fx\n", p[1], p[2], p[3], b,
                    p[1], mpi, p[3], sz, n[k], "(" w[k] ")", d[k], d[k] / n[k]
            }
        }' "${files[@]}" | sort | cut -d'|' -f2-
}

# ---- preflight ---------------------------------------------------------------------------
plan
if [ "$DRY" = 1 ]; then
    echo "($TOTAL steps)"
    exit 0
fi
if [ "$TOTAL" = 0 ]; then
    echo "bench: BENCH_ONLY='$ONLY' matches no step (--dry-run lists them)" >&2
    exit 2
fi
steps() { [ "$1" = 1 ] && echo "1 step" || echo "$1 steps"; }
mkdir -p "$OUT" || exit 2
rm -rf "$STAGE"
rm -f "$OUT"/*.csv "$OUT"/*.json "$OUT"/*.png "$OUT"/summary.md "$OUT"/run.md
: >"$LOG"
if [ "$DO_BUILD" = 1 ]; then
    t0=$(now)
    printf 'build: cmake --build %s ... ' "$BUILD"
    # shellcheck disable=SC2086 # CMAKE_FLAGS: words for cmake
    if { cmake -S "$SRC" -B "$BUILD" ${CMAKE_FLAGS:-} &&
        cmake --build "$BUILD" -j "$NP"; } >>"$LOG" 2>&1; then
        echo "$(($(now) - t0)) s"
    else
        echo "FAILED (the last lines of $LOG:)"
        tail -n 20 "$LOG" | sed 's/^/    /'
        exit 2
    fi
fi
# which MPI steps run depends on the MPI benchmarks the build made: count them again
TOTAL=0
plan
if [ ! -x "$BIN/numacoll-bench" ] || [ ! -x "$BIN/numacoll-info" ]; then
    say "bench: no $BIN/numacoll-bench: build first" \
        "(make, or tools/scripts/dev/bench.sh --build $BUILD $OUT)"
    exit 2
fi
# numacoll's configuration must be valid and on: else the core steps fail and the MPI steps
# would run the native collectives under numacoll's name
if ! msg="$("$BIN/numacoll-info" --check 2>&1)"; then
    say "bench: refusing to start: ${msg#numacoll-info: }." \
        "With it numacoll does not run (the MPI library falls back to the native collectives)," \
        "so no figure would be numacoll's. Fix or unset it (\`$BIN/numacoll-info\` lists the" \
        "variables and their allowed values)."
    exit 2
fi
off=""
[ "${NUMACOLL_DISABLE:-0}" = 0 ] || off="NUMACOLL_DISABLE=$NUMACOLL_DISABLE"
[ "${NUMACOLL_MPI_BCAST:-1}" = 1 ] || off+="${off:+ and }NUMACOLL_MPI_BCAST=$NUMACOLL_MPI_BCAST"
if [ -n "$off" ]; then
    say "bench: refusing to start: $off in the environment sends MPI calls to the native MPI," \
        "so MPI figures labelled numacoll would be the native MPI's; unset it."
    exit 2
fi
run_info_start
say "numacoll bench: $(steps "$TOTAL")$([ "$QUICK" = 1 ] && echo " (quick)"), $NP CPUs ($(cpu_model))," \
    "load $LOAD_START; results in $OUT/, log $LOG"
[ -n "$NC_ENV" ] && say "  with $NC_ENV (recorded in summary.md)"

# ---- the run ------------------------------------------------------------------------------
MODE=run
plan
headline
n_bad=$((${#FAILED[@]} + ${#SKIPPED[@]}))
if [ $n_bad -gt 0 ]; then
    echo
    say "bench: $n_bad of $(steps "$TOTAL") did not run to the end; none of their figures is reported:"
    for f in "${FAILED[@]+"${FAILED[@]}"}"; do say "  failed: $f"; done
    for f in "${SKIPPED[@]+"${SKIPPED[@]}"}"; do say "  skipped: $f"; done
    say "(done in $(($(now) - START)) s; log $LOG)"
    exit 1
fi
echo
say "done in $(($(now) - START)) s: $(steps "$TOTAL"); full tables in $OUT/summary.md, plots and CSVs in $OUT/, log $LOG"
