# Sourced by the MPI test scripts: what the build recorded about each MPI in the manifest
# share/numacoll/mpis.tsv (src/mpi/CMakeLists.txt writes it; one tab-separated line per
# MPI: family, version, MPI standard, C wrapper, launcher, Fortran wrapper, preload, preload
# name, ...).
#   nc_mpi_field PREFIX MPI COLUMN      PREFIX: the build tree or the install prefix;
#                                       MPI: a family (its first line: the MPI the family's
#                                       tests run with) or a preload name (openmpi5);
#                                       COLUMN: family, version, cc, launcher, fc
nc_mpi_field() {
    local col
    case "$3" in family) col=1 ;; version) col=2 ;; cc) col=4 ;; launcher) col=5 ;; fc) col=6 ;; *) return 1 ;; esac
    awk -F'\t' -v f="$2" -v c="$col" '!/^#/ && ($1 == f || $8 == f) { print $c; exit }' \
        "$1/share/numacoll/mpis.tsv" 2>/dev/null
}
# nc_mpi_launcher PREFIX FAMILY: the recorded launcher; exits the script with a message
# if there is none
nc_mpi_launcher() {
    local l
    l="$(nc_mpi_field "$1" "$2" launcher)"
    if [ -z "$l" ]; then
        echo "FAILED: no launcher for $2 recorded in $1/share/numacoll/mpis.tsv" >&2
        exit 2
    fi
    echo "$l"
}
# nc_mpi_launcher_defect PREFIX FAMILY WHAT: why a test of WHAT (mpmd: MPMD launches;
# recovery: survivors of a killed rank under --enable-recovery) cannot pass with the
# launcher of the MPI version the build recorded (a defect of that MPI, seen without
# numacoll too), empty if none is known. The test prints it after "SKIP: " and exits 77,
# ctest's SKIP_RETURN_CODE of those tests.
nc_mpi_launcher_defect() {
    local v
    v="$(nc_mpi_field "$1" "$2" version)"
    case "$2:$3:$v" in
    openmpi:mpmd:5.*)
        echo "Open MPI $v's launcher (prterun) crashes on every MPMD launch (':' or --app)," \
            "without numacoll too (seen with 5.0.7)" ;;
    openmpi:recovery:5.*)
        echo "Open MPI $v's launcher ends the second survivor once the first exits," \
            "despite --enable-recovery (seen with 5.0.7)" ;;
    esac
}
# nc_mpi_skip_defect PREFIX FAMILY WHAT: exit 77 with the reason if nc_mpi_launcher_defect
# names one
nc_mpi_skip_defect() {
    local why
    why="$(nc_mpi_launcher_defect "$@")"
    [ -z "$why" ] && return 0
    echo "SKIP: $why"
    exit 77
}
