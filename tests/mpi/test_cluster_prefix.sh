#!/bin/bash
# An MPI installed as clusters install them: a prefix whose bin/ holds mpicc, mpirun and
# mpif90 under plain names (here small scripts that run Debian's Open MPI ones), put on
# PATH, with no other MPI visible: PATH holds only that bin/ and a directory of basic tools
# (Debian's suffixed mpicc.openmpi, mpicc.mpich, mpirun.openmpi, ... hidden). In a scratch
# build (no NUMACOLL_MPICC: the mpicc on PATH), the configure must find it and record it as
# Open MPI with the prefix's mpirun and mpif90, and nothing else; the preload and
# numacoll-run built there, and a small MPI program built with the prefix's mpicc, run
# under numacoll-run with the prefix's mpirun: every barrier, broadcast and allreduce
# numacoll's (tests/mpi/mpi_abi_name.c's counters). Then the same build, configured again
# for that Open MPI and a stand-in of the next major version, must build a preload for each
# and numacoll-run must pick by version (below: "Two MPIs of one family"). Bad values of
# NUMACOLL_MPICC fail the configure with a message naming what is wrong.
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
        n="$(grep -Ec "^abi_name: rank [01]: preloaded by libnumacoll_mpi-openmpi[0-9]+\.so; barrier 20 \(numacoll 20\), bcast 20 \(numacoll 20\), allreduce 20 \(numacoll 20\); 0 wrong results" <<<"$out")"
        if [ $rc = 0 ] && [ "$n" = 2 ] && grep -q "libnumacoll_mpi-openmpi" <<<"$(PATH="$P" \
            "$tmp/build/bin/numacoll-run" --print mpirun -np 2 "$tmp/abi_name" 2>&1)"; then
            echo "ok: numacoll-run mpirun (the prefix's) ran every call through numacoll"
        else
            echo "FAILED: numacoll-run mpirun -np 2: exit $rc, $n of 2 ranks ran every call through numacoll"
            fail=1
        fi
    fi
fi

# Two MPIs of one family: each gets its own preload, and numacoll-run picks by version.
# The machine has one Open MPI, so the second is a stand-in of the next major version
# (make_standin): a prefix whose mpi.h is the real one with OMPI_*_VERSION changed (what the
# build's classifier reads), whose MPI library libmpi.so.<abi> says that version when asked
# (tests/mpi/mpi_identity_shim.c: MPI_Get_library_version, what numacoll-run asks) and
# passes everything else to a copy of the real library renamed libmpr.so.<abi>, and whose
# bin/ holds mpicc (the compiler with its include and library directories first) and mpirun
# (the real one). The scratch build is configured again with NUMACOLL_MPICC naming the
# prefix's Open MPI, the stand-in V (version fmaj.0.9), another build of V's major version
# (fmaj.0.8, served by V's preload) and V's mpicc under a second name (the same MPI); it
# must record two MPIs, build a preload for each, and numacoll-run must give a program of
# each version its own (the file that defines numacoll's counters in the ranks names it):
# the V program by its library, the fmaj.0.8 one (a library the build did not record) by
# the version it says; a program of a version built for by none is refused with the cmake
# line that adds it beside the others.
make_standin() { # DIR VERSION: the stand-in Open MPI VERSION in DIR (mpicc, mpirun, mpi.h, libraries)
    local d="$1" v="$2" h="" ccf lkf t
    mkdir -p "$d/bin" "$d/include" "$d/lib"
    ccf="$("$real_cc" -showme:compile)"
    for t in $ccf; do
        case "$t" in -I*) [ -z "$h" ] && [ -f "${t#-I}/mpi.h" ] && h="${t#-I}/mpi.h" ;; esac
    done
    [ -n "$h" ] || { echo "FAILED: no mpi.h in the include directories of $real_cc ($ccf)"; return 1; }
    sed -e "s/^#define OMPI_MAJOR_VERSION .*/#define OMPI_MAJOR_VERSION ${v%%.*}/" \
        -e "s/^#define OMPI_MINOR_VERSION .*/#define OMPI_MINOR_VERSION $(cut -d. -f2 <<<"$v")/" \
        -e "s/^#define OMPI_RELEASE_VERSION .*/#define OMPI_RELEASE_VERSION ${v##*.}/" "$h" >"$d/include/mpi.h"
    [ "$(grep -c "^#define OMPI_\(MAJOR\|MINOR\|RELEASE\)_VERSION" "$d/include/mpi.h")" = 3 ] &&
        grep -q "^#define OMPI_MAJOR_VERSION ${v%%.*}$" "$d/include/mpi.h" ||
        { echo "FAILED: $h: its OMPI_*_VERSION lines were not found"; return 1; }
    cp "$real_lib" "$d/lib/libmpr.so.$abi" &&
        /usr/bin/python3 "$src/tests/mpi/set_soname.py" "$d/lib/libmpr.so.$abi" "libmpr.so.$abi" &&
        ln -s "libmpr.so.$abi" "$d/lib/libmpr.so" &&
        cc -shared -fPIC -DNC_SHIM_IDENTITY="\"Open MPI v$v, package: numacoll's stand-in (Open MPI $omaj underneath)\"" \
            -o "$d/lib/libmpi.so.$abi" -Wl,-soname,"libmpi.so.$abi" "$src/tests/mpi/mpi_identity_shim.c" \
            -L"$d/lib" -Wl,-rpath,"$d/lib" -Wl,--no-as-needed -lmpr &&
        ln -s "libmpi.so.$abi" "$d/lib/libmpi.so" ||
        { echo "FAILED: the stand-in's libraries in $d/lib"; return 1; }
    lkf="-L$d/lib -Wl,-rpath,$d/lib -lmpi -lmpr"
    for t in $("$real_cc" -showme:link); do [ "$t" = -lmpi ] || lkf="$lkf $t"; done
    cat >"$d/bin/mpicc" <<EOF_CC
#!/bin/sh
# the stand-in Open MPI $v's C compiler wrapper (tests/mpi/test_cluster_prefix.sh)
case "\$1" in
-showme) echo "cc -I$d/include $ccf $lkf"; exit 0 ;;
-showme:compile) echo "-I$d/include $ccf"; exit 0 ;;
-showme:link) echo "$lkf"; exit 0 ;;
esac
for a in "\$@"; do case "\$a" in -c | -E | -S) exec cc -I$d/include $ccf "\$@" ;; esac; done
exec cc -I$d/include $ccf "\$@" $lkf
EOF_CC
    printf '#!/bin/sh\nexec %s "$@"\n' "$real_run" >"$d/bin/mpirun"
    chmod +x "$d/bin/mpicc" "$d/bin/mpirun"
    PATH="$P" "$d/bin/mpicc" -I"$src/src/mpi" -o "$d/abi_name" "$src/tests/mpi/mpi_abi_name.c" -ldl \
        >"$tmp/out" 2>&1 || { echo "FAILED: the stand-in's mpicc cannot build a program: $(tail -n 5 "$tmp/out")"; return 1; }
}
# run_abi WHAT MPIRUN PROGRAM PRELOAD-NAME IDENTITY: numacoll-run MPIRUN -np 2 PROGRAM must
# preload libnumacoll_mpi-PRELOAD-NAME.so (--print, and the file in the ranks) and run
# every call through numacoll, the program's MPI saying IDENTITY
run_abi() {
    local what="$1" run="$2" prog="$3" want="$4" ident="$5" out rc n
    out="$(PATH="$P" "$tmp/build/bin/numacoll-run" --print "$run" -np 2 "$prog" 2>&1)"
    if ! grep -q "^$run -x LD_PRELOAD=[^ ]*/lib/libnumacoll_mpi-$want\.so " <<<"$out"; then
        echo "FAILED: $what: numacoll-run --print: '$out', expected libnumacoll_mpi-$want.so"; fail=1; return
    fi
    out="$(PATH="$P" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        NUMACOLL_MPI_SETUP_AFTER=0 timeout 120 "$tmp/build/bin/numacoll-run" \
        "$run" --oversubscribe -np 2 "$prog" 20 2>&1)"
    rc=$?
    n="$(grep -Ec "^abi_name: rank [01]: preloaded by libnumacoll_mpi-$want\.so; barrier 20 \(numacoll 20\), bcast 20 \(numacoll 20\), allreduce 20 \(numacoll 20\); 0 wrong results" <<<"$out")"
    if [ $rc = 0 ] && [ "$n" = 2 ] && grep -q "^abi_name: rank 0: the MPI library says \"$ident" <<<"$out"; then
        echo "ok: $what: preloaded by libnumacoll_mpi-$want.so, every call numacoll's"
    else
        echo "FAILED: $what: exit $rc, $n of 2 ranks preloaded by libnumacoll_mpi-$want.so with every call numacoll's (the MPI saying '$ident'): $(tail -n 8 <<<"$out")"
        fail=1
    fi
}
t_two=$(date +%s)
if [ $fail = 0 ]; then
    t0=$(date +%s)
    m="$tmp/build/share/numacoll/mpis.tsv"
    real_lib="$(grep -v '^#' "$m" | cut -f10)"
    abi="$(grep -v '^#' "$m" | cut -f9)"; abi="${abi##*.so.}"
    omaj="$(grep -v '^#' "$m" | cut -f2 | cut -d. -f1)"
    fmaj=$((omaj + 1))
    V="$tmp/ompi$fmaj"; VB="$tmp/ompi$fmaj-b"; W="$tmp/ompi$((fmaj + 1))"
    if [ ! -f "$real_lib" ] || [ -z "$abi" ]; then
        echo "FAILED: no MPI library / SONAME recorded in $m"; fail=1
    elif make_standin "$V" "$fmaj.0.9" && make_standin "$VB" "$fmaj.0.8" &&
        make_standin "$W" "$((fmaj + 1)).0.1"; then
        ln -s mpicc "$V/bin/mpicc.alias"
        echo "ok: stand-ins of Open MPI $fmaj.0.9, $fmaj.0.8 and $((fmaj + 1)).0.1 ($(($(date +%s) - t0)) s)"
    else
        fail=1
    fi
fi
if [ $fail = 0 ]; then
    t0=$(date +%s)
    cc4="$tmp/mpi/bin/mpicc"
    if PATH="$P" "$cmake_bin" -S "$src" -B "$tmp/build" \
        -DNUMACOLL_MPICC="$cc4;$V/bin/mpicc;$VB/bin/mpicc;$V/bin/mpicc.alias" >"$tmp/out" 2>&1; then
        for re in "numacoll: openmpi $omaj\.[0-9.]+ .*: $cc4, launcher $tmp/mpi/bin/mpirun, .*: preload libnumacoll_mpi-openmpi$omaj\.so$" \
            "numacoll: openmpi $fmaj\.0\.9 .*: $V/bin/mpicc, launcher $V/bin/mpirun, .*: preload libnumacoll_mpi-openmpi$fmaj\.so$" \
            "numacoll: $VB/bin/mpicc \(openmpi $fmaj\.0\.8\) is served by libnumacoll_mpi-openmpi$fmaj\.so, built from $V/bin/mpicc \(openmpi $fmaj\.0\.9\)" \
            "numacoll: $V/bin/mpicc\.alias is the MPI of $V/bin/mpicc \(the same libraries\): served by libnumacoll_mpi-openmpi$fmaj\.so" \
            "numacoll: libnumacoll_mpi for: openmpi$omaj;openmpi$fmaj \(default openmpi$omaj\)"; do
            grep -Eq -- "$re" "$tmp/out" || { echo "FAILED: the configure's output lacks /$re/: $(grep numacoll: "$tmp/out")"; fail=1; }
        done
        got="$(grep -v '^#' "$m" | cut -f1,2,4,5,7,8)"
        want="$(printf 'openmpi\t%s\t%s\t%s\tlib/libnumacoll_mpi-openmpi%s.so\topenmpi%s\nopenmpi\t%s\t%s\t%s\tlib/libnumacoll_mpi-openmpi%s.so\topenmpi%s' \
            "$(grep -v '^#' "$m" | head -n 1 | cut -f2)" "$cc4" "$tmp/mpi/bin/mpirun" "$omaj" "$omaj" \
            "$fmaj.0.9" "$V/bin/mpicc" "$V/bin/mpirun" "$fmaj" "$fmaj")"
        if [ "$got" = "$want" ]; then echo "ok: the manifest has a line for each Open MPI"
        else echo "FAILED: the manifest holds '$got', expected '$want'"; fail=1; fi
    else
        echo "FAILED: configure with two Open MPIs: $(tail -n 20 "$tmp/out")"; fail=1
    fi
    if [ $fail = 0 ] && PATH="$P" "$cmake_bin" --build "$tmp/build" -j2 \
        --target numacoll_mpi_openmpi numacoll_mpi_openmpi$fmaj numacoll-info >"$tmp/out" 2>&1; then
        echo "ok: the second preload built ($(($(date +%s) - t0)) s with the configure)"
    elif [ $fail = 0 ]; then
        echo "FAILED: build: $(tail -n 20 "$tmp/out")"; fail=1
    fi
fi
if [ $fail = 0 ]; then
    for x in "$omaj" "$fmaj"; do
        [ -f "$tmp/build/lib/libnumacoll_mpi-openmpi$x.so" ] ||
            { echo "FAILED: lib/libnumacoll_mpi-openmpi$x.so not built"; fail=1; }
    done
    l="$(readlink "$tmp/build/lib/openmpi/libnumacoll_mpi.so")"
    [ "$l" = "../libnumacoll_mpi-openmpi$omaj.so" ] ||
        { echo "FAILED: lib/openmpi/libnumacoll_mpi.so -> '$l', expected the first Open MPI's preload"; fail=1; }
    out="$("$tmp/build/bin/numacoll-info" --mpis 2>&1)"
    if grep -Eq "^openmpi $omaj\.[0-9.]+ \(MPI [0-9.]+, preload openmpi$omaj\), the default$" <<<"$out" &&
        grep -Eq "^openmpi $fmaj\.0\.9 \(MPI [0-9.]+, preload openmpi$fmaj\)$" <<<"$out" &&
        grep -q "^  preload: *$tmp/build/lib/libnumacoll_mpi-openmpi$fmaj\.so$" <<<"$out"; then
        echo "ok: numacoll-info --mpis lists both"
    else echo "FAILED: numacoll-info --mpis: $out"; fail=1; fi
    run_abi "an Open MPI $omaj program" mpirun "$tmp/abi_name" "openmpi$omaj" "Open MPI v$omaj\."
    run_abi "an Open MPI $fmaj.0.9 program under its mpirun" "$V/bin/mpirun" "$V/abi_name" \
        "openmpi$fmaj" "Open MPI v$fmaj\.0\.9"
    run_abi "an Open MPI $fmaj.0.8 program (its library not in the manifest: by version)" \
        "$VB/bin/mpirun" "$VB/abi_name" "openmpi$fmaj" "Open MPI v$fmaj\.0\.8"
    # a version built for by none: refused, with every MPI built for and the line adding it
    out="$(PATH="$P" "$tmp/build/bin/numacoll-run" --print "$W/bin/mpirun" -np 2 "$W/abi_name" 2>&1)"; rc=$?
    ok=1
    for re in "^numacoll-run: numacoll has no preload for the program's MPI: .*which says \"Open MPI v$((fmaj + 1))\.0\.1," \
        "numacoll was built for: openmpi $omaj\.[0-9.]+ \(libmpi\.so\.$abi, $cc4\), openmpi $fmaj\.0\.9 \(libmpi\.so\.$abi, $V/bin/mpicc\)\.$" \
        "-DNUMACOLL_MPICC='$cc4;$V/bin/mpicc;$W/bin/mpicc'$" \
        "it is built beside the one for Open MPI $omaj\.[0-9.]+, Open MPI $fmaj\.0\.9\)$"; do
        grep -Eq -- "$re" <<<"$out" || { ok=0; echo "FAILED: an Open MPI $((fmaj + 1)) program: rc $rc, the message lacks /$re/: $out"; }
    done
    if [ $ok = 1 ] && [ $rc = 2 ]; then echo "ok: an Open MPI $((fmaj + 1)) program is refused with the cmake line that adds it"
    else fail=1; fi
    echo "(two Open MPIs: $(($(date +%s) - t_two)) s)"
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
