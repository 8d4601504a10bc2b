#!/bin/bash
# An MPI installed as clusters install them: a prefix whose bin/ holds mpicc, mpirun and
# mpif90 under plain names (here small scripts that run Debian's Open MPI ones), put on
# PATH, with no other MPI visible: PATH holds only that bin/ and a directory of basic tools
# (Debian's suffixed mpicc.openmpi, mpicc.mpich, mpirun.openmpi, ... hidden). In a scratch
# build (no NUMACOLL_MPICC: the mpicc on PATH), the configure must find it and record it as
# Open MPI with the prefix's mpirun and mpif90, and nothing else; the preload and
# numacoll-run built there, and a small MPI program built with the prefix's mpicc, run
# under numacoll-run with the prefix's mpirun: every barrier, broadcast and allreduce
# numacoll's (tests/mpi/mpi_abi_name.c's counters). Bad values of NUMACOLL_MPICC fail the
# configure with a message naming what is wrong.
#   test_cluster_prefix.sh SOURCE_DIR OPENMPI_MPICC OPENMPI_LAUNCHER OPENMPI_FC
set -u
src="$1"; real_cc="$2"; real_run="$3"; real_fc="$4"; fail=0
cmake_bin="$(command -v cmake)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/mpi/bin" "$tmp/tools"
for pair in "mpicc:$real_cc" "mpirun:$real_run" "mpif90:$real_fc"; do
    printf '#!/bin/sh\nexec %s "$@"\n' "${pair#*:}" >"$tmp/mpi/bin/${pair%%:*}"
    chmod +x "$tmp/mpi/bin/${pair%%:*}"
done
# the basic tools a build and numacoll-run need (ssh: Open MPI's mpirun wants its agent on
# PATH even for a local run), and nothing of an MPI
for t in sh bash env cmake make gmake cc gcc c99 cpp as ld ld.bfd ar ranlib nm readelf \
    objdump strip awk gawk mawk sed grep egrep readlink realpath dirname basename ldd head \
    tail cut tr sort uniq mktemp cat timeout rm mkdir cp mv ln ls chmod find xargs wc date \
    uname hostname id true false sleep tee touch stat fold python3 help2man perl ssh rsh; do
    p="$(command -v "$t" 2>/dev/null)" && [ -x "$p" ] && ln -s "$p" "$tmp/tools/$t"
done
gccx="$(gcc -print-prog-name=cc1 2>/dev/null)"
[ -x "$gccx" ] || echo "(note: gcc's cc1 not found: $gccx)"
P="$tmp/mpi/bin:$tmp/tools"
for n in mpicc.openmpi mpicc.mpich mpirun.openmpi mpiexec.mpich mpiexec; do
    if PATH="$P" command -v "$n" >/dev/null; then echo "FAILED: $n is visible"; fail=1; fi
done

# the mpicc on PATH, found with no NUMACOLL_MPICC (a build without optimisation: this
# checks the finding, the linkage and the launch, not speed)
if PATH="$P" "$cmake_bin" -S "$src" -B "$tmp/build" -DNUMACOLL_BUILD_TESTS=OFF \
    -DCMAKE_BUILD_TYPE=None >"$tmp/out" 2>&1; then
    m="$tmp/build/share/numacoll/mpis.tsv"
    got="$(grep -v '^#' "$m" 2>/dev/null | cut -f1,4,5,6,7)"
    major="$(grep -v '^#' "$m" 2>/dev/null | cut -f2 | cut -d. -f1)"
    want="$(printf 'openmpi\t%s\t%s\t%s\tlib/libnumacoll_mpi-openmpi%s.so' \
        "$tmp/mpi/bin/mpicc" "$tmp/mpi/bin/mpirun" "$tmp/mpi/bin/mpif90" "$major")"
    if [ "$got" = "$want" ]; then echo "ok: the prefix's MPI is found on PATH and recorded: $got"
    else echo "FAILED: the manifest holds '$got', expected '$want'"; fail=1; fi
else
    echo "FAILED: configure with the prefix on PATH: $(tail -n 20 "$tmp/out")"; fail=1
fi
t0=$(date +%s)
if [ $fail = 0 ] && PATH="$P" "$cmake_bin" --build "$tmp/build" -j2 \
    --target numacoll_mpi_openmpi numacoll-info >"$tmp/out" 2>&1; then
    echo "ok: the preload built with the prefix's mpicc ($(($(date +%s) - t0)) s)"
elif [ $fail = 0 ]; then
    echo "FAILED: build: $(tail -n 20 "$tmp/out")"; fail=1
fi
if [ $fail = 0 ]; then
    if ! PATH="$P" mpicc -I"$src/src/mpi" -o "$tmp/abi_name" "$src/tests/mpi/mpi_abi_name.c" \
        -ldl >"$tmp/out" 2>&1; then
        echo "FAILED: the prefix's mpicc cannot build an MPI program: $(tail -n 5 "$tmp/out")"; fail=1
    else
        out="$(PATH="$P" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
            NUMACOLL_MPI_SETUP_AFTER=0 timeout 120 "$tmp/build/bin/numacoll-run" \
            mpirun --oversubscribe -np 2 "$tmp/abi_name" 20 2>&1)"
        rc=$?
        echo "$out" | tail -n 6
        n="$(grep -Ec "^abi_name: rank [01]: preloaded; barrier 20 \(numacoll 20\), bcast 20 \(numacoll 20\), allreduce 20 \(numacoll 20\); 0 wrong results" <<<"$out")"
        if [ $rc = 0 ] && [ "$n" = 2 ] && grep -q "libnumacoll_mpi-openmpi" <<<"$(PATH="$P" \
            "$tmp/build/bin/numacoll-run" --print mpirun -np 2 "$tmp/abi_name" 2>&1)"; then
            echo "ok: numacoll-run mpirun (the prefix's) ran every call through numacoll"
        else
            echo "FAILED: numacoll-run mpirun -np 2: exit $rc, $n of 2 ranks ran every call through numacoll"
            fail=1
        fi
    fi
fi

configure() { # NUMACOLL_MPICC value: the configure's output in $tmp/out, its status
    cmake -S "$src" -B "$tmp/build" -DNUMACOLL_BUILD_TESTS=OFF -DNUMACOLL_MPICC="$1" \
        >"$tmp/out" 2>&1
}
bad() { # description, NUMACOLL_MPICC value, regex of the configure's message
    if configure "$2"; then echo "FAILED: $1: the configure passed"; fail=1
    elif tr -s ' \n' ' ' <"$tmp/out" | grep -Eq -- "$3"; then echo "ok: $1"
    else echo "FAILED: $1: the configure's message lacks /$3/: $(tail -n 8 "$tmp/out")"; fail=1; fi
}
bad "a missing file" /nonexistent/bin/mpicc "NUMACOLL_MPICC: '/nonexistent/bin/mpicc': no such file"
bad "a directory" "$tmp/mpi" "NUMACOLL_MPICC: '$tmp/mpi' is a directory; give the path of its MPI C compiler wrapper"
bad "not an MPI wrapper" /bin/true "NUMACOLL_MPICC: the mpi.h of /bin/true is neither Open MPI's"
printf '#!/bin/sh\nexec cc "$@"\n' >"$tmp/mpi/bin/plaincc"
chmod +x "$tmp/mpi/bin/plaincc"
bad "a C compiler without mpi.h" "$tmp/mpi/bin/plaincc" "NUMACOLL_MPICC: .$tmp/mpi/bin/plaincc -E. of a file that includes mpi.h failed"
[ $fail = 0 ] && echo "cluster prefix: PASS"
exit $fail
