#!/bin/bash
# mpi4py's own test suite (PyPI sdist, built against the given MPI) under the preload,
# np = 2 and 4, spawn tests excluded: np = 2 with the default deferred set-up (what an
# application gets), np = 4 with NUMACOLL_MPI_SETUP_AFTER=0 (every communicator numacoll's
# from its first call, so every barrier and broadcast test runs through numacoll). Exit 77 (ctest: skipped) with a message when the
# sdist cannot be fetched or built (offline machine).
#   test_mpi4py.sh BUILD_DIR FLAVOR
set -u
build="$(cd "$1" && pwd)"; flavor="$2"
dir="$build/mpi4py-$flavor"
py=/usr/bin/python3
mpicc=mpicc.$flavor
case $flavor in
openmpi) launch=(mpirun.openmpi --oversubscribe -np) ;;
mpich) launch=(mpiexec.mpich -n) ;;
*) echo "unknown MPI $flavor"; exit 2 ;;
esac
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_base_warn_component_unused=0
mkdir -p "$dir"
if ! "$dir/venv/bin/python" -c 'import mpi4py.MPI' 2>/dev/null || ! ls "$dir"/src/test/main.py >/dev/null 2>&1; then
    echo "building mpi4py against $flavor in $dir (takes a few minutes, once)"
    rm -rf "$dir/venv" "$dir/src" "$dir/sdist"
    if ! $py -m venv "$dir/venv"; then echo "SKIPPED: no python3 venv module"; exit 77; fi
    if ! timeout 300 "$dir/venv/bin/pip" download -q --no-deps --no-binary mpi4py mpi4py -d "$dir/sdist"; then
        echo "SKIPPED: cannot download the mpi4py sdist from PyPI (offline?)"; exit 77
    fi
    sdist=$(ls "$dir"/sdist/mpi4py-*.tar.gz | head -1)
    if ! MPICC=$mpicc timeout 900 "$dir/venv/bin/pip" install -q --no-binary mpi4py "$sdist"; then
        echo "SKIPPED: building mpi4py with $mpicc failed (offline, or no build dependencies)"; exit 77
    fi
    mkdir -p "$dir/src" && tar -xzf "$sdist" -C "$dir/src" --strip-components=1
fi
fail=0
for np in 2 4; do
    log="$dir/test-np$np.log"
    after=$([ $np = 4 ] && echo 0 || echo "${NUMACOLL_MPI_SETUP_AFTER:-2048}")
    NUMACOLL_MPI_SETUP_AFTER=$after NUMACOLL_MPI_STATS=1 timeout 400 "$build/bin/numacoll-run" "${launch[@]}" "$np" \
        "$dir/venv/bin/python" "$dir/src/test/main.py" --no-builddir -e spawn >"$log" 2>&1
    rc=$?
    ran=$(grep -Eo "Ran [0-9]+ tests" "$log" | head -1 | grep -Eo "[0-9]+")
    skipped=$(grep -Eo "skipped=[0-9]+" "$log" | head -1 | grep -Eo "[0-9]+")
    nfail=$(grep -Eo "FAILED \(.*\)" "$log" | head -1)
    res="${ran:-?} tests per rank, $(( ${ran:-0} - ${skipped:-0} )) passed, ${skipped:-0} skipped${nfail:+, $nfail}"
    stats=$(grep -c "numacoll-mpi stats \[$flavor rank [0-9]*\]: MPI_Barrier [0-9]* (numacoll [1-9]" "$log")
    bc=$(grep -Eo "MPI_Bcast [0-9]+ \(numacoll [0-9]+" "$log" | head -1)
    echo "mpi4py np=$np ($flavor, NUMACOLL_MPI_SETUP_AFTER=$after): exit $rc; $res; ranks with barriers through numacoll: $stats/$np; rank 0 $bc"
    if [ $rc -ne 0 ] || [ "$stats" != "$np" ]; then
        fail=1
        grep -E "^(FAIL|ERROR):|Error|error" "$log" | head -20
    fi
done
exit $fail
