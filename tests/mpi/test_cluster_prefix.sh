#!/bin/bash
# The build finds an MPI installed as clusters install them (a prefix whose bin/ holds
# mpicc, mpirun and mpif90 under plain names, here small scripts that run Debian's Open MPI
# ones) when -DNUMACOLL_MPICC names its mpicc: configured in a scratch build directory
# (cmake only, no build), the manifest must record it as Open MPI with the prefix's mpirun
# and mpif90, and nothing else. Bad values of NUMACOLL_MPICC fail the configure with a
# message naming what is wrong.
#   test_cluster_prefix.sh SOURCE_DIR OPENMPI_MPICC OPENMPI_LAUNCHER OPENMPI_FC
set -u
src="$1"; real_cc="$2"; real_run="$3"; real_fc="$4"; fail=0
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/mpi/bin"
for pair in "mpicc:$real_cc" "mpirun:$real_run" "mpif90:$real_fc"; do
    printf '#!/bin/sh\nexec %s "$@"\n' "${pair#*:}" >"$tmp/mpi/bin/${pair%%:*}"
    chmod +x "$tmp/mpi/bin/${pair%%:*}"
done
configure() { # NUMACOLL_MPICC value: the configure's output in $tmp/out, its status
    cmake -S "$src" -B "$tmp/build" -DNUMACOLL_BUILD_TESTS=OFF -DNUMACOLL_MPICC="$1" \
        >"$tmp/out" 2>&1
}
if configure "$tmp/mpi/bin/mpicc"; then
    m="$tmp/build/share/numacoll/mpis.tsv"
    got="$(grep -v '^#' "$m" 2>/dev/null | cut -f1,4,5,6,7)"
    major="$(grep -v '^#' "$m" 2>/dev/null | cut -f2 | cut -d. -f1)"
    want="$(printf 'openmpi\t%s\t%s\t%s\tlib/libnumacoll_mpi-openmpi%s.so' \
        "$tmp/mpi/bin/mpicc" "$tmp/mpi/bin/mpirun" "$tmp/mpi/bin/mpif90" "$major")"
    if [ "$got" = "$want" ]; then echo "ok: the prefix's MPI is recorded: $got"
    else echo "FAILED: the manifest holds '$got', expected '$want'"; fail=1; fi
else
    echo "FAILED: configure with the prefix's mpicc: $(tail -n 20 "$tmp/out")"; fail=1
fi
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
