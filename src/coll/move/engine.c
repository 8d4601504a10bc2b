/*
 * The paths' table and one call's progress loop: the member writes its stream (if it owns
 * blocks others read) and reads the owners' streams or buffers (if it reads blocks), in
 * one loop that moves on whatever can move, so that a member that is owner and reader at
 * once never waits for a reader while that reader waits for it.
 */
#include "move_internal.h"

#include <string.h>

const mv_path_t mv_paths[] = {
    {"copy", "the owner copies its block into its NUMA-local slots in chunks, the readers "
             "copy them out (two copies, pipelined)",
     mv_copy_read_begin},
    {"cma", "the readers copy straight from the owner's buffer with process_vm_readv "
            "(single copy); the owner returns once every reader is done",
     mv_cma_read_begin},
};
const int mv_path_count = (int)(sizeof mv_paths / sizeof mv_paths[0]);

int mv_wait_flag(mv_call_t *c, int member, _Atomic uint64_t *flag, uint64_t target)
{
    if (atomic_load_explicit(flag, memory_order_acquire) >= target) return NUMACOLL_OK;
    nc_wait_t w;
    nc_wait_init(&w, c->team, c->who);
    w.waiting_for = member;
    /* @p member wakes us (nc_flag_post) if we sleep on the flag in the kernel */
    uint64_t v;
    while ((v = atomic_load_explicit(flag, memory_order_acquire)) < target) {
        int rc = nc_wait_step_on(&w, flag, v);
        if (rc) return rc;
    }
    return NUMACOLL_OK;
}

/* keep the call's first error (its message stays the thread's last error) */
static void call_error(mv_call_t *c, int rc)
{
    if (c->rc == NUMACOLL_OK) c->rc = rc;
}

/* The head of @p rd's owner, as read: check it against ours. */
static int check_head(mv_call_t *c, mv_read_t *rd, const mv_head_t *h)
{
    if (h->sig != c->sig) {
        if (h->sig == MV_SIG_BAD)
            return nc_error(NUMACOLL_ERR_ARG,
                            "%s: rank %d passed invalid arguments (its own error says which); "
                            "its blocks did not move",
                            c->who, rd->owner);
        return nc_error(NUMACOLL_ERR_ARG,
                        "%s: rank %d passed other arguments than rank %d (block sizes, root or "
                        "collective differ); every member must pass the same",
                        c->who, rd->owner, c->me);
    }
    if (h->entries != rd->nent)
        return nc_error(NUMACOLL_ERR_ARG,
                        "%s: rank %d posted %u blocks, rank %d expects %u: the members disagree "
                        "about the collective; every member must call the same",
                        c->who, rd->owner, h->entries, c->me, rd->nent);
    return NUMACOLL_OK;
}

/* Our entry in @p rd's owner's list, as read: the size we expect */
static int check_entry(mv_call_t *c, mv_read_t *rd, const mv_entry_t *e)
{
    if (e->size != rd->expect)
        return nc_error(NUMACOLL_ERR_ARG,
                        "%s: rank %d sends %llu bytes to rank %d, which expects %zu from it; the "
                        "sizes must match",
                        c->who, rd->owner, (unsigned long long)e->size, c->me, rd->expect);
    return NUMACOLL_OK;
}

/* Advance the reading of one owner: 1 done with it, 0 blocked, < 0 a failed wait. Errors
 * of the call (mismatches) are kept in c->rc, and the owner is left as done. The head, then
 * our entry (with the head when it is the first), then the block. */
static int read_step(mv_call_t *c, mv_read_t *rd)
{
    char *hbuf = c->state->heads + (size_t)rd->owner * (MV_HEAD_BYTES + MV_ENTRY_BYTES);
    const mv_head_t *h = (const mv_head_t *)hbuf;
    const mv_entry_t *e = (const mv_entry_t *)(hbuf + MV_HEAD_BYTES);
    int rc;
    if (rd->phase == MV_READ_HEAD) {
        if (rd->len == 0) {
            rd->off = 0, rd->got = 0, rd->into = hbuf, rd->last_chunk = UINT64_MAX;
            rd->len = MV_HEAD_BYTES + (rd->entry == 0 ? MV_ENTRY_BYTES : 0);
        }
        rc = mv_copy_pull(c, rd);
        if (rc == 0) return 0;
        if (rc == 1) rc = c->rc == NUMACOLL_OK ? check_head(c, rd, h) : c->rc;
        if (rc != NUMACOLL_OK) { /* a mismatch, or our own arguments failed: no blocks */
            call_error(c, rc);
            mv_copy_leave(c, rd);
            return 1;
        }
        rd->phase = MV_READ_ENTRY;
        if (rd->entry != 0) {
            rd->off = MV_HEAD_BYTES + (size_t)rd->entry * MV_ENTRY_BYTES;
            rd->len = MV_ENTRY_BYTES, rd->got = 0, rd->into = hbuf + MV_HEAD_BYTES;
        }
    }
    if (rd->phase == MV_READ_ENTRY) {
        rc = rd->got < rd->len ? mv_copy_pull(c, rd) : 1;
        if (rc == 0) return 0;
        if (rc == 1) rc = check_entry(c, rd, e);
        if (rc != NUMACOLL_OK || e->size == 0) {
            call_error(c, rc);
            mv_copy_leave(c, rd);
            return 1;
        }
        /* the block's path, as its owner chose it (the entry), from the table */
        rd->path = mv_in_stream(e) ? MV_PATH_COPY : MV_PATH_CMA;
        rc = mv_paths[rd->path].read_begin(c, rd, h, e);
        if (rc == NUMACOLL_ERR_PEER_DEAD || rc == NUMACOLL_ERR_TIMEOUT) {
            mv_copy_leave(c, rd);
            return rc;
        }
        if (rc != NUMACOLL_OK || rd->phase != MV_READ_DATA) { /* an error, or done */
            call_error(c, rc);
            mv_copy_leave(c, rd);
            return 1;
        }
    }
    rc = mv_copy_pull(c, rd);
    if (rc == 0) return 0;
    if (rc < 0) call_error(c, rc);
    mv_copy_leave(c, rd);
    return 1;
}

void mv_own_copy(mv_call_t *c)
{
    if (c->own_bytes) memmove(c->own_dst, c->own_src, c->own_bytes);
    c->own_bytes = 0;
}

int mv_run(mv_call_t *c)
{
    nc_wait_t w;
    int waiting = 0; /* w is set up: a wait began since the last progress */
    for (;;) {
        c->blk_flag = NULL;
        c->blk_member = -1;
        c->nblocked = 0;
        int progress = 0;
        if (c->next_chunk < c->nchunks) progress |= mv_copy_write(c);
        /* every owner not done yet, in our order: reading only the first until it is done
         * could wait for an owner whose slots are full of chunks that a member we block
         * has yet to read (a cycle of finite buffers) */
        for (int j = c->cur_read; j < c->nreads; j++) {
            mv_read_t *rd = &c->reads[j];
            if (rd->phase == MV_READ_DONE) continue;
            int phase = rd->phase;
            size_t got = rd->got;
            int rc = read_step(c, rd);
            if (rc < 0) return rc; /* a dead member or a timeout: the team is broken */
            if (rd->phase != phase || rd->got != got) progress = 1;
        }
        while (c->cur_read < c->nreads && c->reads[c->cur_read].phase == MV_READ_DONE)
            c->cur_read++;
        if (c->next_chunk >= c->nchunks && c->cur_read >= c->nreads) break;
        if (progress) {
            waiting = 0; /* a later wait starts anew (its spin phase, its timeout) */
            continue;
        }
        if (!waiting) {
            nc_wait_init(&w, c->team, c->who);
            waiting = 1;
        }
        /* Wait: for any of the flags the loop found short (stamps: their owners write them
         * with release after a chunk; consumed: readers, after their reads); the loop
         * reloads each with acquire. A kernel sleep waits on the first of them: the
         * writer's (our readers wait for us), else an owner we must read before the call
         * ends anyway; a change of another wakes us only when this one changes or the
         * sleep's bound (NC_FUTEX_SLEEP_MAX_NS) ends it, which costs time, never a result. */
        w.waiting_for = c->blk_member;
        int rc = c->nblocked ? nc_wait_step_on(&w, c->blk_flag, c->blk_seen) : nc_wait_step(&w);
        if (rc) return rc;
    }
    /* release: our reads of the call (single copies from owners' buffers included) before
     * the flag owners wait for */
    nc_flag_post(c->team, mv_flag(c->state, c->me, MV_LINE_READ_DONE), c->k);
    if (c->cma_blocks) return mv_cma_wait_readers(c);
    return NUMACOLL_OK;
}
