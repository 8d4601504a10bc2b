/*
 * The queue path: the paper's pipeline. The root copies the message fragment by fragment
 * into its queue, a set per op, and notifies its children; every receiver forwards each
 * fragment's notification (a relay first copies it into its own queue) and copies it out.
 * Copy modes (NT_STREAM_*), the model's one fragment (OPF_WHOLE), rotating offsets
 * (OPF_NOROT) and the selector's measurement flags (OPF_REPORT, OPF_RUN_*) travel in the
 * control lines' flags.
 */
#include "bcast_internal.h"

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
 * rotation of later ops grows the mark step by step. Failing, the whole call fails on
 * every member (queue_failed), with the reason in the log. */
#define POPULATE_STEP (256u << 10)
static int populate_set(call_t *x, size_t set, size_t end, uint64_t op)
{
    bcast_t *b = x->b;
    size_t set_bytes = b->slots_per_set * b->fragment_bytes, hw = b->populated[set];
    end = end > set_bytes ? set_bytes : end;
    size_t to = hw + POPULATE_STEP > end ? hw + POPULATE_STEP : end;
    to = to > set_bytes ? set_bytes : nc_round_up(to, nc_page_size());
    char *p = slot_buf(b, x->me, set * b->slots_per_set) + hw;
    int rc = nc_seg_populate(p, to - hw, "a broadcast queue set");
    if (rc == NUMACOLL_OK) {
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
    char why[256];
    snprintf(why, sizeof why, "%s", numacoll_last_error());
    return queue_failed(x, set * b->slots_per_set, op, why);
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
    int rc = NUMACOLL_OK;
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
        if (is_root) {
            /* Wait: every member's ack of op - q, the set's previous use (only member r
             * writes its ack, with release after its last read of that op); after it, no
             * one reads the set or its control lines any more, and we may rewrite them */
            rc = wait_reuse(x->t, b, op, b->sets);
            if (rc) return rc;
            if (NC_UNLIKELY(b->populated[set] < use_end)) {
                rc = populate_set(x, set, use_end, op);
                if (rc) return rc;
            }
            /* diagnostic only (nobody waits on it): last op started on this set */
            atomic_store_explicit(set_op_word(b, set), op + 1, memory_order_relaxed);
        }
        for (size_t i = 0; i < nfrag; i++) {
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
                 * flags, msg_bytes and the fragment in the source's queue are visible */
                rc = wait_stamp(x->t, &cl->stamp, op + 1);
                if (rc) return rc;
                if (NC_UNLIKELY(cl->flags & OPF_NOSPACE)) return queue_failed(x, slot, op, NULL);
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
                    if (NC_UNLIKELY(b->populated[set] < use_end)) {
                        rc = populate_set(x, set, use_end, op);
                        if (rc) return rc;
                    }
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
