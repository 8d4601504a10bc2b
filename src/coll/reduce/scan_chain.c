/*
 * Algorithm "scan-chain" of numacoll_scan / numacoll_exscan: the prefixes travel down the
 * ranks. Member 0's prefix of a chunk is its input; member m > 0 waits for member m - 1's
 * prefix p_{m-1} (in m - 1's result slot, announced by its reduced flag), folds
 * p_m = p_{m-1} op x_m into its own result slot for member m + 1 (the last member keeps
 * it only in its output), announces it, and writes its output: p_m (scan) or p_{m-1}
 * (exscan; member 0's output is not touched). Every member reads and writes the message
 * about twice whatever P, and the members work on different chunks at once (up to slots
 * chunks apart): the large-message algorithm. Nobody reads the in slots (no post; the
 * stamps carry the first chunk's signature only).
 *
 * Order of the fold: p_m = (((x_0 op x_1) op x_2) ... op x_m), the rank order of every
 * reduction, so the result is bitwise that of scan-flat.
 */
#include "reduce_internal.h"

#include <string.h>

void rd_post_scan_chain(rd_call_t *call, const rd_chunk_t *chunk)
{
    (void)call, (void)chunk; /* nobody reads our in slot */
}

int rd_step_scan_chain(rd_call_t *call, const rd_chunk_t *chunk)
{
    nc_reduce_team_t *r = call->state;
    const size_t es = call->esize, bytes = chunk->n * es;
    const char *own = call->input + chunk->first * es;
    char *out = call->output ? call->output + chunk->first * es : NULL;
    const int has_next = call->me + 1 < call->nprocs;
    /* where we fold our prefix: our result slot for our successor, or for the last member
     * of a scan whose input and output overlap in part (call->post_own) */
    char *next = has_next || (call->post_own && !call->exclusive)
                     ? rd_result(r, call->me, chunk->slot)
                     : NULL;
    if (call->me == 0) {
        if (has_next) {
            rd_copy_shared(call, next, own, bytes);
            /* release: our prefix of the chunk before the flag that announces it */
            nc_flag_post(call->team, rd_flag(r, 0, RD_LINE_REDUCED), chunk->number);
        }
        if (!call->exclusive && out != own) memmove(out, own, bytes);
        return NUMACOLL_OK;
    }
    /* Wait: member m - 1 alone writes its reduced flag, with release after its prefix of
     * the chunk; reduced >= chunk (acquire) makes the prefix visible, and m - 1 rewrites
     * that result slot only for chunk + slots, after our done says chunk */
    int prev_m = call->me - 1;
    int rc = rd_wait_flag(call, prev_m, rd_flag(r, prev_m, RD_LINE_REDUCED), chunk->number);
    if (rc) return rc;
    const char *prev = rd_result(r, prev_m, chunk->slot);
    if (next) {
        /* own may be out (in place): read here before out is written below */
        call->kernel(next, prev, own, chunk->n);
        /* release: our prefix of the chunk before the flag that announces it */
        if (has_next)
            nc_flag_post(call->team, rd_flag(r, call->me, RD_LINE_REDUCED), chunk->number);
        memcpy(out, call->exclusive ? prev : next, bytes);
    } else if (call->exclusive) {
        memcpy(out, prev, bytes);
    } else {
        call->kernel(out, prev, own, chunk->n); /* element-wise: out may be own */
    }
    return NUMACOLL_OK;
}
