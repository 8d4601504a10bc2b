#!/bin/bash
# numacoll-run chooses the preload and the way to pass it from the launcher, refuses a
# program of another MPI than the launcher's (or --mpi's, --lib's) with a message naming
# both, and reports bad options (a missing value, a missing --lib file) clearly.
#   test_numacoll_run.sh BIN_DIR "FLAVORS"
set -u
# FLAVORS: blank- or ';'-separated (ctest passes the CMake list "openmpi;mpich")
bin="$1"; flavors="${2//;/ }"; fail=0
check() { # description, regex, command...
    local d="$1" re="$2"; shift 2
    local out; out="$("$bin/numacoll-run" --print "$@" 2>&1)"
    if grep -Eq -- "$re" <<<"$out"; then echo "ok: $d: $out"
    else echo "FAILED: $d: '$out' does not match /$re/"; fail=1; fi
}
for f in $flavors; do
    case $f in
    openmpi)
        check "mpirun.openmpi" "^mpirun\.openmpi -x LD_PRELOAD=[^ ]*/libnumacoll_mpi-openmpi[0-9]+\.so -np 2 ./a" mpirun.openmpi -np 2 ./a
        if readlink -f "$(command -v mpirun)" | grep -q orterun; then
            check "mpirun -> orterun (symlinks resolved)" "^mpirun -x LD_PRELOAD=[^ ]*/libnumacoll_mpi-openmpi[0-9]+\.so" mpirun -np 2 ./a
        fi
        NUMACOLL_VERBOSE=1 check "NUMACOLL_* forwarded with -x" "-x NUMACOLL_VERBOSE" mpirun.openmpi -np 2 ./a
        # -x covers one app context: repeated after every ':'
        NUMACOLL_VERBOSE=1 check "MPMD: -x in every context" \
            "^mpirun\.openmpi -x LD_PRELOAD=[^ ]+ -x NUMACOLL_VERBOSE -np 1 ./a : -x LD_PRELOAD=[^ ]+ -x NUMACOLL_VERBOSE -np 2 ./b x : -x LD_PRELOAD=[^ ]+ -x NUMACOLL_VERBOSE -np 1 ./c" \
            mpirun.openmpi -np 1 ./a : -np 2 ./b x : -np 1 ./c
        # the command's own LD_PRELOAD keeps the library in front
        check "-x LD_PRELOAD=... keeps the library first" \
            "-np 1 -x LD_PRELOAD=[^ ]*/libnumacoll_mpi-openmpi[0-9]+\.so:libm\.so\.6 ./a" \
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
        check "mpiexec.mpich" "^mpiexec\.mpich -genv LD_PRELOAD [^ ]*/libnumacoll_mpi-mpich[0-9]+\.so -n 2 ./a" mpiexec.mpich -n 2 ./a
        check "-env LD_PRELOAD ... keeps the library first" \
            "-n 1 -env LD_PRELOAD [^ ]*/libnumacoll_mpi-mpich[0-9]+\.so:libm\.so\.6 ./a" \
            mpiexec.mpich -n 1 -env LD_PRELOAD libm.so.6 ./a
        # -genv covers every context already
        check "MPMD: one -genv" "^mpiexec\.mpich -genv LD_PRELOAD [^ ]+ -n 1 ./a : -n 2 ./b $" \
            mpiexec.mpich -n 1 ./a : -n 2 ./b
        ;;
    esac
done
check "singleton: the default library in the environment" "^LD_PRELOAD=[^ ]*libnumacoll_mpi[-a-z0-9]*\.so ./a" ./a
out="$("$bin/numacoll-run" --mpi bogus mpirun ./a 2>&1)"; rc=$?
if [ $rc -eq 2 ] && grep -q "allowed: openmpi, mpich" <<<"$out"; then echo "ok: bad --mpi rejected"
else echo "FAILED: bad --mpi: rc $rc: $out"; fail=1; fi

# options: a missing value or a missing file is an error that says so (exit 2)
expect_err() { # description, regex, args...
    local d="$1" re="$2"; shift 2
    local out rc
    out="$("$bin/numacoll-run" "$@" 2>&1)"; rc=$?
    if [ $rc -eq 2 ] && grep -Eq -- "$re" <<<"$out"; then echo "ok: $d: $out" | head -n 1
    else echo "FAILED: $d: rc $rc (want 2), output '$out' does not match /$re/"; fail=1; fi
}
expect_err "--mpi without a value" "^numacoll-run: --mpi needs a value: openmpi or mpich" --mpi
expect_err "--mpi= without a value" "^numacoll-run: --mpi needs a value" --mpi= mpirun ./a
expect_err "--lib without a value" "^numacoll-run: --lib needs the path" --lib
expect_err "--lib of a missing file" "^numacoll-run: --lib '/nonexistent/libx.so': no such file" \
    --lib /nonexistent/libx.so mpirun -np 2 ./a
expect_err "unknown option" "^numacoll-run: unknown option '--bogus'" --bogus mpirun ./a
# --help documents every option and ends with a whole sentence; --version
out="$("$bin/numacoll-run" --help 2>&1)"; rc=$?
miss=""
for w in "--mpi NAME" "--lib PATH" "--env-style STYLE" "--print" "--force" "--version" \
    "-h, --help" "The program's MPI" "Exit status" "Collectives numacoll runs" "srun" \
    "mpirun_rsh" "anything else"; do
    grep -qF -- "$w" <<<"$out" || miss+=" '$w'"
done
if [ $rc -eq 0 ] && [ -z "$miss" ] && grep -v '^ *$' <<<"$out" | tail -n 1 | grep -q '[.)]$'; then
    echo "ok: --help documents every option"
else echo "FAILED: --help: rc $rc, lacks$miss or stops mid-sentence: $(tail -n 3 <<<"$out")"; fail=1; fi
out="$("$bin/numacoll-run" --version 2>&1)"; rc=$?
if [ $rc -eq 0 ] && grep -Eq "^numacoll-run \(numacoll\) [0-9]+\.[0-9]+" <<<"$out"; then echo "ok: --version: $(head -n 1 <<<"$out")"
else echo "FAILED: --version: rc $rc: $out"; fail=1; fi

# the program's MPI against the launcher's (ldd of an executable; python: its mpi4py)
tdir="$(cd "$bin/.." && pwd)/tests/mpi"
po="$tdir/mpi_coll_test_openmpi" pm="$tdir/mpi_coll_test_mpich"
if [[ " $flavors " == *" openmpi "* ]] && [[ " $flavors " == *" mpich "* ]] && [ -x "$po" ] && [ -x "$pm" ]; then
    expect_err "MPICH launcher, Open MPI program" \
        "^numacoll-run: MPI mismatch: the launcher mpiexec\.mpich belongs to MPICH, but [^ ]*mpi_coll_test_openmpi loads Open MPI \([^)]*libmpi\.so\.40\)" \
        --print mpiexec.mpich -n 2 "$po" barrier 10
    expect_err "Open MPI launcher, MPICH program" \
        "MPI mismatch: the launcher mpirun\.openmpi belongs to Open MPI, but [^ ]*mpi_coll_test_mpich loads MPICH" \
        --print mpirun.openmpi -np 2 "$pm"
    expect_err "MPMD: one context's program of the other MPI" \
        "MPI mismatch: .* but [^ ]*mpi_coll_test_mpich loads MPICH" \
        --print mpirun.openmpi -np 1 "$po" : -np 1 "$pm"
    expect_err "--mpi against the program" "MPI mismatch: --mpi mpich preloads numacoll's library for MPICH, but" \
        --print --mpi mpich "$po"
    expect_err "--lib against the program" "MPI mismatch: --lib [^ ]*/libnumacoll_mpi-mpich[0-9]+\.so is numacoll's library for MPICH" \
        --print --lib "$bin/../lib/mpich/libnumacoll_mpi.so" mpirun.openmpi -np 2 "$po"
    # refused before anything runs (no Open MPI runtime errors under Hydra)
    out="$(timeout 60 "$bin/numacoll-run" mpiexec.mpich -n 2 "$po" barrier 10 2>&1)"; rc=$?
    if [ $rc -eq 2 ] && grep -q "^numacoll-run: MPI mismatch" <<<"$out" && ! grep -qi "orte\|pmix" <<<"$out"; then
        echo "ok: a mismatched launch is refused before it starts"
    else echo "FAILED: mismatched launch: rc $rc: $out"; fail=1; fi
    out="$("$bin/numacoll-run" --force --print mpiexec.mpich -n 2 "$po" 2>&1)"; rc=$?
    if [ $rc -eq 0 ] && grep -q "^numacoll-run: --force: running the command anyway" <<<"$out" &&
        grep -Eq "^mpiexec\.mpich -genv LD_PRELOAD [^ ]*/libnumacoll_mpi-mpich[0-9]+\.so -n 2 " <<<"$out"; then
        echo "ok: --force runs a mismatched command"
    else echo "FAILED: --force: rc $rc: $out"; fail=1; fi
    check "matching program and launcher: no message" "^mpirun\.openmpi -x LD_PRELOAD=[^ ]*/libnumacoll_mpi-openmpi[0-9]+\.so -np 2 [^ ]*mpi_coll_test_openmpi *$" \
        mpirun.openmpi -np 2 "$po"
    # a singleton run preloads the program's MPI's library (a name with "mpich" in it is
    # not taken for a launcher)
    check "singleton: the program's MPI" "^LD_PRELOAD=[^ ]*/libnumacoll_mpi-mpich[0-9]+\.so [^ ]*mpi_coll_test_mpich" "$pm"
    # python: the MPI library of the mpi4py the interpreter imports (a stand-in package whose
    # extension module is linked with Open MPI, as Debian's python3-mpi4py is)
    if [ -x /usr/bin/python3 ]; then
        fake="$(mktemp -d)"
        mkdir -p "$fake/mpi4py"
        : >"$fake/mpi4py/__init__.py"
        cp "$po" "$fake/mpi4py/MPI.so" # an object that loads Open MPI's libmpi
        printf '#!/usr/bin/python3\nfrom mpi4py import MPI\n' >"$fake/app.py"
        chmod +x "$fake/app.py"
        PYTHONPATH="$fake" expect_err "MPICH launcher, python3 with an Open MPI mpi4py" \
            "MPI mismatch: the launcher mpiexec\.mpich belongs to MPICH, but /usr/bin/python3 imports mpi4py \($fake/mpi4py/MPI\.so\), built with Open MPI" \
            --print mpiexec.mpich -n 2 /usr/bin/python3 "$fake/app.py"
        out="$(PYTHONPATH="$fake" "$bin/numacoll-run" --print mpiexec.mpich -n 2 /usr/bin/python3 app.py 2>&1)"
        if grep -q "pip install" <<<"$out"; then echo "ok: the mpi4py mismatch says how to get an MPICH mpi4py"
        else echo "FAILED: no mpi4py advice: $out"; fail=1; fi
        PYTHONPATH="$fake" expect_err "a python script (#! line) with an Open MPI mpi4py" \
            "MPI mismatch: .* but [^ ]*app\.py imports mpi4py" --print mpiexec.mpich -n 2 "$fake/app.py"
        PYTHONPATH="$fake" check "Open MPI launcher, Open MPI mpi4py" \
            "^mpirun\.openmpi -x LD_PRELOAD=[^ ]*/libnumacoll_mpi-openmpi[0-9]+\.so -np 2 /usr/bin/python3 app\.py *$" \
            mpirun.openmpi -np 2 /usr/bin/python3 app.py
        rm -rf "$fake"
    fi
    # srun (Slurm): a launcher, not the program; the preload is the program's MPI's, passed
    # with --export (a fake srun on PATH prints its arguments and its own LD_PRELOAD)
    fake="$(mktemp -d)"
    printf '#!/bin/sh\necho "fake srun args: $*"\necho "fake srun own LD_PRELOAD=${LD_PRELOAD:-}"\n' >"$fake/srun"
    chmod +x "$fake/srun"
    srun_case() { # description, regex (one line of the fake's output), command...
        local d="$1" re="$2"; shift 2
        local out rc
        out="$(PATH="$fake:$PATH" "$bin/numacoll-run" "$@" 2>&1)"; rc=$?
        if [ $rc -eq 0 ] && grep -Eq -- "$re" <<<"$out" && grep -q "^fake srun own LD_PRELOAD=$" <<<"$out"; then
            echo "ok: $d"
        else echo "FAILED: $d: rc $rc, '$out' lacks /$re/ or srun itself was preloaded"; fail=1; fi
    }
    srun_case "srun, an MPICH program" \
        "^fake srun args: --export=ALL,LD_PRELOAD=[^ ]*/libnumacoll_mpi-mpich[0-9]+\.so -n 2 [^ ]*mpi_coll_test_mpich barrier 3$" \
        srun -n 2 "$pm" barrier 3
    srun_case "srun, an Open MPI program, the command's own --export kept" \
        "^fake srun args: -p debug --export=NONE,LD_PRELOAD=[^ ]*/libnumacoll_mpi-openmpi[0-9]+\.so -n 2 [^ ]*mpi_coll_test_openmpi$" \
        srun -p debug --export=NONE -n 2 "$po"
    srun_case "srun --export VALUE (two words)" \
        "^fake srun args: --export=HOME,LD_PRELOAD=[^ ]*/libnumacoll_mpi-mpich[0-9]+\.so -n 1 " \
        srun --export HOME -n 1 "$pm"
    out="$(PATH="$fake:$PATH" "$bin/numacoll-run" srun -n 2 ./no-such-program 2>&1)"; rc=$?
    if [ $rc -eq 2 ] && grep -q "cannot tell which MPI the program of this srun command uses.*--mpi" <<<"$out"; then
        echo "ok: srun with no MPI program found: asks for --mpi"
    else echo "FAILED: srun, unknown program: rc $rc: $out"; fail=1; fi
    PATH="$fake:$PATH" expect_err "srun, --mpi against the program" \
        "MPI mismatch: --mpi openmpi preloads numacoll's library for Open MPI, but [^ ]*mpi_coll_test_mpich loads MPICH" \
        --print --mpi openmpi srun -n 2 "$pm"
    rm -rf "$fake"
    # other launchers known by name: Open MPI 5's prterun, MPICH's mpiexec.hydra
    check "prterun: Open MPI" "^prterun -x LD_PRELOAD=[^ ]*/libnumacoll_mpi-openmpi[0-9]+\.so -np 2 " prterun -np 2 "$po"
    check "mpiexec.hydra: MPICH" "^mpiexec\.hydra -genv LD_PRELOAD [^ ]*/libnumacoll_mpi-mpich[0-9]+\.so -n 2 " mpiexec.hydra -n 2 "$pm"
    # MVAPICH's mpirun_rsh: VAR=VALUE arguments just before the program (host names may
    # precede it), the command's own LD_PRELOAD=... keeping the library first; an MPICH-
    # family launcher (an Open MPI program refused)
    NUMACOLL_VERBOSE=1 check "mpirun_rsh: the environment as arguments before the program" \
        "^mpirun_rsh -np 2 n0 n1 MV2_X=1 LD_PRELOAD=[^ ]*/libnumacoll_mpi-mpich[0-9]+\.so NUMACOLL_VERBOSE=1 [^ ]*mpi_coll_test_mpich barrier 3 *$" \
        mpirun_rsh -np 2 n0 n1 MV2_X=1 "$pm" barrier 3
    check "mpirun_rsh: the command's LD_PRELOAD keeps the library first" \
        "^mpirun_rsh -np 2 n0 LD_PRELOAD=[^ ]*/libnumacoll_mpi-mpich[0-9]+\.so:libm\.so\.6 [^ ]*mpi_coll_test_mpich *$" \
        mpirun_rsh -np 2 n0 LD_PRELOAD=libm.so.6 "$pm"
    expect_err "mpirun_rsh with an Open MPI program" "MPI mismatch: the launcher mpirun_rsh belongs to MPICH" \
        --print mpirun_rsh -np 2 "$po"
    # a launcher it does not know (a vendor's): the preload of the program's MPI, exported
    # to the launcher, which passes its environment on; --env-style names another rule
    check "a vendor launcher: the environment it passes on" \
        "^LD_PRELOAD=[^ ]*/libnumacoll_mpi-mpich[0-9]+\.so aprun -n 2 [^ ]*mpi_coll_test_mpich *$" \
        aprun -n 2 "$pm"
    check "an unknown mpiexec with --env-style genv" \
        "^mpiexec\.vendor -genv LD_PRELOAD [^ ]*/libnumacoll_mpi-openmpi[0-9]+\.so -n 2 [^ ]*mpi_coll_test_openmpi *$" \
        --env-style genv mpiexec.vendor -n 2 "$po"
    expect_err "an unknown mpiexec without --mpi or --env-style" "use --mpi openmpi\|mpich .the MPI. or --env-style" \
        --print mpiexec.vendor -n 2 "$po"
    expect_err "a bad --env-style" "--env-style 'no' is not valid; allowed: x, genv, export, args, environ" \
        --print --env-style no mpirun -n 2 ./a
    # the help names every collective the preload runs (its MPI_* entry points)
    out="$("$bin/numacoll-run" --help | tr '\n' ' ')"
    for c in $(nm -D --defined-only "$bin/../lib/openmpi/libnumacoll_mpi.so" |
        awk '$3 ~ /^MPI_[A-Z][a-z_]*[a-z]$/ && $3 !~ /^MPI_Session/ { sub(/_c$/, "", $3); print $3 }' | sort -u) \
        MPI_Barrier MPI_Bcast MPI_Allreduce MPI_Reduce; do
        grep -q "Collectives numacoll runs .*[: ]$c[,.]" <<<"$out" ||
            { echo "FAILED: numacoll-run --help does not name $c"; fail=1; }
    done
    # the preload is the one built for the program's MPI library, matched by that library
    # and what it says it is (MPI_Get_library_version), not by the launcher: a copy of
    # numacoll-run whose manifest lacks the program's MPI refuses, naming the program's MPI,
    # the MPIs built for and the cmake line that adds it
    alt="$(mktemp -d)"
    mkdir -p "$alt/bin" "$alt/share/numacoll"
    cp "$bin/numacoll-run" "$alt/bin/"
    ln -s "$(readlink -f "$bin/numacoll-info")" "$alt/bin/numacoll-info"
    ln -s "$(readlink -f "$bin/../lib")" "$alt/lib"
    ln -s "$(readlink -f "$bin/../CMakeCache.txt")" "$alt/CMakeCache.txt" # a build tree's
    m="$bin/../share/numacoll/mpis.tsv"
    occ="$(awk -F'\t' '$1 == "openmpi" { print $4 }' "$m")"
    alt_run() { # description, regexes (one per line), args...
        local d="$1" res="$2" re out rc; shift 2
        out="$("$alt/bin/numacoll-run" "$@" 2>&1)"; rc=$?
        while IFS= read -r re; do
            grep -Eq -- "$re" <<<"$out" && continue
            echo "FAILED: $d: rc $rc, output '$out' does not match /$re/"; fail=1; return
        done <<<"$res"
        echo "ok: $d (rc $rc)"
    }
    grep -v "^mpich" "$m" >"$alt/share/numacoll/mpis.tsv"
    alt_run "an MPICH program, numacoll built for Open MPI only" \
"^numacoll-run: numacoll has no preload for the program's MPI: [^ ]*mpi_coll_test_mpich loads MPICH \([^)]*libmpich\.so\.12\), which says \"MPICH Version:.*\" \(ABI libmpich\.so\.12\)
numacoll was built for: openmpi [0-9.]+ \(libmpi\.so\.40, $occ\)\.
^      cmake -S /[^ ]+ -B $alt -DNUMACOLL_MPICC='$occ;[^';]+'$" \
        --print mpiexec.mpich -n 2 "$pm"
    [ "$("$alt/bin/numacoll-run" --print mpiexec.mpich -n 2 "$pm" >/dev/null 2>&1; echo $?)" = 2 ] ||
        { echo "FAILED: no preload for the program's MPI: exit status not 2"; fail=1; }
    # an Open MPI program of another major version than the Open MPI numacoll was built for
    # (4.x and 5.x share libmpi.so.40; here the manifest says one more than the real one):
    # refused, though the launcher is Open MPI's
    omaj="$(awk -F'\t' '$1 == "openmpi" { split($2, v, "."); print v[1] }' "$m")"
    fmaj=$((omaj + 1))
    awk -F'\t' -v OFS='\t' -v f="$fmaj" '$1 == "openmpi" { $2 = f ".0.7"; $8 = "openmpi" f; $10 = "/nonexistent/libmpi.so.40.40.7" } { print }' \
        "$m" >"$alt/share/numacoll/mpis.tsv"
    alt_run "an Open MPI $omaj program, numacoll built for Open MPI $fmaj" \
"^numacoll-run: numacoll has no preload for the program's MPI: .*which says \"Open MPI v$omaj\.
numacoll was built for: openmpi $fmaj\.0\.7 \(libmpi\.so\.40, $occ\), mpich
-DNUMACOLL_MPICC='$occ;[^';]*mpicc[^';]*;[^';]+'$
one preload per MPI family and major version: it is built beside the one for Open MPI $fmaj\.0\.7\)$" \
        --print mpirun.openmpi -np 2 "$po"
    alt_run "--force: the family's preload anyway" \
"--force: no preload built for the program's MPI \(Open MPI v$omaj
^mpirun\.openmpi -x LD_PRELOAD=[^ ]*/libnumacoll_mpi-openmpi[0-9]+\.so -np 2 " \
        --print --force mpirun.openmpi -np 2 "$po"
    # --mpi takes a preload's name of the manifest too
    alt_run "--mpi openmpi$fmaj (a preload name)" "^mpirun\.openmpi -x LD_PRELOAD=[^ ]*/libnumacoll_mpi-openmpi[0-9]+\.so -np 2 \./a" \
        --print --mpi "openmpi$fmaj" mpirun.openmpi -np 2 ./a
    alt_run "--mpi with an unknown name" "--mpi 'openmpi99' is not valid; allowed: openmpi, mpich, openmpi$fmaj, mpich[0-9]+$" \
        --print --mpi openmpi99 mpirun.openmpi -np 2 ./a
    # the MPI tests skip (exit 77, the reason printed) where the recorded MPI version's
    # launcher has a known defect (manifest.sh: Open MPI 5's MPMD launches and recovery),
    # and run elsewhere
    awk -F'\t' -v OFS='\t' '$1 == "openmpi" { $2 = "5.0.7"; $8 = "openmpi5" } { print }' \
        "$m" >"$alt/share/numacoll/mpis.tsv"
    for t in "test_mpmd.sh mpmd MPMD launch" "reduce_kill.sh recovery --enable-recovery"; do
        set -- $t
        out="$("$(dirname "$0")/$1" "$alt/bin" openmpi /bin/false 2>&1)"; rc=$?
        if [ $rc = 77 ] && grep -q "^SKIP: Open MPI 5\.0\.7's launcher .*$3" <<<"$out"; then
            echo "ok: $1 skips under the Open MPI 5.0.7 of a manifest: $out"
        else echo "FAILED: $1 under Open MPI 5.0.7: rc $rc (want 77), '$out'"; fail=1; fi
        why="$(. "$(dirname "$0")/manifest.sh"; nc_mpi_launcher_defect "$bin/.." openmpi "$2")"
        v="$(awk -F'\t' '$1 == "openmpi" { print $2 }' "$m")"
        case "$v" in
        5.*) [ -n "$why" ] || { echo "FAILED: no $2 defect named for Open MPI $v"; fail=1; } ;;
        *) [ -z "$why" ] || { echo "FAILED: a $2 defect named for Open MPI $v: $why"; fail=1; } ;;
        esac
    done
    rm -rf "$alt"
    # a build for two MPIs of one family (the lines of another major version first, their
    # preloads copies named for it, the real lines' MPI library elsewhere so that only what
    # the program's library says decides): each program gets the line of its own major
    # version, not its family's first (MPICH 3 and 4 share the ABI libmpich.so.12)
    alt="$(mktemp -d)"
    mkdir -p "$alt/bin" "$alt/share/numacoll" "$alt/lib"
    cp "$bin/numacoll-run" "$alt/bin/"
    ln -s "$(readlink -f "$bin/numacoll-info")" "$alt/bin/numacoll-info"
    awk -F'\t' -v OFS='\t' '!/^#/ { v = $2; sub(/\..*/, "", v); o = v + 1; n = $8; sub(/[0-9]+$/, "", n)
        print $1, o ".0.1", $3, $4, $5, $6, "lib/libnumacoll_mpi-" n o ".so", n o, $9, "/nonexistent/" $9
        print > "/dev/stderr" }' "$m" >"$alt/share/numacoll/mpis.tsv" 2>"$alt/real"
    awk -F'\t' -v OFS='\t' '{ $10 = "/elsewhere/" $9; print }' "$alt/real" >>"$alt/share/numacoll/mpis.tsv"
    while IFS=$'\t' read -r _ _ _ _ _ _ rel name _; do
        o="${name%%[0-9]*}$(( ${name##*[a-z]} + 1 ))"
        cp "$bin/../$rel" "$alt/lib/libnumacoll_mpi-$o.so"
        ln -s "$(readlink -f "$bin/../$rel")" "$alt/$rel"
    done <"$alt/real"
    mmaj="$(awk -F'\t' '$1 == "mpich" { split($2, v, "."); print v[1] }' "$m")"
    alt_run "two MPICH lines of one ABI: an MPICH $mmaj program gets mpich$mmaj's" \
        "^mpiexec\.mpich -genv LD_PRELOAD $(readlink -f "$bin/../lib/libnumacoll_mpi-mpich$mmaj.so") -n 2 " \
        --print mpiexec.mpich -n 2 "$pm"
    alt_run "two Open MPI lines: an Open MPI $omaj program gets openmpi$omaj's" \
        "^mpirun\.openmpi -x LD_PRELOAD=$(readlink -f "$bin/../lib/libnumacoll_mpi-openmpi$omaj.so") -np 2 " \
        --print mpirun.openmpi -np 2 "$po"
    alt_run "--mpi mpich chooses among the family's lines too" \
        "^mpiexec\.mpich -genv LD_PRELOAD $(readlink -f "$bin/../lib/libnumacoll_mpi-mpich$mmaj.so") -n 2 " \
        --print --mpi mpich mpiexec.mpich -n 2 "$pm"
    alt_run "--mpi mpich$((mmaj + 1)) takes that line" \
        "^mpiexec\.mpich -genv LD_PRELOAD $alt/lib/libnumacoll_mpi-mpich$((mmaj + 1))\.so -n 2 " \
        --print --mpi "mpich$((mmaj + 1))" mpiexec.mpich -n 2 "$pm"
    rm -rf "$alt"
else
    echo "(Open MPI and MPICH not both built: the MPI mismatch and srun checks are skipped)"
fi

# a preload that does not load here (a library it needs is missing) is refused, naming it
if command -v cc >/dev/null; then
    bad="$(mktemp -d)"
    cc -shared -o "$bad/libnc_gone.so" -x c /dev/null &&
        printf 'static const char t[] __attribute__((used)) = "numacoll-mpi-family=mpich";\n' |
        cc -shared -o "$bad/libnumacoll_mpi.so" -x c - -L"$bad" -Wl,--no-as-needed -lnc_gone && rm -f "$bad/libnc_gone.so"
    expect_err "a preload that does not load" \
        "^numacoll-run: the preload $bad/libnumacoll_mpi\.so does not load on this machine" \
        --print --lib "$bad/libnumacoll_mpi.so" mpiexec.mpich -n 2 ./a
    out="$("$bin/numacoll-run" --print --lib "$bad/libnumacoll_mpi.so" mpiexec.mpich -n 2 ./a 2>&1)"
    if grep -q "libnc_gone\.so => not found" <<<"$out"; then echo "ok: the missing library is named"
    else echo "FAILED: the missing library is not named: $out"; fail=1; fi
    rm -rf "$bad"
fi
# numacoll-info --mpis lists every MPI of the manifest with its launcher and preload
out="$("$bin/numacoll-info" --mpis 2>&1)"; rc=$?
for f in $flavors; do
    l="$(awk -F'\t' -v f="$f" '$1 == f { print $5 }' "$bin/../share/numacoll/mpis.tsv")"
    if [ $rc -eq 0 ] && [ -n "$l" ] && grep -q "^$f [0-9]" <<<"$out" &&
        grep -qF "  launcher:        $l" <<<"$out" &&
        grep -Eq "  preload: .*/lib/libnumacoll_mpi-$f[0-9]+\.so$" <<<"$out"; then
        echo "ok: numacoll-info --mpis lists $f"
    else echo "FAILED: numacoll-info --mpis: rc $rc, $f (launcher '$l') not listed: $out"; fail=1; fi
done
[ $fail = 0 ] && echo "numacoll-run checks: PASS"
exit $fail
