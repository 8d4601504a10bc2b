/*
 * Algorithm "rsag": a reduce-scatter, then an allgather, per chunk. Member m posts the
 * chunk's input except its own slice (the m-th of P slices cut at 64-byte boundaries), folds
 * its slice from every member's in slot and its own input buffer, in rank order, into its
 * result slot, and announces it with its reduced flag; then every member that wants the
 * result copies each slice from its folder's result slot. All members share the arithmetic
 * and the reads of the inputs: each reads the message about twice instead of P times, the
 * large-message algorithm. For a reduce only the root gathers the slices.
 */
#include "reduce_internal.h"

#include <string.h>

/* member m's slice of a chunk of n elements of esize bytes: [*lo, *hi) */
static void slice_of(int m, int nprocs, size_t n, size_t esize, size_t *lo, size_t *hi)
{
    size_t grain = 64 / esize; /* elements per 64 bytes (esize divides 64: ops.c) */
    size_t grains = (n + grain - 1) / grain;
    size_t per = (grains + (size_t)nprocs - 1) / (size_t)nprocs * grain;
    size_t a = (size_t)m * per, b = a + per;
    *lo = a < n ? a : n;
    *hi = b < n ? b : n;
}

void rd_post_rsag(rd_call_t *call, const rd_chunk_t *chunk)
{
    const size_t es = call->esize;
    size_t lo, hi;
    slice_of(call->me, call->nprocs, chunk->n, es, &lo, &hi);
    char *slot = rd_in(call->state, call->me, chunk->slot);
    const char *in = call->input + chunk->first * es;
    /* nobody but us reads our own slice: it stays in our input buffer */
    rd_copy_shared(call, slot, in, lo * es);
    rd_copy_shared(call, slot + hi * es, in + hi * es, (chunk->n - hi) * es);
}

int rd_step_rsag(rd_call_t *call, const rd_chunk_t *chunk)
{
    const nc_reduce_team_t *r = call->state;
    const size_t es = call->esize;
    int rc;
    if (chunk->first != 0) {
        /* the protocol waited for the first chunk's posts (to compare signatures) */
        rc = rd_wait_posted(call, chunk);
        if (rc) return rc;
    }
    size_t lo, hi;
    slice_of(call->me, call->nprocs, chunk->n, es, &lo, &hi);
    char *mine = rd_result(r, call->me, chunk->slot) + lo * es;
    char *out = call->output ? call->output + chunk->first * es : NULL;
    /* Streamed: fold into the output, then stream the slice into our result slot. Plain,
     * without an output (a reduce's non-root), or where the fold could overwrite input it
     * has yet to read (rd_fold_from_input_ok): fold into the result slot, copied to the
     * output below. */
    int via_output = out && call->stream && rd_fold_from_input_ok(call);
    if (hi > lo) {
        rd_fold(call, chunk, lo, hi - lo, via_output ? out + lo * es : mine, 1);
        if (via_output) nc_copy_stream(mine, out + lo * es, (hi - lo) * es);
    }
    /* release: our slice of the chunk before the flag that announces it */
    nc_flag_post(call->team, rd_flag(r, call->me, RD_LINE_REDUCED), chunk->number);
    if (!out) return NUMACOLL_OK; /* a reduce's non-root */
    if (hi > lo && !via_output) memcpy(out + lo * es, mine, (hi - lo) * es);
    /* Wait: member m alone writes its reduced flag, with release after its slice of the
     * chunk; reduced >= chunk (acquire) makes the slice visible, and m rewrites that result
     * slot only for chunk + slots, after our done says chunk */
    rc = rd_wait_all(call, RD_LINE_REDUCED, chunk->number);
    if (rc) return rc;
    for (int m = 0; m < call->nprocs; m++) {
        if (m == call->me) continue;
        slice_of(m, call->nprocs, chunk->n, es, &lo, &hi);
        if (hi > lo)
            memcpy(out + lo * es, rd_result(r, m, chunk->slot) + lo * es, (hi - lo) * es);
    }
    return NUMACOLL_OK;
}
