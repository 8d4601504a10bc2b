/*
 * Giving a member's queue pages back (NUMACOLL_BCAST_GIVE_BACK): after that many calls in
 * a row that did not write into its queue, a member punches the queue's pages out of the
 * shared file once every other member has acked the last op that wrote into it; its next
 * queue broadcast gets them again (populate_set, queue.c). Why this is safe: the protocol
 * comment in bcast_internal.h.
 */
#include "bcast_internal.h"

#include <stdint.h>
#include <sys/mman.h>

void bc_give_back(numacoll_team_t *t, bcast_t *b)
{
    /* the hot path compares 32 bits: look at the whole count */
    if (b->hot.op < b->give_due) return;
    uint64_t need = b->queue_last_op + 1;
    for (int r = 0; r < t->size; r++) {
        if (r == t->rank || b->acks_seen[r] >= need) continue;
        /* no wait, a look: only member r writes its ack, with release after its last read
         * of an op (ops in order: ack >= need means it is done with every op up to the
         * last that wrote into our queue); acquire, so those reads of our queue happened
         * before the punch below */
        uint64_t v = atomic_load_explicit(ack_word(b, r), memory_order_acquire);
        if (v > b->acks_seen[r]) b->acks_seen[r] = v;
        if (v < need) { /* r is behind: look again after our next call */
            b->give_due = b->hot.op + 1;
            b->hot.give_due32 = (uint32_t)b->give_due;
            return;
        }
    }
    size_t ps = nc_page_size();
    char *q = slot_buf(b, t->rank, 0); /* page-aligned: the control area is whole pages */
    size_t n = b->queue_bytes / ps * ps;
    /* the pages of the queue, whatever populated[] says (a failed populate may have left
     * some); EINVAL (a kernel without MADV_REMOVE on this file) keeps them, harmless */
    if (n) (void)madvise(q, n, MADV_REMOVE);
    for (size_t i = 0; i < b->sets; i++)
        b->populated[i] = 0;
    b->gave_back = 1;
    b->give_due = UINT64_MAX;
    b->hot.give_due32 = (uint32_t)UINT64_MAX;
    if (nc_verbose() >= 2)
        nc_log(2, t->rank, t->size,
               "bcast: %llu broadcasts without my queue since op %llu: gave its %zu bytes back",
               (unsigned long long)b->give_back, (unsigned long long)b->queue_last_op, n);
}
