/*
 * Algorithm "flat": every member posts its whole input of a chunk; after step 3 of the
 * chunk protocol (reduce_internal.h) every member that wants the result (all of them for an
 * allreduce, the root for a reduce) folds the whole chunk from every member's in slot, in
 * rank order, straight into its output. One exchange of stamps per chunk and no second
 * phase: the small-message algorithm, where the flags cost more than the arithmetic; a
 * chunk of up to 48 bytes travels in its stamp's cache line. Each reader reads P inputs,
 * so the memory traffic grows as P times the message.
 *
 * A reduce's root is the only reader: nobody reads its in slot, so it does not post its
 * input and folds it from its own buffer instead, where that is safe: the output must not
 * overlap the input, or be the input itself (in place) at a root of rank 0 or 1. Otherwise
 * the fold's first step out = x_0 op x_1 would overwrite input the root has yet to read
 * (in place at a rank >= 2, or buffers that overlap in part, which MPI forbids but some
 * programs pass); such a root posts and folds from its slot as the others do.
 */
#include "reduce_internal.h"

#include <string.h>

/* 1 if this member folds its own input from its buffer rather than from its in slot */
static int own_from_buffer(const rd_call_t *call)
{
    return call->root == call->me && rd_fold_from_input_ok(call);
}

void rd_post_flat(rd_call_t *call, const rd_chunk_t *chunk)
{
    if (own_from_buffer(call)) return; /* nobody reads the root's slot */
    rd_post_whole(call, chunk);
}

int rd_step_flat(rd_call_t *call, const rd_chunk_t *chunk)
{
    if (!call->output) return NUMACOLL_OK; /* a reduce's non-root: its input is posted */
    if (chunk->first != 0) {
        /* the protocol waited for the first chunk's posts (to compare signatures) */
        int rc = rd_wait_posted(call, chunk);
        if (rc) return rc;
    }
    rd_fold(call, chunk, 0, chunk->n, call->output + chunk->first * call->esize,
            own_from_buffer(call));
    return NUMACOLL_OK;
}
