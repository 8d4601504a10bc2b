#!/bin/bash
# mpi4py's own test suite under the preload (modules left out: see exclude): np = 2 with
# the default deferred set-up (what an application gets), np = 3 with
# NUMACOLL_MPI_SETUP_AFTER=0 (every communicator numacoll's from its first call, so every
# barrier and broadcast test runs through numacoll; oversubscribed). The mpi4py is
# Debian's python3-mpi4py when it is built against this MPI (Open MPI on Debian 12), with
# the test suite taken from the PyPI sdist of the same version (downloaded once, not
# built); otherwise mpi4py is built from that sdist against the MPI into a venv (a few
# minutes, once). Exit 77 (ctest: skipped) with a message when the sdist cannot be fetched
# or built (offline machine). Then tests/mpi/mpi4py_reduce.py at np = 3: MPI_Allreduce /
# MPI_Reduce through mpi4py, values and interception (with numpy when the venv can
# install it).
#   test_mpi4py.sh BUILD_DIR FLAVOR
set -u
build="$(cd "$1" && pwd)"; flavor="$2"
dir="$build/mpi4py-$flavor"
py=/usr/bin/python3
. "$(dirname "$0")/manifest.sh"
mpicc="$(nc_mpi_field "$build" "$flavor" cc)"
mpicc="${mpicc:-mpicc.$flavor}"
launcher="$(nc_mpi_launcher "$build" "$flavor")" || exit 2
case $flavor in
openmpi) launch=("$launcher" --oversubscribe -np); lib_name="Open MPI" ;;
mpich) launch=("$launcher" -n); lib_name="MPICH" ;;
*) echo "unknown MPI $flavor"; exit 2 ;;
esac
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_base_warn_component_unused=0
mkdir -p "$dir"
# the system's mpi4py, if it is built against this MPI: its version, else nothing
sys_version=$($py -c "import mpi4py, mpi4py.MPI as M
if '$lib_name' in M.Get_library_version(): print(mpi4py.__version__)" 2>/dev/null)
fetch_tests() { # $1 = version: the sdist's test/ into $dir/src, without building it
    [ -f "$dir/src/.version" ] && [ "$(cat "$dir/src/.version")" = "$1" ] && return 0
    rm -rf "$dir/src" "$dir/sdist"
    if ! timeout 300 $py -m pip download -q --no-deps --no-binary :all: --no-build-isolation \
        "mpi4py==$1" -d "$dir/sdist" 2>"$dir/pip.err"; then
        tail -n 20 "$dir/pip.err"
        echo "SKIPPED: cannot download the mpi4py $1 sdist from PyPI (offline?) or read its" \
            "metadata (python3-setuptools missing?): $(grep -m1 -E 'Error|error:' "$dir/pip.err")"
        exit 77
    fi
    mkdir -p "$dir/src" && tar -xzf "$dir"/sdist/mpi4py-*.tar.gz -C "$dir/src" --strip-components=1
    echo "$1" >"$dir/src/.version"
}
if [ -n "$sys_version" ]; then
    echo "using the system's mpi4py $sys_version ($py, built against $lib_name)"
    runpy=$py
    fetch_tests "$sys_version"
else
    runpy="$dir/venv/bin/python"
    if ! "$runpy" -c 'import mpi4py.MPI' 2>/dev/null || ! [ -d "$dir/src/test" ]; then
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
fi
# numpy for the reductions' buffers (tests/mpi/mpi4py_reduce.py falls back to array.array)
if [ "$runpy" != "$py" ] && ! "$runpy" -c 'import numpy' 2>/dev/null; then
    timeout 300 "$dir/venv/bin/pip" install -q numpy >/dev/null 2>&1 ||
        echo "no numpy for $runpy (offline?): the reductions use array.array"
fi
# the suite's runner: test/main.py (mpi4py 4), test/runtests.py (3.x)
runner="$dir/src/test/main.py"
[ -f "$runner" ] || runner="$dir/src/test/runtests.py"
fail=0
# left out: spawn (a new job the preload cannot join), and the modules that test mpi4py's
# own datatype, pack and file code without a collective numacoll takes (util_dtlib alone is
# half of the suite's time)
exclude=(-e spawn -e util_dtlib -e test_io -e test_file -e test_pack)
for np in 2 3; do
    log="$dir/test-np$np.log"
    after=$([ $np = 3 ] && echo 0 || echo "${NUMACOLL_MPI_SETUP_AFTER:-2048}")
    NUMACOLL_MPI_SETUP_AFTER=$after NUMACOLL_MPI_STATS=1 timeout 400 "$build/bin/numacoll-run" "${launch[@]}" "$np" \
        "$runpy" "$runner" --no-builddir "${exclude[@]}" >"$log" 2>&1
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
# numacoll's own reductions through mpi4py (comm.allreduce, comm.Allreduce, comm.Reduce on
# buffers): values, and every buffer call numacoll's (np = 3, oversubscribed)
log="$dir/reduce-np3.log"
NUMACOLL_MPI_SETUP_AFTER=0 timeout 120 "$build/bin/numacoll-run" "${launch[@]}" 3 "$runpy" \
    "$(dirname "$0")/mpi4py_reduce.py" >"$log" 2>&1
rc=$?
echo "mpi4py reductions np=3 ($flavor): exit $rc; $(grep -h "mpi4py reductions:" "$log")"
if [ $rc -ne 0 ] || ! grep -q "mpi4py reductions: PASS" "$log"; then
    fail=1
    grep -E "CHECK FAILED|Error" "$log" | head -20
fi
exit $fail
