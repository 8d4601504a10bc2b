/*
 * Algorithm "rscatter" of numacoll_reduce_scatter(_block): member m folds its own slice of
 * the vector (recvcounts[m] elements from slice_off[m]) from every member's input, in rank
 * order, straight into its recvbuf; nobody else reads its result. rsag's first phase with
 * the call's slices instead of rsag's equal ones, and no second phase.
 *
 * Chunks cut every slice at once: chunk k carries the k-th piece of each member's slice,
 * elements slice_off[m] + [k q, min((k + 1) q, recvcounts[m])) with q = call->chunk_elems,
 * at element m q of the in slot (P q elements fit a fragment). The call's count is the
 * longest slice, in columns of q. So every member folds a piece of every chunk (unless its
 * slice is shorter), and all of them share the reads and the arithmetic as in rsag.
 *
 * A member posts the pieces the others fold, not its own, which it folds from its input
 * buffer; unless its input and output overlap (in place: the input is recvbuf, the result
 * goes to the start of recvbuf), when it posts its own piece too and folds from its slot:
 * the fold's first step writes the output before reading the last operand. In place the
 * output of chunk k is recvbuf's elements [k q, k q + n): input elements of member 0's
 * piece of chunk k or of earlier pieces (slice_off[m] >= 0), all posted before the fold
 * writes them, and later chunks read only elements from (k + 1) q on.
 */
#include "reduce_internal.h"

#include <string.h>

/* elements of member m's piece of @p chunk */
static size_t piece(const rd_call_t *call, int m, const rd_chunk_t *chunk)
{
    size_t len = call->slice_off[m + 1] - call->slice_off[m];
    if (chunk->first >= len) return 0;
    return len - chunk->first < chunk->n ? len - chunk->first : chunk->n;
}

void rd_post_rscatter(rd_call_t *call, const rd_chunk_t *chunk)
{
    const size_t es = call->esize, q = call->chunk_elems;
    char *slot = rd_in(call->state, call->me, chunk->slot);
    for (int m = 0; m < call->nprocs; m++) {
        if (m == call->me && !call->post_own) continue; /* we fold it from our buffer */
        size_t n = piece(call, m, chunk);
        if (n)
            rd_copy_shared(call, slot + (size_t)m * q * es,
                           call->input + (call->slice_off[m] + chunk->first) * es, n * es);
    }
}

int rd_step_rscatter(rd_call_t *call, const rd_chunk_t *chunk)
{
    const nc_reduce_team_t *r = call->state;
    const size_t es = call->esize, n = piece(call, call->me, chunk);
    if (!n) return NUMACOLL_OK; /* our slice ended in an earlier chunk */
    if (chunk->first != 0) {
        /* the protocol waited for the first chunk's posts (to compare signatures) */
        int rc = rd_wait_posted(call, chunk);
        if (rc) return rc;
    }
    const size_t off = (size_t)call->me * call->chunk_elems * es;
    const char *own = call->post_own
                          ? rd_in(r, call->me, chunk->slot) + off
                          : call->input + (call->slice_off[call->me] + chunk->first) * es;
    char *out = call->output + chunk->first * es;
#define INPUT(m) ((m) == call->me ? own : rd_in(r, (m), chunk->slot) + off)
    if (call->nprocs == 1) {
        if (out != own) memmove(out, own, n * es);
        return NUMACOLL_OK;
    }
    /* ((x_0 op x_1) op x_2) ... in rank order, as every reduction; out overlaps no input */
    call->kernel(out, INPUT(0), INPUT(1), n);
    for (int m = 2; m < call->nprocs; m++)
        call->kernel(out, out, INPUT(m), n);
#undef INPUT
    return NUMACOLL_OK;
}
