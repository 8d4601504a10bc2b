/*
 * The broadcast's reference loops of the MPI benchmark (bcast_limits.c): limit:signal,
 * limit:inline, limit:xcore and limit:pipe, each a bare shared-memory loop on windows of
 * MPI_Win_allocate_shared, measured beside numacoll and the native MPI (mpibench.c says
 * what each one measures and why).
 */
#ifndef NC_BCAST_LIMITS_H
#define NC_BCAST_LIMITS_H

#include "bench/bench_wait.h"

#include <mpi.h>
#include <stddef.h>

typedef enum bcast_limit {
    BCAST_LIMIT_SIGNAL, /* a flag from the root to each receiver */
    BCAST_LIMIT_INLINE, /* a stamp and up to BCAST_LIMIT_INLINE_MAX bytes per receiver */
    BCAST_LIMIT_XCORE,  /* each receiver copies the root's message once, no signal */
    BCAST_LIMIT_PIPE    /* a naive pipelined copy-in copy-out through one window */
} bcast_limit_t;

/** The largest message limit:inline moves. */
#define BCAST_LIMIT_INLINE_MAX 1024

/** The communicator and the wait policy of every loop (the watch of the ranks' pids), and
 *  --root-shift (limit:inline then acks its own calls as a root). Not collective. */
void bcast_limits_init(MPI_Comm comm, bench_watch_t *watch, int root_shift);
/** Set up the windows of @p which for messages of up to @p max_bytes. Collective over the
 *  communicator; ends the program with a message when a window cannot be had. */
void bcast_limits_add(bcast_limit_t which, size_t max_bytes);
/** One call of @p which of @p bytes from @p root into @p buf (the receivers' buffer). */
void bcast_limits_run(bcast_limit_t which, int root, unsigned char *buf, size_t bytes);
/** limit:xcore's source: the root's region of its window, which the root fills with the
 *  next call's message before the barrier that precedes the call. */
unsigned char *bcast_limits_xcore_source(void);
/** Free every window set up. Collective. */
void bcast_limits_free(void);

#endif
