/*
 * A ready-made OOB allgather for processes created with fork().
 *
 * The parent calls numacoll_fork_oob_create(P) before forking; the region it returns is
 * an anonymous shared mapping, inherited by every child. Each of the P processes then
 * passes numacoll_fork_oob_allgather as the team's allgather callback and the handle as
 * its context. Used by numacoll's tests, benchmark and examples; handy for any program
 * that forks its workers.
 *
 *     numacoll_fork_oob_t *oob = numacoll_fork_oob_create(P);
 *     for (int r = 0; r < P; r++) if (fork() == 0) { run(r, oob); _exit(0); }
 *     ... run(r):  params.allgather = numacoll_fork_oob_allgather; params.oob_ctx = oob;
 *
 * Waits inside the allgather yield the CPU and honour NUMACOLL_TIMEOUT; a member that
 * exited is detected (its pid is recorded at its first call) and reported as an error.
 */
#ifndef NUMACOLL_FORK_OOB_H
#define NUMACOLL_FORK_OOB_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct numacoll_fork_oob numacoll_fork_oob_t;

/** Create the shared bootstrap region for @p nprocs processes (call before fork). */
numacoll_fork_oob_t *numacoll_fork_oob_create(int nprocs);

/** Set the calling process's rank (call once in each process after fork). */
void numacoll_fork_oob_set_rank(numacoll_fork_oob_t *oob, int rank);

/** Allgather callback (matches numacoll_oob_allgather_fn). */
int numacoll_fork_oob_allgather(const void *sendbuf, void *recvbuf, size_t size, void *ctx);

/** Simple barrier over the bootstrap region (slow path; for test harnesses). */
int numacoll_fork_oob_barrier(numacoll_fork_oob_t *oob);

/** Unmap the region (each process; the parent after its children have exited). */
void numacoll_fork_oob_destroy(numacoll_fork_oob_t *oob);

#ifdef __cplusplus
}
#endif
#endif
