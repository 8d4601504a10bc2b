#!/usr/bin/env bash
# Install numacoll into a scratch prefix and use it as a user would, with no LD_LIBRARY_PATH:
#   1. every installed program finds its libraries (run path relative to itself) and runs
#   2. pkg-config (PKG_CONFIG_PATH=<prefix>/lib/pkgconfig) builds the installed C examples,
#      also with --static, and its Libs.private link libnumacoll.a
#   3. find_package(numacoll) with numacoll::numacoll / numacoll::numacoll_static builds them
#   4. the installed MPI example runs under the installed numacoll-run with NUMACOLL_VERBOSE=1
#   5. the tools' man pages are in share/man/man1
#
#   check.sh BUILD_DIR SOURCE_DIR VERSION [DEFAULT_MPI] [MAN: yes|no]
set -uo pipefail
build=$1 src=$2 version=$3 mpi=${4:-} man=${5:-yes}
prefix=$build/install-test
fail=0
bad() { echo "FAIL: $*"; fail=1; }
unset LD_LIBRARY_PATH
rm -rf "$prefix" "$build/install-consumer"
if ! cmake --install "$build" --prefix "$prefix" >/dev/null; then
    echo "FAIL: cmake --install"; exit 1
fi
pc=$(find "$prefix" -name numacoll.pc | head -1)
[ -n "$pc" ] || { echo "FAIL: no numacoll.pc installed"; exit 1; }
libdir=$(dirname "$(dirname "$pc")")
examples=$prefix/share/doc/numacoll/examples
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---- 1. the installed programs, no LD_LIBRARY_PATH ----------------------------------------
for exe in "$prefix"/bin/*; do
    name=$(basename "$exe")
    if head -c 4 "$exe" | grep -q ELF; then
        if ! readelf -d "$exe" | grep -Eq 'R(UN)?PATH.*\$ORIGIN/\.\./lib'; then
            bad "$name has no run path \$ORIGIN/../lib: $(readelf -d "$exe" | grep -E 'R(UN)?PATH')"
        fi
        if ldd "$exe" | grep -q "not found"; then
            bad "$name: a library is not found: $(ldd "$exe" | grep 'not found')"
        fi
    fi
    case "$name" in
    numacoll-bench-mpi-*) args=(--help) ;;        # the MPI half of numacoll-bench --mpi
    numacoll-run) args=(--help) ;;
    *) args=(--version) ;;
    esac
    out=$("$exe" "${args[@]}" 2>&1)
    rc=$?
    if [ $rc != 0 ]; then
        bad "$name ${args[*]} exited $rc: $(head -3 <<<"$out")"
    elif [ "${args[0]}" = --version ] && [ "$out" != "$name (numacoll) $version" ]; then
        bad "$name --version printed '$out', wanted '$name (numacoll) $version'"
    fi
done
out=$("$prefix/bin/numacoll-info" --check 2>&1) || bad "numacoll-info --check: $out"

# ---- 2. pkg-config -------------------------------------------------------------------------
export PKG_CONFIG_PATH=$libdir/pkgconfig
v=$(pkg-config --modversion numacoll 2>&1)
[ "$v" = "$version" ] || bad "pkg-config --modversion numacoll: '$v', wanted $version"
for ex in barrier_fork bcast_fork; do
    [ -f "$examples/$ex.c" ] || { bad "example $examples/$ex.c is not installed"; continue; }
    # shared library; the run path is the consumer's business (or LD_LIBRARY_PATH)
    if cc -std=c11 -o "$tmp/$ex" "$examples/$ex.c" $(pkg-config --cflags --libs numacoll) \
        -Wl,-rpath,"$libdir" 2>"$tmp/err"; then
        "$tmp/$ex" 3 5 >"$tmp/out" 2>&1 || bad "$ex (pkg-config) failed: $(cat "$tmp/out")"
    else
        bad "$ex does not build with pkg-config --cflags --libs: $(cat "$tmp/err")"
    fi
    # --static: the flags link
    if cc -std=c11 -o "$tmp/${ex}_s" "$examples/$ex.c" \
        $(pkg-config --cflags --static --libs numacoll) -Wl,-rpath,"$libdir" 2>"$tmp/err"; then
        "$tmp/${ex}_s" 3 5 >"$tmp/out" 2>&1 || bad "$ex (pkg-config --static) failed: $(cat "$tmp/out")"
    else
        bad "$ex does not link with pkg-config --static --libs: $(pkg-config --static --libs numacoll 2>&1): $(cat "$tmp/err")"
    fi
done
# libnumacoll.a with --static's Libs.private only (the archive's dependencies are all there)
lonly=$(pkg-config --static --libs-only-l numacoll | tr ' ' '\n' | grep -vx -- -lnumacoll | tr '\n' ' ')
if cc -std=c11 -o "$tmp/bcast_a" "$examples/bcast_fork.c" $(pkg-config --cflags numacoll) \
    $(pkg-config --static --libs-only-L numacoll) -Wl,-Bstatic -lnumacoll -Wl,-Bdynamic \
    $lonly $(pkg-config --static --libs-only-other numacoll) 2>"$tmp/err"; then
    readelf -d "$tmp/bcast_a" | grep -q 'NEEDED.*libnumacoll' &&
        bad "the libnumacoll.a link still needs libnumacoll.so"
    "$tmp/bcast_a" 2 3 >"$tmp/out" 2>&1 || bad "bcast_fork on libnumacoll.a failed: $(cat "$tmp/out")"
else
    bad "libnumacoll.a does not link with pkg-config --static's libraries ($lonly): $(cat "$tmp/err")"
fi

# ---- 3. find_package(numacoll), numacoll::numacoll and numacoll::numacoll_static --------------
if cmake -S "$src/tests/install" -B "$build/install-consumer" -DCMAKE_PREFIX_PATH="$prefix" \
    -DEXAMPLES_DIR="$examples" >"$tmp/cfg" 2>&1 &&
    cmake --build "$build/install-consumer" >"$tmp/bld" 2>&1; then
    for ex in barrier_fork barrier_fork_static bcast_fork bcast_fork_static; do
        "$build/install-consumer/$ex" 3 5 >"$tmp/out" 2>&1 ||
            bad "$ex (find_package) failed: $(cat "$tmp/out")"
    done
else
    bad "find_package consumer: $(tail -n 20 "$tmp/cfg" "$tmp/bld" 2>/dev/null)"
fi

# ---- 4. the MPI example under the installed numacoll-run -------------------------------------
# the MPI's wrapper and launcher as the installed manifest records them
. "$src/tests/mpi/manifest.sh"
mpicc="$(nc_mpi_field "$prefix" "$mpi" cc)"
launcher="$(nc_mpi_field "$prefix" "$mpi" launcher)"
if [ -n "$mpi" ] && { [ -z "$mpicc" ] || [ -z "$launcher" ]; }; then
    bad "the installed manifest $prefix/share/numacoll/mpis.tsv has no wrapper and launcher for $mpi"
elif [ -n "$mpi" ]; then
    case "$mpi" in
    openmpi) launch=("$launcher" --oversubscribe -np 2) ;;
    *) launch=("$launcher" -n 2) ;;
    esac
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
    if "$mpicc" -o "$tmp/mpi_ex" "$examples/mpi_bcast_barrier.c" 2>"$tmp/err"; then
        out=$(NUMACOLL_VERBOSE=1 timeout 120 "$prefix/bin/numacoll-run" "${launch[@]}" \
            "$tmp/mpi_ex" 1048576 20 2>&1)
        grep -q "MPI_COMM_WORLD (size 2): one node team" <<<"$out" ||
            bad "the MPI example under numacoll-run: no verbose line for MPI_COMM_WORLD: $out"
        grep -q "2 ranks: 20 broadcasts of 1048576 bytes received intact" <<<"$out" ||
            bad "the MPI example under numacoll-run: $out"
    else
        bad "$mpicc cannot build the MPI example: $(cat "$tmp/err")"
    fi
else
    echo "the MPI example: skipped (numacoll built without MPI)"
fi

# ---- 5. man pages ------------------------------------------------------------------------------
if [ "$man" = yes ]; then
    for exe in "$prefix"/bin/numacoll-*; do
        name=$(basename "$exe")
        case "$name" in numacoll-bench-mpi-*) continue ;; esac
        page=$prefix/share/man/man1/$name.1
        if [ ! -s "$page" ] || ! grep -q '^\.SH DESCRIPTION' "$page"; then
            bad "no man page $page"
        fi
    done
else
    echo "man pages: not built (help2man was not found when the build was configured)"
fi

[ $fail = 0 ] && echo "install check passed"
exit $fail
