# Sourced by the MPI test scripts: what the build recorded about each MPI in the manifest
# share/numacoll/mpis.tsv (src/mpi/CMakeLists.txt writes it; one tab-separated line per
# MPI: family, version, MPI standard, C wrapper, launcher, Fortran wrapper, preload).
#   nc_mpi_field PREFIX FAMILY COLUMN   PREFIX: the build tree or the install prefix;
#                                       COLUMN: cc, launcher, fc, version
nc_mpi_field() {
    local col
    case "$3" in version) col=2 ;; cc) col=4 ;; launcher) col=5 ;; fc) col=6 ;; *) return 1 ;; esac
    awk -F'\t' -v f="$2" -v c="$col" '$1 == f { print $c; exit }' \
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
