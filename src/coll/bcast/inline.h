/*
 * The inline path's copies (private to coll/bcast/): a small payload into a child's inline
 * block and out of our own, in line where they are used (the hot path, inline.c, and the
 * general path, bcast.c).
 */
#ifndef NC_BCAST_INLINE_H
#define NC_BCAST_INLINE_H

#include "bcast_internal.h"

#include <string.h>

/* memcpy for the inline path: up to 16 bytes as two possibly overlapping fixed-size moves
 * (a handful of instructions instead of a call into libc), larger sizes through memcpy */
static inline void small_copy(void *dst, const void *src, size_t n)
{
    char *d = dst;
    const char *s = src;
    if (n >= 8 && n <= 16) {
        uint64_t a, z;
        __builtin_memcpy(&a, s, 8);
        __builtin_memcpy(&z, s + n - 8, 8);
        __builtin_memcpy(d, &a, 8);
        __builtin_memcpy(d + n - 8, &z, 8);
    } else if (n >= 4 && n < 8) {
        uint32_t a, z;
        __builtin_memcpy(&a, s, 4);
        __builtin_memcpy(&z, s + n - 4, 4);
        __builtin_memcpy(d, &a, 4);
        __builtin_memcpy(d + n - 4, &z, 4);
    } else if (n < 4) {
        for (size_t i = 0; i < n; i++)
            d[i] = s[i];
    } else {
        memcpy(d, s, n);
    }
}

/* CLDEMOTE every 64-byte line of [@p p, @p end) (p line-aligned), see inl_put */
static inline void nc_demote_range(const char *p, const char *end)
{
    for (; p < end; p += 64)
        nc_cache_demote(p);
}

/* PREFETCHW every 64-byte line of [@p p, @p end) (p line-aligned), see inl_put */
static inline void nc_prefetch_w_range(const char *p, const char *end)
{
    for (; p < end; p += 64)
        nc_prefetch_w(p);
}

/* Copy a small payload into the inline block @p blk and publish it (the first @p head
 * payload bytes share the line of the stamp).
 *
 * Cache-line traffic: the child polls the block's first line (the stamp). Were that line
 * written first (payload head) and again last (size, stamp), a poll in between would pull
 * it over to the child and the root would have to take it back: two extra transfers of
 * the polled line per call. So the payload beyond the first line is written first, then
 * the payload head, the size and the stamp, all in the polled line, back to back: the line
 * moves once to the root and once back. The child never reads a torn payload: it reads the
 * payload only after its acquire load has seen this op's stamp, which the release store
 * below publishes after every payload byte; and nobody rewrites the block before the child
 * has acked this op (the root waits for the acks of op - INLINE_BLOCKS + 1 before reusing a
 * block, see root_inline), so the bytes stay as published while the child copies them.
 * Two optional hints (@p hints), neither of which changes a value anyone reads, so no
 * ordering argument depends on them:
 * - HINT_PREFETCH (NUMACOLL_BCAST_PREFETCH): the lines beyond the first are prefetched for
 *   writing before they are written. The child read them at the block's previous op, so
 *   they sit shared in its cache, and each store must first take its line back; the stores
 *   leave the store buffer in order, so those requests would go out one after another, and
 *   the stamp, stored last, would wait for all of them. Prefetched, they travel together.
 *   The polled first line is not prefetched: the child is usually polling it, and would
 *   pull it back before the stamp is written.
 * - HINT_DEMOTE (NUMACOLL_BCAST_DEMOTE): the lines beyond the first get a CLDEMOTE hint
 *   right after they are written, before the stamp: a child on another core then reads them
 *   from L3; the polled first line is left alone, as above. */
static inline void inl_put(numacoll_team_t *t, char *blk, size_t head, const void *data, size_t n,
                           uint64_t word, uint64_t stamp, unsigned hints)
{
    /* head: payload bytes that share the stamp's line (line size - INL_HDR) */
    if (n > head) {
        char *tail = blk + INL_HDR + head, *end = blk + INL_HDR + n; /* beyond the first line */
        if (hints & HINT_PREFETCH) nc_prefetch_w_range(tail, end);
        memcpy(tail, (const char *)data + head, n - head);
        if (hints & HINT_DEMOTE) nc_demote_range(tail, end);
        memcpy(blk + INL_HDR, data, head);
    } else {
        small_copy(blk + INL_HDR, data, n);
    }
    ((uint64_t *)blk)[1] = word; /* n for an inline message, see KIND_CMA */
    /* release: payload and word before the stamp the child waits for; then wake the child
     * if it sleeps on the stamp in the kernel */
    nc_flag_post(t, (_Atomic uint64_t *)blk, stamp);
}

/* A receiver's end of an inline op, after forwarding: copy at most its own size out of
 * block @p blk, ack op (@p ack_line is its ack line), and report a size different from the
 * root's @p sent. Shared by recv_first and run_hot. */
static inline int inl_take(numacoll_team_t *t, int me, int root, const char *blk, size_t sent,
                           void *buf, size_t bytes, char *ack_line, uint64_t op)
{
    /* the length from `bytes` when the sizes match: memcpy's tail loads are addressed from
     * the length, and with min(sent, bytes) they would wait for the load of `sent` */
    if (NC_LIKELY(sent == bytes))
        small_copy(buf, blk + INL_HDR, bytes);
    else
        small_copy(buf, blk + INL_HDR, sent < bytes ? sent : bytes);
    /* release: all our reads of the block happen before a root sees the ack (woken if it
     * sleeps on it) */
    nc_flag_post(t, (_Atomic uint64_t *)ack_line, op + 1);
    if (NC_UNLIKELY(sent != bytes)) return bc_size_error(me, root, bytes, sent);
    return NUMACOLL_OK;
}

/* The root's end of an inline broadcast on the general path: one op, the payload in the
 * children's blocks (in line: nc_bcast_run_opts keeps it on its path without a call). */
static inline int root_inline(call_t *x, void *buf, size_t bytes)
{
    bcast_t *b = x->b;
    uint64_t op = b->hot.op++;
    /* Wait: every member's ack of the block's previous op (op - INLINE_BLOCKS; only member r
     * writes its ack, with release after its last read of the op): then nobody reads the
     * block any more, and we may rewrite it */
    int rc = wait_reuse(x->t, b, op, INLINE_BLOCKS);
    if (rc) return rc;
    bc_inl_forward(x, op % INLINE_BLOCKS, buf, bytes,
                   bytes | root_bits(x->me) | (x->mark ? KIND_MARK : 0), op + 1);
    post_ack(x->t, b, x->me, op);
    return NUMACOLL_OK;
}

#endif
