#!/bin/bash
# numacoll-run chooses the preload and the way to pass it from the launcher.
#   test_numacoll_run.sh BIN_DIR "FLAVORS"
set -u
bin="$1"; flavors="$2"; fail=0
check() { # description, regex, command...
    local d="$1" re="$2"; shift 2
    local out; out="$("$bin/numacoll-run" --print "$@" 2>&1)"
    if grep -Eq -- "$re" <<<"$out"; then echo "ok: $d: $out"
    else echo "FAILED: $d: '$out' does not match /$re/"; fail=1; fi
}
for f in $flavors; do
    case $f in
    openmpi)
        check "mpirun.openmpi" "^mpirun\.openmpi -x LD_PRELOAD=[^ ]*/openmpi/libnumacoll_mpi\.so -np 2 ./a" mpirun.openmpi -np 2 ./a
        if readlink -f "$(command -v mpirun)" | grep -q orterun; then
            check "mpirun -> orterun (symlinks resolved)" "^mpirun -x LD_PRELOAD=[^ ]*/openmpi/libnumacoll_mpi\.so" mpirun -np 2 ./a
        fi
        NUMACOLL_VERBOSE=1 check "NUMACOLL_* forwarded with -x" "-x NUMACOLL_VERBOSE" mpirun.openmpi -np 2 ./a
        # -x covers one app context: repeated after every ':'
        NUMACOLL_VERBOSE=1 check "MPMD: -x in every context" \
            "^mpirun\.openmpi -x LD_PRELOAD=[^ ]+ -x NUMACOLL_VERBOSE -np 1 ./a : -x LD_PRELOAD=[^ ]+ -x NUMACOLL_VERBOSE -np 2 ./b x : -x LD_PRELOAD=[^ ]+ -x NUMACOLL_VERBOSE -np 1 ./c" \
            mpirun.openmpi -np 1 ./a : -np 2 ./b x : -np 1 ./c
        # the command's own LD_PRELOAD keeps the library in front
        check "-x LD_PRELOAD=... keeps the library first" \
            "-np 1 -x LD_PRELOAD=[^ ]*/openmpi/libnumacoll_mpi\.so:libm\.so\.6 ./a" \
            mpirun.openmpi -np 1 -x LD_PRELOAD=libm.so.6 ./a
        # an appfile is run from a copy with the options on each context line
        app="$(mktemp)"
        printf '# comment\n\n-np 1 ./a\n-np 2 ./b' >"$app"
        out="$("$bin/numacoll-run" --print mpirun.openmpi --app "$app" 2>&1)"
        want="$(printf '# comment\n\n-x LD_PRELOAD=%s -np 1 ./a\n-x LD_PRELOAD=%s -np 2 ./b' \
            "$(readlink -f "$bin/../lib/openmpi/libnumacoll_mpi.so")" \
            "$(readlink -f "$bin/../lib/openmpi/libnumacoll_mpi.so")")"
        if [ "$(head -n 4 <<<"$out")" = "$want" ] && grep -q -- "--app ${TMPDIR:-/tmp}/numacoll-appfile" <<<"$out"; then
            echo "ok: --app: every context line preloaded"
        else
            echo "FAILED: --app: got '$out', expected the lines '$want'"; fail=1
        fi
        rm -f "$app"
        out="$("$bin/numacoll-run" mpirun.openmpi --app /nonexistent/appfile 2>&1)"; rc=$?
        if [ $rc -eq 2 ] && grep -q "cannot read the appfile '/nonexistent/appfile'" <<<"$out"; then
            echo "ok: unreadable appfile rejected"
        else echo "FAILED: unreadable appfile: rc $rc: $out"; fail=1; fi
        ;;
    mpich)
        check "mpiexec.mpich" "^mpiexec\.mpich -genv LD_PRELOAD [^ ]*/mpich/libnumacoll_mpi\.so -n 2 ./a" mpiexec.mpich -n 2 ./a
        check "-env LD_PRELOAD ... keeps the library first" \
            "-n 1 -env LD_PRELOAD [^ ]*/mpich/libnumacoll_mpi\.so:libm\.so\.6 ./a" \
            mpiexec.mpich -n 1 -env LD_PRELOAD libm.so.6 ./a
        # -genv covers every context already
        check "MPMD: one -genv" "^mpiexec\.mpich -genv LD_PRELOAD [^ ]+ -n 1 ./a : -n 2 ./b $" \
            mpiexec.mpich -n 1 ./a : -n 2 ./b
        ;;
    esac
done
check "singleton: the default library in the environment" "^LD_PRELOAD=[^ ]*libnumacoll_mpi\.so ./a" ./a
out="$("$bin/numacoll-run" --mpi bogus mpirun ./a 2>&1)"; rc=$?
if [ $rc -eq 2 ] && grep -q "allowed: openmpi, mpich" <<<"$out"; then echo "ok: bad --mpi rejected"
else echo "FAILED: bad --mpi: rc $rc: $out"; fail=1; fi
exit $fail
