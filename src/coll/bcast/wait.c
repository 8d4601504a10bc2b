/*
 * The broadcast's waits that run out of line: the yielding phase of a stamp wait, a
 * receiver's wait on both lines of its first notification, and a root's wait for a
 * member's ack. The spin phases and the per-call checks are in bcast_internal.h.
 */
#include "bcast_internal.h"

/* until @p p or @p alt shows @p want, see bcast_internal.h */
int bc_wait_yield(numacoll_team_t *t, _Atomic uint64_t *p, _Atomic uint64_t *alt, uint64_t want)
{
    nc_wait_t w;
    nc_wait_init(&w, t, "bcast");
    w.iter = w.spin_limit; /* spun already: on to yielding */
    /* Wait loop: p and alt are lines of ours that only this op's parent in the tree writes,
     * with a release store of the stamp after what it publishes (wait_stamp and wait_first
     * say what); once an acquire load shows `want`, that is visible to us. The parent wakes
     * us (nc_flag_post) if we sleep in the kernel on p; a store to alt (an erroneous
     * program's: members passed different sizes) wakes nobody, and ends the sleep only
     * with its time limit (NC_FUTEX_SLEEP_MAX_NS) */
    for (;;) {
        uint64_t v = atomic_load_explicit(p, memory_order_acquire);
        if (v >= want) return NUMACOLL_OK;
        if (alt && atomic_load_explicit(alt, memory_order_acquire) >= want) return WAIT_ALT;
        int rc = nc_wait_step_on(&w, p, v);
        if (rc) return rc;
    }
}

/* wait_first's yielding phase on both lines of op @p op: WAIT_ALT if the line other than
 * the one @p p_is_blk names came (the loop is bc_wait_yield's) */
__attribute__((noinline)) int bc_wait_both(numacoll_team_t *t, bcast_t *b, int p_is_blk,
                                           uint64_t op)
{
    _Atomic uint64_t *blk = (_Atomic uint64_t *)inl_block(b, t, t->rank, op % INLINE_BLOCKS);
    _Atomic uint64_t *ctl = &ctl_line(b, t, t->rank, (op % b->sets) * b->slots_per_set)->stamp;
    return bc_wait_yield(t, p_is_blk ? blk : ctl, p_is_blk ? ctl : blk, op + 1);
}

/* Wait until member @p r has finished the ops before @p need (ack >= need). */
int bc_wait_ack_of(numacoll_team_t *t, bcast_t *b, int r, uint64_t need)
{
    if (b->acks_seen[r] >= need) return NUMACOLL_OK;
    _Atomic uint64_t *p = ack_word(b, r);
    uint64_t v = atomic_load_explicit(p, memory_order_acquire);
    if (v < need) {
        /* Wait loop: the only writer of r's ack line is r, which stores op + 1 with
         * release after its last read of op's slots and blocks. Once the acquire load
         * shows >= need, r has finished every op before `need` and we may overwrite
         * what those ops read. r wakes us (post_ack) if we sleep on it in the kernel. */
        nc_wait_t w;
        nc_wait_init(&w, t, "bcast");
        while ((v = atomic_load_explicit(p, memory_order_acquire)) < need) {
            int rc = nc_wait_step_on(&w, p, v);
            if (rc) return rc;
        }
    }
    b->acks_seen[r] = v;
    return NUMACOLL_OK;
}
