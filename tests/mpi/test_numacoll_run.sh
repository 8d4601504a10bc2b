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
        ;;
    mpich)
        check "mpiexec.mpich" "^mpiexec\.mpich -genv LD_PRELOAD [^ ]*/mpich/libnumacoll_mpi\.so -n 2 ./a" mpiexec.mpich -n 2 ./a
        ;;
    esac
done
check "singleton: the default library in the environment" "^LD_PRELOAD=[^ ]*libnumacoll_mpi\.so ./a" ./a
out="$("$bin/numacoll-run" --mpi bogus mpirun ./a 2>&1)"; rc=$?
if [ $rc -eq 2 ] && grep -q "allowed: openmpi, mpich" <<<"$out"; then echo "ok: bad --mpi rejected"
else echo "FAILED: bad --mpi: rc $rc: $out"; fail=1; fi
exit $fail
