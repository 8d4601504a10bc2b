#!/bin/bash
# The preloads name no MPI library, so each serves its MPI under any name (Intel MPI,
# MVAPICH and Cray MPICH ship MPICH's ABI as libmpi.so.12) and loads into a process that
# has not loaded its MPI yet (python before `import mpi4py`); none has a strong reference
# to the MPI-4 entry points an MPICH 3.x-based MPI lacks (they are looked up).
#   test_renamed_mpi.sh links BIN_DIR
#     for every preload of the manifest (BIN_DIR/../share/numacoll/mpis.tsv) and the
#     default lib/libnumacoll_mpi.so: readelf -d: no libmpi* / libmpich* / libopen-*
#     NEEDED entry; nm -D: no undefined ompi_mpi_* object (Open MPI's predefined handles),
#     PMPI_Bcast_c ... PMPI_Session_finalize not referenced or only weakly; and
#     LD_PRELOAD=it /bin/true (a process without MPI) runs
#   test_renamed_mpi.sh run BIN_DIR MPI_LIBRARY "INCLUDE_DIRS" CC SOURCE_DIR
#     MPI_LIBRARY (MPICH's libmpich.so.12) copied to a temporary directory as libmpi.so.12
#     (its SONAME changed to match), tests/mpi/mpi_abi_name.c linked against that copy,
#     run at np = 2 under numacoll-run with the launcher of the manifest: every barrier,
#     broadcast and allreduce numacoll's, and one MPI library in the process (the copy);
#     then the same as a shared object loaded by python with dlopen(RTLD_LOCAL)
set -u
mode="$1"; bin="$2"; fail=0
manifest="$bin/../share/numacoll/mpis.tsv"
if [ "$mode" = links ]; then
    libs=()
    # (awk: an empty column, an MPI without a Fortran wrapper, would shift read's fields)
    while read -r key rel; do
        [ -n "$rel" ] && libs+=("$key:$bin/../$rel")
    done < <(awk -F'\t' '!/^#/ { print ($8 != "" ? $8 : $1), $7 }' "$manifest")
    libs+=("default:$bin/../lib/libnumacoll_mpi.so")
    [ ${#libs[@]} -ge 2 ] || { echo "FAILED: no preload in $manifest"; exit 1; }
    for fl in "${libs[@]}"; do
        lib="${fl#*:}"
        echo "== ${fl%%:*}: $lib"
        [ -f "$lib" ] || { echo "FAILED: $lib not built"; fail=1; continue; }
        needed="$(LC_ALL=C readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')"
        echo "NEEDED: $(tr '\n' ' ' <<<"$needed")"
        if grep -q '^libmpi\|^libopen-\|^libpmix' <<<"$needed"; then
            echo "FAILED: the preload names an MPI library: $(grep '^libmpi\|^libopen-\|^libpmix' <<<"$needed" | tr '\n' ' ')"
            fail=1
        fi
        objs="$(nm -D --undefined-only "$lib" | awk '$NF ~ /^ompi_mpi_/ { print $NF }' | tr '\n' ' ')"
        if [ -n "$objs" ]; then
            echo "FAILED: undefined Open MPI objects (bound when the preload loads): $objs"
            fail=1
        fi
        for s in PMPI_Bcast_c PMPI_Allreduce_c PMPI_Reduce_c PMPI_Pack_c PMPI_Unpack_c \
            PMPI_Type_size_c PMPI_Type_create_hindexed_c PMPI_Session_finalize; do
            kind="$(nm -D "$lib" | awk -v s="$s" '$NF == s { print $(NF - 1) }')"
            case "$kind" in
            "" | w) ;;
            *) echo "FAILED: $s is '$kind' in the preload (a strong reference: an MPI without it cannot load the preload)"; fail=1 ;;
            esac
        done
        if ! out="$(LD_PRELOAD="$lib" /bin/true 2>&1)" || [ -n "$out" ]; then
            echo "FAILED: a process without MPI cannot load it: $out"
            fail=1
        else
            echo "ok: loads into a process without MPI"
        fi
    done
    [ $fail = 0 ] && echo "preload links: PASS"
    exit $fail
fi

lib="$bin/../lib/mpich/libnumacoll_mpi.so"
[ -f "$lib" ] || { echo "FAILED: $lib not built"; exit 1; }
mpilib="$3"; incs="${4//;/ }"; cc="$5"; src="$6"
launcher="$(awk -F'\t' '$1 == "mpich" { print $5 }' "$manifest")"
[ -n "$launcher" ] || { echo "FAILED: no MPICH-family launcher in $bin/../share/numacoll/mpis.tsv"; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cp "$mpilib" "$tmp/libmpi.so.12"
# the copy's SONAME becomes libmpi.so.12, as the vendors' library's is
/usr/bin/python3 "$(dirname "$0")/set_soname.py" "$tmp/libmpi.so.12" libmpi.so.12 ||
    { echo "FAILED: cannot rename the copy's SONAME"; exit 1; }
ln -s libmpi.so.12 "$tmp/libmpi.so" # what -lmpi finds at link time
iflags=()
for d in $incs; do iflags+=(-I"$d"); done
if ! "$cc" "${iflags[@]}" -I"$src/src/mpi" -o "$tmp/abi_name" "$src/tests/mpi/mpi_abi_name.c" \
    -L"$tmp" -lmpi -Wl,-rpath,"$tmp" -ldl 2>"$tmp/err"; then
    echo "FAILED: cannot build the program against the renamed copy: $(cat "$tmp/err")"; exit 1
fi
echo "the program loads: $(ldd "$tmp/abi_name" | grep -i mpi | tr -s ' \t' ' ')"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out="$(NUMACOLL_MPI_SETUP_AFTER=0 timeout 120 "$bin/numacoll-run" "$launcher" -n 2 "$tmp/abi_name" 40 2>&1)"
rc=$?
echo "$out" | tail -n 20
want="preloaded by libnumacoll_mpi-mpich[0-9]+\.so; barrier 40 \(numacoll 40\), bcast 40 \(numacoll 40\), allreduce 40 \(numacoll 40\); 0 wrong results; 1 MPI libraries loaded: $tmp/libmpi\.so\.12$"
n="$(grep -Ec "^abi_name: rank [01]: $want" <<<"$out")"
if [ $rc -ne 0 ] || [ "$n" != 2 ]; then
    echo "FAILED: exit $rc; $n of 2 ranks ran every call through numacoll with only $tmp/libmpi.so.12 loaded"
    exit 1
fi
# the same program as a shared object that python loads with dlopen(RTLD_LOCAL) (ctypes),
# as python loads an MPICH-built mpi4py: the MPI is then outside the global scope until the
# preload brings it in. --force: the python3 here may import an Open MPI mpi4py
if ! "$cc" "${iflags[@]}" -I"$src/src/mpi" -shared -fPIC -Dmain=abi_name_main \
    -o "$tmp/abi_name.so" "$src/tests/mpi/mpi_abi_name.c" -L"$tmp" -lmpi -Wl,-rpath,"$tmp" 2>"$tmp/err"; then
    echo "FAILED: cannot build the shared object: $(cat "$tmp/err")"; exit 1
fi
printf '%s\n' 'import ctypes, sys' 'lib = ctypes.CDLL(sys.argv[1])' \
    'argv = (ctypes.c_char_p * 2)(b"abi_name", b"40")' \
    'sys.stdout.flush(); sys.exit(lib.abi_name_main(2, argv))' >"$tmp/load.py"
out="$(NUMACOLL_MPI_SETUP_AFTER=0 timeout 120 "$bin/numacoll-run" --force "$launcher" -n 2 \
    /usr/bin/python3 "$tmp/load.py" "$tmp/abi_name.so" 2>&1)"
rc=$?
echo "$out" | grep -v "^numacoll-run: \|^  " | tail -n 20
n="$(grep -Ec "^abi_name: rank [01]: $want" <<<"$out")"
if [ $rc -ne 0 ] || [ "$n" != 2 ]; then
    echo "FAILED: dlopen(RTLD_LOCAL) from python: exit $rc; $n of 2 ranks ran every call through numacoll with only $tmp/libmpi.so.12 loaded"
    exit 1
fi
echo "renamed MPI library: PASS"
