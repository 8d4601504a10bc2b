/*
 * The inline path: a small message travels in the receivers' inline blocks, one op per
 * broadcast. The general path's root and receiver ends are root_inline (inline.h) and
 * recv_first (bcast.c); here the forwarding they share, and the default call
 * (nc_bcast_run) with its hot path, which runs the same ops from one cache line of state.
 */
#include "inline.h"

/* Copy a small payload into each child's inline block of @p set and publish it. */
void bc_inl_forward(call_t *x, size_t set, const void *data, size_t n, uint64_t word,
                    uint64_t stamp)
{
    for (int i = 0; i < x->nkids; i++)
        inl_put(x->t, inl_block(x->b, x->t, x->kids[i], set), x->b->hot.head_bytes, data, n, word,
                stamp, x->hints);
}

/* Cache the default tree's children of @p root in the hot line; 0 if they do not fit (or
 * the tree is not built yet: the general path builds it). */
static int hot_fill(bcast_t *b, int root)
{
    tree_cache_t *c = &b->trees[b->tree_kind];
    if (!c->built || c->fanout != b->fanout) return 0;
    int n = c->child_off[root + 1] - c->child_off[root];
    if (n > HOT_KIDS) return 0;
    for (int i = 0; i < n; i++)
        b->hot.kid_blocks[i] =
            proc_area(b, c->children[c->child_off[root] + i]) + b->hot.blocks_off;
    b->hot.nkids = (int16_t)n;
    b->hot.kids_root = (int16_t)root;
    return 1;
}

/* Before the hot path's root reuses an inline block: wait until every other member has
 * acked the block's previous op (ack >= @p need, as wait_reuse), then recompute the lower
 * bound of all acks from the cache wait_acks keeps. */
static __attribute__((noinline)) int hot_refresh(numacoll_team_t *t, bcast_t *b, uint64_t need)
{
    /* Wait: only member r writes its ack, with release after its last read of an op; once
     * every ack shows >= need, nobody reads the block we are about to rewrite */
    int rc = wait_acks(t, b, need);
    if (rc) return rc;
    uint64_t lo = UINT64_MAX;
    for (int r = 0; r < t->size; r++)
        if (r != t->rank && b->acks_seen[r] < lo) lo = b->acks_seen[r];
    b->hot.acks_min = lo;
    return NUMACOLL_OK;
}

/* An inner tree node's forwarding of inline block @p blk (@p bytes, the root's size and
 * ours) to its cached children. Out of line: a leaf's path (every receiver at np = 2) is
 * faster without this loop in it, even though the loop runs 0 times there. */
static __attribute__((noinline)) void hot_forward(numacoll_team_t *t, const hot_line_t *h,
                                                  const char *blk, size_t off, size_t bytes,
                                                  uint64_t op)
{
    for (int i = 0; i < h->nkids; i++)
        inl_put(t, h->kid_blocks[i] + off, h->head_bytes, blk + INL_HDR, bytes,
                bytes | root_bits(h->kids_root), op + 1, h->hints);
}

/* The hot path's receiver found a word other than its own size in its block, or the root
 * took the queue path: give the op back to the general path, whose receivers follow the
 * root (recv_first). */
static __attribute__((noinline)) int hot_mismatch(numacoll_team_t *t, void *buf, size_t bytes,
                                                  int root)
{
    t->bcast->hot.op--;
    return nc_bcast_run_opts(t, buf, bytes, root, NULL);
}

/* The inline broadcast (root_inline, recv_first) for the default tree and a cached root,
 * from the hot line only (plus the shared blocks and ack lines): same ops, blocks, stamps
 * and acks, so members may take this path or the general one in the same broadcast.
 * Everything it calls in line (wait_first, inl_put, inl_take) is static inline in the
 * headers; what it calls out of line (hot_refresh, bc_wait_both, hot_forward, hot_mismatch)
 * runs only off its fast path. */
static int run_hot(numacoll_team_t *t, bcast_t *b, void *buf, size_t bytes, int root)
{
    hot_line_t *h = &b->hot;
    uint64_t op = h->op++;
    size_t off = (size_t)(op % INLINE_BLOCKS) * h->block_bytes;
    if (t->rank == root) {
        if (NC_UNLIKELY(op >= INLINE_BLOCKS && h->acks_min < op - INLINE_BLOCKS + 1)) {
            int rc = hot_refresh(t, b, op - INLINE_BLOCKS + 1);
            if (rc) return rc;
        }
        for (int i = 0; i < h->nkids; i++)
            inl_put(t, h->kid_blocks[i] + off, h->head_bytes, buf, bytes, bytes | root_bits(root),
                    op + 1, h->hints);
        /* release: as post_ack(), our reads and writes of op before a root sees the ack */
        nc_flag_post(t, (_Atomic uint64_t *)h->my_area, op + 1);
        if (NC_UNLIKELY((uint32_t)h->op == h->give_due32)) bc_give_back(t, b);
        return NUMACOLL_OK;
    }
    char *blk = h->my_area + h->blocks_off + off;
    /* Wait: only our parent in the default tree (the root at np = 2) writes the block, the
     * payload and word first, then the stamp with release; after wait_first's acquire load
     * shows op + 1 (its loops say so too) the payload and word are ours to read, and stay
     * as they are until we ack op. alt: the root wrote our first control line instead (it
     * took the queue path). */
    int alt;
    int rc = wait_first(t, b, (_Atomic uint64_t *)blk, 1, op, &alt);
    if (rc) return rc;
    if (NC_UNLIKELY(alt || ((uint64_t *)blk)[1] != (bytes | root_bits(root))))
        return hot_mismatch(t, buf, bytes, root);
    /* lengths from `bytes` (a register, not the load of the word: the copies' addresses
     * need not wait for that load) */
    if (NC_UNLIKELY(h->nkids)) hot_forward(t, h, blk, off, bytes, op);
    rc = inl_take(t, t->rank, root, blk, bytes, buf, bytes, h->my_area, op);
    /* the count of calls without a queue write is hot.op itself (give_back.c) */
    if (NC_UNLIKELY((uint32_t)h->op == h->give_due32)) bc_give_back(t, b);
    return rc;
}

/* The default call. Small messages (0 .. fast_limit - 1 bytes, all inline; 0 bytes is a
 * payload-free inline op on the general path too) with the default tree's children
 * of this root cached in the hot line go to run_hot; everything else, and the first call
 * of a root, to the general path (which builds the tree). */
int nc_bcast_run(numacoll_team_t *t, void *buf, size_t bytes, int root)
{
    bcast_t *b = t->bcast;
    if (NC_LIKELY(b && bytes < b->hot.fast_limit) &&
        (NC_LIKELY(b->hot.kids_root == root) || hot_fill(b, root)))
        return run_hot(t, b, buf, bytes, root);
    return nc_bcast_run_opts(t, buf, bytes, root, NULL);
}
