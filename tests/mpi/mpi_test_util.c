/*
 * The MPI test programs' shared state (mpi_test_util.h).
 */
#include "mpi_test_util.h"

int g_rank, g_size;
_Atomic int g_fail;
size_t (*g_stats_fn)(stats_t *, size_t);
