/*
 * numacoll-bench --mpi allreduce|reduce: the reductions' part of the MPI benchmark
 * (reduce_bench.c: options, variants, timing, report; reduce_limits.c: the physical
 * references limit:inline and limit:fold). mpibench.c hands the run over to
 * nc_reduce_bench_main when the collective is allreduce or reduce.
 */
#ifndef NC_REDUCE_BENCH_H
#define NC_REDUCE_BENCH_H

#include "bench/bench_wait.h"

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

/** The whole run of `numacoll-bench --mpi allreduce|reduce ...` (argv[1] names the
 *  collective); returns the process's exit status. Calls MPI_Init and MPI_Finalize. */
int nc_reduce_bench_main(int argc, char **argv);

/* limit:inline carries at most this many bytes per member (its blocks' payload) */
#define RB_INLINE_MAX 1024

/* What the references need to know about the run and the current call. */
typedef struct rb_call {
    MPI_Comm comm;
    int rank, size;
    int root;           /* the reduce's root, -1 for allreduce */
    size_t count;       /* doubles per member */
    const double *send; /* this member's input of the call */
    double *recv;       /* the result (allreduce: every member; reduce: the root) */
    bench_watch_t *watch; /* the policy of the references' waits (bench_wait.h) */
} rb_call_t;

/** Set limit:inline up on c->comm (a shared window; collective). 0, or -1 after a message
 *  on stderr. */
int rb_inline_setup(const rb_call_t *c);
/** One limit:inline reduction of c->count doubles (at most RB_INLINE_MAX bytes). */
void rb_inline_run(const rb_call_t *c);
/** Free limit:inline's window (collective; nothing when it was not set up). */
void rb_inline_free(void);

/** The share one member folds in a reduce-scatter of @p count doubles over @p size members:
 *  ceil(count / size) doubles. */
size_t rb_fold_share(size_t count, int size);
/** limit:fold: fold the @p size consecutive slices of @p share doubles of @p in into
 *  @p out (share doubles), in slice order. */
void rb_fold_run(const double *restrict in, double *restrict out, size_t share, int size);

#endif
