#!/bin/bash
# Run one MPI test under numacoll-run with the given MPI.
#
#   run_mpi.sh BIN_DIR FLAVOR NP [options] -- PROGRAM [ARGS...]
#     FLAVOR: openmpi, mpich, or the preload name of a further MPI of a family (openmpi5):
#     the manifest's line whose launcher runs it
#     --env NAME=VALUE    set for the ranks (repeatable). NUMACOLL_MPI_SETUP_AFTER is 0
#                         (set up at the first call) unless given here: most tests check
#                         what numacoll does from a communicator's first call on; the
#                         deferral itself has its own tests
#     --expect REGEX      the combined output must match (repeatable)
#     --reject REGEX      the combined output must not match (repeatable)
#     --count REGEX N     exactly N output lines must match
#     --algs              run once per barrier algorithm (NUMACOLL_BARRIER=<each>, the
#                         list taken from `numacoll-info --json` now)
#     --timeout S         per launch (default 120)
#     --fail              the launch must fail: exit with a non-zero status other than a
#                         timeout's 124 (launchers differ in which status they pass on, so
#                         the output checks say which failure it was)
set -u
bindir="$1"; flavor="$2"; np="$3"; shift 3
envs=(NUMACOLL_MPI_SETUP_AFTER=0); expects=(); rejects=(); counts=(); algs=0; tmo=120
must_fail=0
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    case "$1" in
    --env) envs+=("$2"); shift 2 ;;
    --expect) expects+=("$2"); shift 2 ;;
    --reject) rejects+=("$2"); shift 2 ;;
    --count) counts+=("$2" "$3"); shift 3 ;;
    --algs) algs=1; shift ;;
    --timeout) tmo="$2"; shift 2 ;;
    --fail) must_fail=1; shift ;;
    *) echo "run_mpi.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
shift
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# keep the launchers quiet and local
export OMPI_MCA_btl_base_warn_component_unused=0 OMPI_MCA_rmaps_base_oversubscribe=1
. "$(dirname "$0")/manifest.sh"
launcher="$(nc_mpi_launcher "$bindir/.." "$flavor")" || exit 2
# FLAVOR: a family, or the preload name of a further MPI of a family (openmpi5)
case "$(nc_mpi_field "$bindir/.." "$flavor" family)" in
openmpi) launch=("$launcher" --oversubscribe -np "$np") ;;
mpich) launch=("$launcher" -n "$np") ;;
*) echo "run_mpi.sh: unknown MPI $flavor" >&2; exit 2 ;;
esac

run_one() { # $1 = label, rest = extra env
    local label="$1"; shift
    local out rc
    out="$(env "${envs[@]}" "$@" timeout "$tmo" "$bindir/numacoll-run" "${launch[@]}" "${prog[@]}" 2>&1)"
    rc=$?
    echo "=== $label (exit $rc)"
    echo "$out" | grep -v '^\s*$' | tail -n 40
    # a test without what it needs (memory) says "SKIP: why" and passes: ctest's skip
    if [ $rc -eq 0 ] && grep -q '^SKIP: ' <<<"$out"; then echo "SKIPPED: $label"; exit 77; fi
    if [ $must_fail = 0 ] && [ $rc -ne 0 ]; then echo "FAILED: $label exited with $rc"; return 1; fi
    if [ $must_fail = 1 ] && { [ $rc -eq 0 ] || [ $rc -eq 124 ]; }; then
        echo "FAILED: $label exited with $rc, expected a failure (not a timeout)"; return 1
    fi
    local re
    for re in "${expects[@]+"${expects[@]}"}"; do
        if ! grep -Eq -- "$re" <<<"$out"; then echo "FAILED: $label: output lacks /$re/"; return 1; fi
    done
    for re in "${rejects[@]+"${rejects[@]}"}"; do
        if grep -Eq -- "$re" <<<"$out"; then echo "FAILED: $label: output has /$re/"; return 1; fi
    done
    local i n
    for ((i = 0; i < ${#counts[@]}; i += 2)); do
        n=$(grep -Ec -- "${counts[i]}" <<<"$out")
        if [ "$n" != "${counts[i+1]}" ]; then
            echo "FAILED: $label: $n lines match /${counts[i]}/, expected ${counts[i+1]}"; return 1
        fi
    done
    return 0
}

prog=("$@")
if [ $algs = 1 ]; then
    mapfile -t list < <("$bindir/numacoll-info" --json | /usr/bin/python3 -c \
        'import json,sys; [print(a["name"]) for a in json.load(sys.stdin)["barrier_algorithms"]]')
    if [ ${#list[@]} -eq 0 ]; then echo "FAILED: no barrier algorithm listed by numacoll-info"; exit 1; fi
    fail=0
    for a in auto "${list[@]}"; do
        run_one "NUMACOLL_BARRIER=$a np=$np $flavor" NUMACOLL_BARRIER="$a" || fail=1
    done
    echo "${#list[@]} algorithms + auto tested"
    exit $fail
fi
run_one "np=$np $flavor ${envs[*]+${envs[*]}}"
