/*
 * The queue path: the paper's pipeline. The root copies the message fragment by fragment
 * into its queue, a set per op, and notifies its children; every receiver forwards each
 * fragment's notification (a relay first copies it into its own queue) and copies it out.
 * Copy modes (NT_STREAM_*), the model's one fragment (OPF_WHOLE), rotating offsets
 * (OPF_NOROT) and the selector's measurement flags (OPF_REPORT, OPF_RUN_*) travel in the
 * control lines' flags.
 */
#include "bcast_internal.h"

#include <stdio.h>
#include <string.h>

/* Tell each child that fragment @p slot of op stamp - 1 (@p n bytes) is in the source's
 * queue: its control line's size, flags and msg_bytes, then the stamp with release. */
static void notify(call_t *x, size_t slot, size_t n, uint64_t stamp)
{
    for (int i = 0; i < x->nkids; i++) {
        ctl_line_t *cl = ctl_line(x->b, x->t, x->kids[i], slot);
        cl->size = n;
        cl->flags = (uint64_t)x->flags | root_bits(x->root);
        cl->msg_bytes = x->msg_bytes;
        /* release: the fragment (in the source's slot), size, flags and msg_bytes before
         * the stamp the child waits for (woken if it sleeps on the stamp) */
        nc_flag_post(x->t, &cl->stamp, stamp);
    }
}

/* Tell the children that op fails for want of the root's queue (forwarded down the
 * tree), ack op so that nobody waits for us, and fail. Every member of the call reaches
 * this through the first fragment of op, so all return the same error. */
static int queue_failed(call_t *x, size_t slot, uint64_t op, const char *why)
{
    x->flags = OPF_NOSPACE;
    notify(x, slot, 0, op + 1);
    post_ack(x->t, x->b, x->me, op);
    if (why)
        return nc_error(NUMACOLL_ERR_UNSUPPORTED,
                        "bcast: rank %d (%s) could not get the memory of its queue: %s; this "
                        "broadcast did not happen on any member",
                        x->me, x->me == x->root ? "the root" : "a NUMA relay", why);
    return nc_error(NUMACOLL_ERR_UNSUPPORTED,
                    "bcast: the root (rank %d) or a NUMA relay could not get the memory of its "
                    "queue; this broadcast did not happen on any member",
                    x->root);
}

/* NUMACOLL_BCAST_POPULATE first-use: before op @p op writes into @p set of my queue, give
 * the set memory up to @p end bytes from its start (where the op's data end), at least
 * POPULATE_STEP more at a time: a message populates what it needs, not the whole set (a
 * new communicator's first broadcast pays for the pages it uses, not for the set), and the
 * rotation of later ops grows the mark step by step. NUMACOLL_OK, or the error (its
 * message the thread's last error) for the caller to handle: the root sends the op in an
 * inline piece (root_short), a relay fails its subtree (queue_failed). */
#define POPULATE_STEP (256u << 10)
static int populate_set(call_t *x, size_t set, size_t end)
{
    bcast_t *b = x->b;
    size_t set_bytes = b->slots_per_set * b->fragment_bytes, hw = b->populated[set];
    end = end > set_bytes ? set_bytes : end;
    size_t to = hw + POPULATE_STEP > end ? hw + POPULATE_STEP : end;
    to = to > set_bytes ? set_bytes : nc_round_up(to, nc_page_size());
    char *p = slot_buf(b, x->me, set * b->slots_per_set) + hw;
    int rc = nc_seg_populate(p, to - hw, "a broadcast queue set");
    if (rc != NUMACOLL_OK) return rc;
    b->populated[set] = to;
    if (nc_verbose() >= 2) {
        size_t on = 0, off = 0;
        int node = nc_seg_check_placement(p, to - hw, x->t->numa_node, &on, &off);
        nc_log(2, x->me, x->P,
               "bcast: set %zu of my queue got memory for bytes %zu..%zu of %zu on NUMA "
               "node %d (expected %d: %zu pages there, %zu elsewhere)",
               set, hw, to, set_bytes, node, x->t->numa_node, on, off);
    }
    return NUMACOLL_OK;
}

/* Tell each child that op stamp - 1 carries @p n bytes in its inline block (OPF_SHORT),
 * through the control line of the op's first slot @p slot: size and flags, then the stamp
 * with release (the payload, written into the child's block before, is visible with it). */
static void notify_short(call_t *x, size_t slot, size_t n, uint64_t stamp)
{
    x->flags &= ~OPF_SHORT;
    uint64_t flags = (uint64_t)x->flags | OPF_SHORT | root_bits(x->root);
    for (int i = 0; i < x->nkids; i++) {
        ctl_line_t *cl = ctl_line(x->b, x->t, x->kids[i], slot);
        cl->size = n;
        cl->flags = flags;
        cl->msg_bytes = x->msg_bytes;
        /* release: the payload in the child's inline block, size and flags before the stamp */
        nc_flag_post(x->t, &cl->stamp, stamp);
    }
}

/* The root's op @p op without its queue: the next @p n bytes of the message (@p n <=
 * inline_room) go into the children's inline blocks of the op and are announced in the
 * control line of the op's first slot @p slot. A block's previous op is op -
 * INLINE_BLOCKS: wait for every member's ack of it (as root_inline), then nobody reads
 * the blocks we write (inner tree nodes write their children's only after our notice). */
static int root_short(call_t *x, const char *src, size_t n, size_t slot, uint64_t op)
{
    bcast_t *b = x->b;
    /* Wait: only member r writes its ack, with release after its last read of an op */
    int rc = wait_reuse(x->t, b, op, INLINE_BLOCKS);
    if (rc) return rc;
    for (int i = 0; i < x->nkids; i++)
        memcpy(inl_block(b, x->t, x->kids[i], op % INLINE_BLOCKS) + INL_HDR, src, n);
    notify_short(x, slot, n, op + 1);
    return NUMACOLL_OK;
}

/* A receiver's op @p op announced as OPF_SHORT in @p cl: @p n bytes in our inline block
 * of the op (visible: the caller's acquire load of the stamp), forwarded to our children
 * in theirs, of which we keep @p take at @p dst. */
static void recv_short(call_t *x, const ctl_line_t *cl, size_t n, size_t slot, uint64_t op,
                       char *dst, size_t take)
{
    const char *blk = inl_block(x->b, x->t, x->me, op % INLINE_BLOCKS) + INL_HDR;
    x->flags = (int)(cl->flags & FLAGS_MASK);
    for (int i = 0; i < x->nkids; i++)
        memcpy(inl_block(x->b, x->t, x->kids[i], op % INLINE_BLOCKS) + INL_HDR, blk, n);
    notify_short(x, slot, n, op + 1);
    if (take) memcpy(dst, blk, take);
}

/* The root could not get its queue's pages for an op: say so once (NUMACOLL_VERBOSE) */
static void log_short(call_t *x)
{
    bcast_t *b = x->b;
    if (b->short_logged) return;
    b->short_logged = 1;
    nc_log(1, x->me, x->P,
           "bcast: rank %d could not get the memory of its broadcast queue (%s); its queue "
           "broadcasts go in inline pieces of %zu bytes until it can",
           x->me, numacoll_last_error(), b->inline_room);
}

/* A queue broadcast of the root's @p bytes (its geometry), of which a receiver keeps the
 * first @p cap (its own size: cap == bytes unless the program passed different sizes). */
int bc_run_queue(call_t *x, char *buf, size_t bytes, size_t cap)
{
    bcast_t *b = x->b;
    /* the fragment for this message (plan.h: the paper's rule for a known m, halves) */
    size_t fe = nc_bcast_msg_fragment(b->fragment_bytes, b->fragment_fixed, &b->model, bytes,
                                      x->flags & OPF_WHOLE);
    x->msg_bytes = bytes;
    size_t per_op = b->slots_per_set * fe;
    int is_root = x->me == x->root;
    int rot = x->rotate && !(x->flags & OPF_NOROT); /* the root's choice (receivers: recv_first) */
    int src = x->relay ? x->tree->source[x->root] : x->root;
    int hold = x->relay && x->tree->holds_copy[x->root];
    size_t off = 0;
    int rc = NUMACOLL_OK, no_pages = 0;
    const uint64_t op0 = b->hot.op;
    while (off < bytes) {
        uint64_t op = b->hot.op++;
        size_t set = op % b->sets;
        size_t n_op = bytes - off < per_op ? bytes - off : per_op;
        size_t nfrag = (n_op + fe - 1) / fe;
        size_t span = nfrag * fe;
        /* where this op's data end in its set (the same on every member) */
        size_t use_end = (size_t)(frag_buf(b, rot, 0, set, op, span, fe, 0) -
                                  slot_buf(b, 0, set * b->slots_per_set)) +
                         span;
        int piece = 0; /* this op goes in an inline piece (OPF_SHORT) */
        if (is_root) {
            /* Wait: every member's ack of op - q, the set's previous use (only member r
             * writes its ack, with release after its last read of that op); after it, no
             * one reads the set or its control lines any more, and we may rewrite them */
            rc = wait_reuse(x->t, b, op, b->sets);
            if (rc) return rc;
            if (NC_UNLIKELY(b->populated[set] < use_end)) {
                /* one failure a call: the rest of the call goes in pieces too */
                piece = no_pages || populate_set(x, set, use_end) != NUMACOLL_OK;
                if (piece && !b->gave_back) { /* the queue's first pages: the call fails */
                    char why[256];
                    snprintf(why, sizeof why, "%s", numacoll_last_error());
                    return queue_failed(x, set * b->slots_per_set, op, why);
                }
                if (piece && !no_pages) log_short(x);
                no_pages |= piece;
            }
            if (NC_UNLIKELY(piece)) {
                size_t n = bytes - off < b->inline_room ? bytes - off : b->inline_room;
                rc = root_short(x, buf + off, n, set * b->slots_per_set, op);
                if (rc) return rc;
                off += n;
                post_ack(x->t, b, x->me, op);
                continue;
            }
            queue_written(b, op); /* give_back.c: the count starts again */
            /* diagnostic only (nobody waits on it): last op started on this set */
            atomic_store_explicit(set_op_word(b, set), op + 1, memory_order_relaxed);
        }
        for (size_t i = 0; i < nfrag && !piece; i++) {
            size_t slot = set * b->slots_per_set + i;
            size_t n = i + 1 < nfrag ? fe : n_op - i * fe;
            if (is_root) {
                if (x->flags & NT_STREAM_ROOT)
                    nc_copy_stream(frag_buf(b, rot, x->me, set, op, span, fe, i), buf + off, n);
                else
                    memcpy(frag_buf(b, rot, x->me, set, op, span, fe, i), buf + off, n);
                notify(x, slot, n, op + 1);
            } else {
                ctl_line_t *cl = ctl_line(b, x->t, x->me, slot);
                /* Wait: only our parent in this op's tree writes this control line, the
                 * stamp last with release; after the acquire load shows op + 1, the size,
                 * flags, msg_bytes and the fragment in the source's queue (or, OPF_SHORT,
                 * the piece in our inline block) are visible */
                rc = wait_stamp(x->t, &cl->stamp, op + 1);
                if (rc) return rc;
                if (NC_UNLIKELY(cl->flags & OPF_NOSPACE)) return queue_failed(x, slot, op, NULL);
                if (NC_UNLIKELY(cl->flags & OPF_SHORT)) {
                    /* the root's piece: as many bytes as the inline room and what is left
                     * allow (the same on every member that passed the root's size) */
                    size_t left = bytes - off, want = left < b->inline_room ? left : b->inline_room;
                    if (i != 0 || cl->size != want || !names_root(cl->flags, x->root))
                        return nc_error(NUMACOLL_ERR_ARG,
                                        "bcast: rank %d expected a piece of %zu bytes and got "
                                        "%llu: members passed different roots or options",
                                        x->me, want, (unsigned long long)cl->size);
                    size_t take = off >= cap ? 0 : cap - off < want ? cap - off : want;
                    recv_short(x, cl, want, slot, op, take ? buf + off : NULL, take);
                    off += want;
                    piece = 1;
                    break;
                }
                if (cl->size != n || !names_root(cl->flags, x->root))
                    return nc_error(NUMACOLL_ERR_ARG,
                                    "bcast: rank %d expected a fragment of %zu bytes and got "
                                    "%llu: members passed different roots or options",
                                    x->me, n, (unsigned long long)cl->size);
                /* what of this fragment we keep (cap: our own size; nothing, and no
                 * address formed in buf, past it: buf may be NULL for 0 bytes) */
                size_t take = off >= cap ? 0 : cap - off < n ? cap - off : n;
                x->flags = (int)(cl->flags & FLAGS_MASK); /* the root's choice, forwarded as is */
                if (hold) {
                    /* lazy queues with the relay forced per call (nc_bcast_opts_t; auto
                     * relay makes the queues eager): a failure here fails only this
                     * relay's subtree, which the internal callers report */
                    if (NC_UNLIKELY(b->populated[set] < use_end) &&
                        populate_set(x, set, use_end) != NUMACOLL_OK) {
                        char why[256];
                        snprintf(why, sizeof why, "%s", numacoll_last_error());
                        return queue_failed(x, slot, op, why);
                    }
                    queue_written(b, op);
                    memcpy(frag_buf(b, rot, x->me, set, op, span, fe, i),
                           frag_buf(b, rot, src, set, op, span, fe, i), n);
                    notify(x, slot, n, op + 1);
                    if (take)
                        memcpy(buf + off, frag_buf(b, rot, x->me, set, op, span, fe, i), take);
                } else {
                    notify(x, slot, n, op + 1);
                    const char *from = frag_buf(b, rot, src, set, op, span, fe, i);
                    if (take && (x->flags & NT_STREAM_RECV))
                        nc_copy_stream(buf + off, from, take);
                    else if (take)
                        memcpy(buf + off, from, take);
                }
            }
            off += n;
        }
        post_ack(x->t, b, x->me, op);
    }
    /* a queue broadcast of another root counts as one call, whatever its ops (give_back.c) */
    if (b->give_due != UINT64_MAX && b->queue_last_op < op0 && b->hot.op - op0 > 1) {
        b->give_due += b->hot.op - op0 - 1;
        b->hot.give_due32 = (uint32_t)b->give_due;
    }
    if (!is_root && (x->flags & OPF_REPORT) && x->t_enter) {
        /* the root asked for our time in this call (copy-mode selection): we add it to
         * our sum for this root's run and publish the sum after the run's last call; the
         * root reads that word later, without waiting, and uses it only if tag and count
         * are its run's (a measured call we did not time, not armed, lowers the count) */
        uint64_t ns = nc_now_ns() - x->t_enter;
        struct recv_run *a = &b->recv_runs[x->root];
        if (x->flags & OPF_RUN_FIRST) a->ns = 0, a->calls = 0;
        a->ns += ns;
        a->calls++;
        if (x->flags & OPF_RUN_LAST) {
            uint64_t sum = a->ns > UINT32_MAX ? UINT32_MAX : a->ns;
            uint64_t n = a->calls > REPORT_CALLS_MASK ? REPORT_CALLS_MASK : a->calls;
            atomic_store_explicit(report_word(b, x->me, x->root),
                                  (sum << REPORT_NS_SHIFT) | (n << REPORT_TAG_BITS) |
                                      report_tag(b->hot.op),
                                  memory_order_relaxed);
        }
    }
    if (!is_root && (x->flags & (OPF_RUN_ARM | OPF_RUN_LAST)))
        b->recv_runs[x->root].armed = !(x->flags & OPF_RUN_LAST);
    if (rc == NUMACOLL_OK && cap != bytes) rc = bc_size_error(x->me, x->root, cap, bytes);
    return rc;
}
