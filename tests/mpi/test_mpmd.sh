#!/bin/bash
# MPMD launches under numacoll-run: every app context must be preloaded, or the preloaded
# ranks wait in numacoll's set-up for ranks that never join it (Open MPI's -x covers only
# the context it precedes); likewise a context whose own LD_PRELOAD option (-x, -env)
# would replace the preload.
#   test_mpmd.sh BIN_DIR FLAVOR PROGRAM   (PROGRAM: mpi_coll_test for that MPI)
# Exit 77 (skipped) with the reason where the recorded MPI version's launcher cannot run
# MPMD launches (nc_mpi_launcher_defect, manifest.sh).
set -u
bin="$1"; flavor="$2"; prog="$3"; fail=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_base_warn_component_unused=0 NUMACOLL_MPI_SETUP_AFTER=0
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
run() { # label, launcher command...
    local label="$1"; shift
    local out rc
    out="$(timeout 60 "$bin/numacoll-run" "$@" 2>&1)"; rc=$?
    echo "=== $label (exit $rc)"
    echo "$out" | grep -v '^\s*$' | tail -n 12
    # 3 ranks in 2 app contexts, each rank's 30 broadcasts through numacoll
    if [ $rc -ne 0 ] || ! grep -q "bcast: PASS" <<<"$out" ||
        ! grep -q "bcast: 30 calls, 30 through numacoll" <<<"$out"; then
        echo "FAILED: $label"; fail=1
    fi
}
. "$(dirname "$0")/manifest.sh"
launcher="$(nc_mpi_launcher "$bin/.." "$flavor")" || exit 2
nc_mpi_skip_defect "$bin/.." "$flavor" mpmd
case "$flavor" in
openmpi)
    run "Open MPI, contexts split by ':'" "$launcher" --oversubscribe \
        -np 1 "$prog" bcast 1 : -np 2 "$prog" bcast 1
    printf '# two contexts\n-np 1 %s bcast 1\n\n-np 2 %s bcast 1\n' "$prog" "$prog" >"$tmp/app"
    run "Open MPI, --app FILE" "$launcher" --oversubscribe --app "$tmp/app"
    run "Open MPI, a context with its own -x LD_PRELOAD" "$launcher" --oversubscribe \
        -np 1 -x LD_PRELOAD=libm.so.6 "$prog" bcast 1 : -np 2 "$prog" bcast 1
    if ls "${TMPDIR:-/tmp}"/numacoll-appfile.* >/dev/null 2>&1; then
        echo "FAILED: numacoll-run left its appfile copy behind"; fail=1
    fi
    ;;
mpich)
    run "MPICH, contexts split by ':'" "$launcher" -n 1 "$prog" bcast 1 : -n 2 "$prog" bcast 1
    printf -- '-n 1 %s bcast 1 : -n 2 %s bcast 1\n' "$prog" "$prog" >"$tmp/cfg"
    run "MPICH, -configfile" "$launcher" -configfile "$tmp/cfg"
    run "MPICH, a context with its own -env LD_PRELOAD" "$launcher" \
        -n 1 -env LD_PRELOAD libm.so.6 "$prog" bcast 1 : -n 2 "$prog" bcast 1
    ;;
*) echo "test_mpmd.sh: unknown MPI $flavor"; exit 2 ;;
esac
exit $fail
