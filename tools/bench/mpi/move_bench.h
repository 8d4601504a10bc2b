/*
 * numacoll-bench --mpi allgather|allgatherv|gather|gatherv|scatter|scatterv: the gather
 * family's part of the MPI benchmark (move_bench.c). mpibench.c hands the run over to
 * nc_move_bench_main when the collective is one of these.
 */
#ifndef NC_MOVE_BENCH_H
#define NC_MOVE_BENCH_H

#include <mpi.h>

/** 1 if @p name is a collective of this mode */
int nc_move_bench_is(const char *name);
/** The whole run of `numacoll-bench --mpi allgather ...` (argv[1] names the collective);
 *  returns the process's exit status. Calls MPI_Init and MPI_Finalize. */
int nc_move_bench_main(int argc, char **argv);

#endif
