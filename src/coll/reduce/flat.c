/*
 * Algorithm "flat": after step 3 of the chunk protocol (reduce_internal.h) every member
 * that wants the result (all of them for an allreduce, the root for a reduce) folds the
 * whole chunk from every member's in slot, in rank order, straight into its output. One
 * exchange of flags per chunk and no second phase: the small-message algorithm, where the
 * flags cost more than the arithmetic. Each reader reads P inputs, so the memory traffic
 * grows as P times the message.
 */
#include "reduce_internal.h"

int rd_step_flat(rd_call_t *call, const rd_chunk_t *chunk)
{
    if (!call->output) return NUMACOLL_OK; /* a reduce's non-root: its input is posted */
    if (chunk->first != 0) {
        /* the protocol waited for the first chunk's posts (to compare signatures) */
        int rc = rd_wait_all(call, RD_LINE_POSTED, chunk->number, call->who);
        if (rc) return rc;
    }
    rd_fold(call, chunk->number, 0, chunk->n, call->output + chunk->first * call->esize);
    return NUMACOLL_OK;
}
