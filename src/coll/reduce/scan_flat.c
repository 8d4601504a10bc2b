/*
 * Algorithm "scan-flat" of numacoll_scan / numacoll_exscan: every member posts its whole
 * input of a chunk (but the last member, whose input nobody else reads); after step 3 of
 * the chunk protocol (reduce_internal.h) member m folds the inputs of members 0..m (exscan:
 * 0..m-1), in rank order, straight into its output. One exchange of stamps per chunk: the
 * small-message algorithm. Member m reads m inputs, so the traffic grows as P^2 / 2 times
 * the message (scan_chain.c is the large-message algorithm).
 *
 * A member folds its own input (the last operand of a scan) from its buffer where that is
 * safe: the output does not overlap the input, or is the input itself (in place) at member
 * 0 or 1, whose input the first kernel call reads element by element before writing the
 * same element. Otherwise (call->post_own) from its in slot.
 */
#include "reduce_internal.h"

#include <string.h>

void rd_post_scan_flat(rd_call_t *call, const rd_chunk_t *chunk)
{
    /* nobody reads the last member's slot, unless it folds its own input from there */
    if (call->me == call->nprocs - 1 && (call->exclusive || !call->post_own)) return;
    rd_post_whole(call, chunk);
}

int rd_step_scan_flat(rd_call_t *call, const rd_chunk_t *chunk)
{
    const nc_reduce_team_t *r = call->state;
    const int last = call->exclusive ? call->me - 1 : call->me; /* the last member we fold */
    if (last < 0) return NUMACOLL_OK; /* exscan's member 0: its output is not touched */
    if (chunk->first != 0) {
        /* Wait: member m alone writes its slot's stamp, with release after its input of
         * the chunk; a stamp >= chunk (acquire) makes it visible, and m rewrites the slot
         * only for chunk + slots, after our done says chunk (the first chunk's posts the
         * protocol waited for, to compare signatures) */
        for (int m = 0; m <= last; m++) {
            if (m == call->me) continue;
            int rc = rd_wait_flag(call, m, rd_stamp(r, m, chunk->slot), chunk->number);
            if (rc) return rc;
        }
    }
    const size_t es = call->esize, bytes = chunk->n * es;
    const char *own = call->post_own ? rd_in(r, call->me, chunk->slot)
                                     : call->input + chunk->first * es;
    char *out = call->output + chunk->first * es;
#define INPUT(m) ((m) == call->me ? own : rd_in(r, (m), chunk->slot))
    if (last == 0) {
        if (out != INPUT(0)) memcpy(out, INPUT(0), bytes);
        return NUMACOLL_OK;
    }
    /* ((x_0 op x_1) op x_2) ... op x_last in rank order */
    call->kernel(out, INPUT(0), INPUT(1), chunk->n);
    for (int m = 2; m <= last; m++)
        call->kernel(out, out, INPUT(m), chunk->n);
#undef INPUT
    return NUMACOLL_OK;
}
