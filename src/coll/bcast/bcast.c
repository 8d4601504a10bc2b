/*
 * The broadcast's entry (nc_bcast_run_opts; the default call nc_bcast_run is in inline.c)
 * and the choice of its path: inline (inline.c), CMA (cma.c) or the queues (queue.c), from
 * the message size; a receiver follows the path the root took (recv_first). The protocol
 * is described in bcast_internal.h.
 */
#include "inline.h"

#include <stdio.h>
#include <string.h>

/* The error of a receiver whose size @p cap differs from the root's @p sent, after it has
 * taken part in all of the root's ops (so the members' op counts stay equal and the next
 * broadcast works). */
int bc_size_error(int me, int root, size_t cap, size_t sent)
{
    return nc_error(NUMACOLL_ERR_ARG,
                    "bcast: rank %d expected %zu bytes and the root (rank %d) sent %zu: members "
                    "passed different sizes; this rank got the first %zu bytes, no more, and "
                    "took part in all of the root's broadcast (nobody waits for it)",
                    me, cap, root, sent, sent < cap ? sent : cap);
}

/* A receiver whose notification names root @p r, not the one it passed (ROOT_SHIFT): from
 * here on it is a receiver of @p r's broadcast (its children in @p r's tree; bc_run_queue
 * takes the data source from x->root). */
static void follow_root(call_t *x, int r)
{
    x->root = r;
    x->kids = x->tree->children + x->tree->child_off[r];
    x->nkids = x->tree->child_off[r + 1] - x->tree->child_off[r];
}

/* A receiver's broadcast: wait for the first notification where our own size @p cap
 * expects it (@p in_blk: the inline block, for an inline or CMA broadcast; else the first
 * control line of a queue broadcast), or where the root's path put it (see KIND_CMA), and
 * follow the root's path: forward what the root sent, keep at most @p cap bytes, ack
 * every op, and report a size or mark that differs from the root's (kept in b->mismatch). */
static int recv_first(call_t *x, void *buf, size_t cap, int in_blk)
{
    bcast_t *b = x->b;
    uint64_t op = b->hot.op;
    char *blk = inl_block(b, x->t, x->me, op % INLINE_BLOCKS);
    ctl_line_t *cl = ctl_line(b, x->t, x->me, (op % b->sets) * b->slots_per_set);
    int alt, mark = 0, told = x->root;
    /* Wait: only this op's parent in the tree writes either line, the stamp last with
     * release (wait_first); after it, the block's word and payload or the control line's
     * size, flags and msg_bytes are visible, and stay until we ack op */
    int rc = wait_first(x->t, b, in_blk ? (_Atomic uint64_t *)blk : &cl->stamp, in_blk, op, &alt);
    if (rc) return rc;
    size_t sent;
    uint64_t head = 0;
    if (!(in_blk ^ alt)) { /* the control line: a queue broadcast of the root's `msg_bytes` */
        sent = (size_t)cl->msg_bytes;
        if (NC_UNLIKELY(!names_root(cl->flags, told))) follow_root(x, root_of(cl->flags));
        /* the root's copy mode, OPF_WHOLE and OPF_NOROT included: bc_run_queue's fragment
         * geometry and offsets depend on it (the acquire load of the stamp above makes the
         * root's mode visible) */
        x->flags = (int)(cl->flags & FLAGS_MASK);
        rc = bc_run_queue(x, buf, sent, cap);
    } else {
        b->hot.op++;
        uint64_t word = ((const uint64_t *)blk)[1];
        size_t set = op % INLINE_BLOCKS;
        if (!(word & KIND_CMA)) { /* inline: forward what the root sent (subtree in step) */
            sent = (size_t)(word & INL_SIZE_MASK);
            if (NC_UNLIKELY(!names_root(word, told))) follow_root(x, root_of(word));
            size_t n = sent <= b->inline_room ? sent : b->inline_room;
            mark = (word & KIND_MARK) != 0;
            bc_inl_forward(x, set, blk + INL_HDR, n, word, op + 1);
            memcpy(&head, blk + INL_HDR, n < sizeof head ? n : sizeof head); /* before the ack */
            rc = inl_take(x->t, x->me, x->root, blk, sent, buf, cap, (char *)ack_word(b, x->me),
                          op);
        } else {
            sent = (size_t)(word & ~KIND_CMA);
            cma_desc_t d;
            memcpy(&d, blk + INL_HDR, sizeof d);
            if (NC_UNLIKELY(d.root != told)) follow_root(x, (int)d.root);
            bc_inl_forward(x, set, &d, sizeof d, word, op + 1);
            rc = bc_cma_guarded_read(x, &d, buf, sent < cap ? sent : cap, op);
            /* even on failure, so that the root is not left waiting */
            post_ack(x->t, b, x->me, op);
            if (rc == NUMACOLL_OK && sent != cap) rc = bc_size_error(x->me, x->root, cap, sent);
        }
    }
    if (NC_UNLIKELY(x->root != told || sent != cap || mark != x->mark)) {
        b->mismatch.valid = 1, b->mismatch.mark = mark, b->mismatch.sent = sent,
        b->mismatch.head = head;
        b->mismatch.root = x->root;
    }
    if (NC_UNLIKELY(x->root != told)) {
        if (rc == NUMACOLL_OK || rc == NUMACOLL_ERR_ARG) {
            char got[96] = "";
            if (sent != cap)
                snprintf(got, sizeof got, "; it expected %zu bytes and got the first %zu", cap,
                         sent < cap ? sent : cap);
            rc = nc_error(NUMACOLL_ERR_ARG,
                          "bcast: rank %d passed root %d and the root is rank %d: members passed "
                          "different roots; this rank took part in rank %d's broadcast of %zu "
                          "bytes (nobody waits for it)%s",
                          x->me, told, x->root, x->root, sent, got);
        }
    } else if (NC_UNLIKELY(mark != x->mark)) {
        if (rc == NUMACOLL_OK)
            rc = nc_error(NUMACOLL_ERR_ARG,
                          "bcast: rank %d expected %s message and the root (rank %d) sent %s one "
                          "of the same size (%zu bytes): members passed different sizes (a mark "
                          "heads the MPI layer's broadcasts over 2 GiB)",
                          x->me, x->mark ? "a marked" : "an unmarked", x->root,
                          mark ? "a marked" : "an unmarked", sent);
    }
    return rc;
}

int nc_bcast_last_mismatch(numacoll_team_t *t, size_t *sent, int *mark, uint64_t *head, int *root)
{
    bcast_t *b = t->bcast;
    if (!b || !b->mismatch.valid) return 0;
    b->mismatch.valid = 0;
    *sent = b->mismatch.sent, *mark = b->mismatch.mark, *head = b->mismatch.head;
    if (root) *root = b->mismatch.root;
    return 1;
}

static int run_general(numacoll_team_t *t, void *buf, size_t bytes, int root,
                       const nc_bcast_opts_t *o);

int nc_bcast_run_opts(numacoll_team_t *t, void *buf, size_t bytes, int root,
                      const nc_bcast_opts_t *o)
{
    int rc = run_general(t, buf, bytes, root, o);
    if (t->bcast) give_back_check(t, t->bcast); /* after every call (give_back.c) */
    return rc;
}

/* nc_bcast_run_opts without the look at the queue's pages after it */
static int run_general(numacoll_team_t *t, void *buf, size_t bytes, int root,
                       const nc_bcast_opts_t *o)
{
    /* 0 bytes is an op like any other (an inline one without payload), so that a member
     * passing 0 against a root's n, or n against a root's 0, gets the size error instead
     * of leaving the root waiting or taking the next message for this one */
    if (o && (o->copy_mode < -1 || o->copy_mode >= NC_BCAST_SEL_MODES))
        return nc_error(
            NUMACOLL_ERR_ARG,
            "bcast: copy mode (option copy_mode) %d; allowed: -1 (the team's choice) or "
            "0..%d (bit 0 streamed root stores, bit 1 streamed receiver stores, "
            "bit 2 a message of %d..%d bytes in one fragment, not two, bit 3 no "
            "rotating offset)",
            o->copy_mode, NC_BCAST_SEL_MODES - 1, SPLIT_MIN + 1, SPLIT_MAX);
    if (t->size == 1) return NUMACOLL_OK;
    if (!t->bcast) {
        int rc = bc_state_create(t);
        if (rc) return rc;
    }
    bcast_t *b = t->bcast;
    if (NC_UNLIKELY(b->check)) {
        int rc = bc_check_call(t, b, bytes, root, o);
        if (rc) return rc;
    }
    int kind = o && o->tree >= 0 && o->tree < NC_BTREE_COUNT ? o->tree : b->tree_kind;
    int k = o && o->k > 0 ? o->k : b->fanout;
    int rc = tree_ready(t, b, kind, k);
    if (rc) return rc;
    call_t x = {.t = t, .b = b, .tree = &b->trees[kind], .root = root, .me = t->rank, .P = t->size};
    x.relay = o && o->relay >= 0 ? o->relay : b->relay;
    x.rotate = o && o->rotate >= 0 ? o->rotate : b->rotate;
    x.hints = hints_of(o && o->demote >= 0 ? o->demote : b->demote,
                       o && o->prefetch >= 0 ? o->prefetch : b->prefetch);
    /* the two sides separately: the root's streamed stores keep the fragments out of its
     * cache, so the receivers read them from L3/memory instead of snooping dirty lines out
     * of another core (slow on some VMs); the receivers' streamed stores only pay when their
     * destination does not fit the cache anyway */
    x.flags = o && o->copy_mode >= 0
                  ? flags_of_mode(o->copy_mode)
                  : nc_bcast_msg_nt(b->stream_root_min, b->stream_recv_min, bytes);
    x.kids = x.tree->children + x.tree->child_off[root];
    x.nkids = x.tree->child_off[root + 1] - x.tree->child_off[root];
    size_t inl = b->inline_max;
    if (o && o->inline_max >= 0) inl = (size_t)o->inline_max;
    if (inl > b->inline_room) inl = b->inline_room;
    size_t cma_min = o && o->cma_min >= 0 ? (size_t)o->cma_min : b->cma_min;
    x.mark = o && o->mark > 0;
    if (x.mark) { /* always inline */
        if (bytes > b->inline_room)
            return nc_error(NUMACOLL_ERR_ARG,
                            "bcast: a marked message carries at most %zu bytes (the inline "
                            "room), not %zu",
                            b->inline_room, bytes);
        inl = b->inline_room;
    }
    if (NC_UNLIKELY(b->trace))
        nc_log(3, t->rank, t->size,
               "bcast #%llu: %zu bytes from %d, tree %s, parent %d, %d "
               "children",
               (unsigned long long)b->hot.op, bytes, root, nc_bcast_tree_names[kind],
               x.tree->parent[root], x.nkids);
    /* the path from our own size; a receiver follows the root's if that differs (recv_first) */
    int is_root = x.me == root;
    int path = nc_bcast_msg_path(bytes, inl, b->cma_permitted, cma_min); /* plan.h */
    if (path != NC_BPATH_QUEUE) {
        if (!is_root) return recv_first(&x, buf, bytes, 1);
        return path == NC_BPATH_INLINE ? root_inline(&x, buf, bytes) : bc_root_cma(&x, buf, bytes);
    }
    int measure = 0;
    if (b->adapt && !(o && o->copy_mode >= 0) && bc_sel_cands(b, bytes, (int[4]){0}) > 0) {
        if (b->pending_run.valid) bc_sel_harvest(t, b);
        /* the clock only where a time is used (a read may cost tens of ns on a VM): the
         * root's measured calls; a receiver's calls from the root's
         * OPF_RUN_ARM to the run's last (bc_run_queue keeps `armed`), every call from
         * SEL_EVERY_MIN on (the best's every-call runs come unannounced) */
        if (x.me == root) {
            x.flags = flags_of_mode(bc_sel_choose(b, bytes, mode_of_flags(x.flags), &measure));
            if (measure & OPF_REPORT) x.t_enter = nc_now_ns();
        } else if (b->recv_runs[root].armed || bytes >= SEL_EVERY_MIN) {
            x.t_enter = nc_now_ns();
        }
    }
    int mode = mode_of_flags(x.flags);
    x.flags |= measure; /* the root's measurement bits (receivers: 0) */
    if (!(measure & OPF_REPORT))
        return is_root ? bc_run_queue(&x, buf, bytes, bytes) : recv_first(&x, buf, bytes, 0);
    rc = bc_run_queue(&x, buf, bytes, bytes);
    bc_sel_root_done(b, bytes, mode, measure, rc, nc_now_ns() - x.t_enter);
    return rc;
}
