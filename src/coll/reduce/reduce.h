/*
 * The reduction layer's interface to the layers above it (team facade, MPI layer):
 * allreduce and reduce on a team, over the team's reduction buffers (created at its first
 * reduction). The public calls are numacoll_allreduce, numacoll_reduce and
 * numacoll_reduce_with (include/numacoll/numacoll.h).
 */
#ifndef NC_REDUCE_H
#define NC_REDUCE_H

#include "../../core/nc_internal.h"

NC_CFG_LINK(reduce); /* config_rows.c: this layer's rows (config.h) */

/** Run one allreduce (@p root < 0) or reduce (root >= 0) on @p t with algorithm @p alg (an
 *  index into the registry, or -1 for the configured or automatic choice). Arguments are
 *  checked here (the message names @p who, e.g. "numacoll_allreduce"); the caller brackets
 *  the call with nc_team_op_enter / nc_team_op_leave. */
int nc_reduce_run(numacoll_team_t *t, const void *sendbuf, void *recvbuf, size_t count,
                  numacoll_dtype_t dtype, numacoll_op_t op, int root, int alg, const char *who);

/** Run one reduce-scatter on @p t: member m gets its slice of the rank-order reduction,
 *  recvcounts[m] elements (recvcounts NULL: @p block elements each, reduce_scatter_block),
 *  at the start of recvbuf; sendbuf NUMACOLL_IN_PLACE takes the whole input from recvbuf.
 *  Arguments are checked here (messages name @p who); the caller brackets the call with
 *  nc_team_op_enter / nc_team_op_leave. */
int nc_reduce_scatter_run(numacoll_team_t *t, const void *sendbuf, void *recvbuf,
                          const size_t *recvcounts, size_t block, numacoll_dtype_t dtype,
                          numacoll_op_t op, const char *who);

/** Run one scan (@p exclusive 0) or exscan (1) on @p t, as nc_reduce_scatter_run; exscan's
 *  member 0 does not touch recvbuf (it may be NULL there unless in place). */
int nc_scan_run(numacoll_team_t *t, const void *sendbuf, void *recvbuf, size_t count,
                numacoll_dtype_t dtype, numacoll_op_t op, int exclusive, const char *who);

/** @p inout = @p in op @p inout, element by element (@p in: the lower rank's value), with
 *  the kernels of the shared-memory reductions; NUMACOLL_ERR_ARG for a pair they do not
 *  take. For the MPI layer's step between nodes. */
int nc_reduce_local(numacoll_dtype_t dtype, numacoll_op_t op, const void *in, void *inout,
                    size_t n);

/** Registry index of algorithm @p name ("auto" -> -1); NUMACOLL_ERR_NOT_FOUND (message
 *  naming the allowed names) for an unknown one. */
int nc_reduce_alg_lookup(const char *name, int *alg);

/** Name of the algorithm the automatic choice takes on @p t for @p bytes (allreduce if
 *  root < 0), from the team's agreed parameters, or before its first reduction from this
 *  process's configuration; "?" for an invalid configuration. */
const char *nc_reduce_choice(numacoll_team_t *t, size_t bytes, int root);

/** Create the team's reduction buffers if it has none: collective (every member calls it at
 *  the same point) with an agreed status, so that a caller taking a failure as "reduce
 *  natively" decides alike on every member. nc_reduce_run sets them up itself otherwise. */
int nc_reduce_setup(numacoll_team_t *t);
/** Whether everything nc_reduce_setup makes exists (the buffers, and the broadcast state
 *  where the reductions broadcast) */
static inline int nc_reduce_is_set_up(const numacoll_team_t *t)
{
    return t->reduce && (!t->reduce_needs_bcast || t->bcast);
}

/** Release the team's reduction state (team destruction). */
void nc_reduce_team_fini(numacoll_team_t *t);

#endif
