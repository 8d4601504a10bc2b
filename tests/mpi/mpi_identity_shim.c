/*
 * The MPI library of a stand-in MPI installation (tests/mpi/test_cluster_prefix.sh: "Open
 * MPI 5" on a machine that has only Open MPI 4). It is installed under the real library's
 * SONAME (libmpi.so.40) and depends on a copy of the real library renamed (libmpr.so.40),
 * which provides every MPI function but this one: what the MPI library says it is,
 * MPI_Get_library_version (and its PMPI_ name), here NC_SHIM_IDENTITY ("Open MPI v5.0.9,
 * ..."). numacoll-run (through numacoll-info --mpi-identity) and the programs linked
 * against the stand-in see that version; everything else runs in the real library.
 */
#include <string.h>

#ifndef NC_SHIM_IDENTITY
#error "NC_SHIM_IDENTITY (the library version string) must be defined"
#endif

int MPI_Get_library_version(char *version, int *resultlen);
int PMPI_Get_library_version(char *version, int *resultlen);

int PMPI_Get_library_version(char *version, int *resultlen)
{
    size_t n = strlen(NC_SHIM_IDENTITY);
    memcpy(version, NC_SHIM_IDENTITY, n + 1);
    *resultlen = (int)n;
    return 0;
}

int MPI_Get_library_version(char *version, int *resultlen)
{
    return PMPI_Get_library_version(version, resultlen);
}
