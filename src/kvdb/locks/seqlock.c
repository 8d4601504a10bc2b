/*
 * seqlock (our own scheme): optimistic reads validated by a sequence number; the read
 * path performs no store and no atomic read-modify-write at all.
 *
 *   writer: s = its private count; seq = s + 1 (odd: write in progress); release fence;
 *           ... write ...; seq = s + 2 (release)
 *   reader: s1 = seq (acquire), wait while odd; ... copy what is needed ...;
 *           acquire fence; s2 = seq; valid iff s1 == s2, otherwise copy again
 *
 * Correctness: if the reader's copy saw any store of a write section, the writer's
 * release fence (after its odd store) synchronises with the reader's acquire fence, so the
 * reader's second load sees the odd value or later and the copy is rejected. If s1 == s2
 * (even), no write section overlapped the copy. The store keeps entries immutable once
 * published and only swings bucket words (relaxed atomics) inside write sections, and the
 * reader bounds-checks every offset and length it takes from the snapshot before using it,
 * so a torn snapshot is at worst garbage that validation rejects, never an out-of-range
 * access. (The byte copies themselves are plain memcpy reads of memory the writer may be
 * changing, as in the Linux kernel's seqcount readers; their result is discarded unless
 * validated.)
 *
 * Cost: readers only read the seq line, which changes only when the server writes, so
 * N readers scale like N independent loads. The writer pays two stores and never waits
 * for readers; a reader may have to repeat its copy while writes keep coming (readers can
 * starve under a continuous stream of writes, the writer never does). A reader killed
 * anywhere leaves nothing to recover. A server killed inside a write leaves seq odd;
 * readers then fail with NUMACOLL_ERR_PEER_DEAD instead of waiting forever.
 */
#include "lock.h"

typedef struct sq {
    _Atomic uint64_t seq; /* written by the writer only */
} sq_t;

static sq_t *sq_of(nc_kvlock_t *l)
{
    return (sq_t *)l->area;
}
static size_t sq_bytes(int nslots, size_t line)
{
    return line;
}
static int sq_init(nc_kvlock_t *l)
{
    l->wstate = 0; /* the area starts zero-filled */
    return NUMACOLL_OK;
}

static int sq_rd_lock(nc_kvlock_t *l, uint64_t *token)
{
    /* acquire: pairs with the writer's release store of the even value that ends a write */
    uint64_t s = atomic_load_explicit(&sq_of(l)->seq, memory_order_acquire);
    if (NC_UNLIKELY(s & 1)) {
        nc_kvwait_t kw;
        nc_kvwait_init(&kw, l, l->server_pid, "kvdb seqlock read (write in progress)");
        /* seq is written by the writer only; an even value means no write is in progress
         * and everything written before it is visible to us (acquire) */
        while ((s = atomic_load_explicit(&sq_of(l)->seq, memory_order_acquire)) & 1) {
            int rc = nc_kvwait_step(&kw);
            if (rc) return rc;
        }
    }
    *token = s;
    return NUMACOLL_OK;
}

static int sq_rd_unlock(nc_kvlock_t *l, uint64_t token)
{
    /* acquire fence: orders the copies before the re-read of seq (see the comment above) */
    atomic_thread_fence(memory_order_acquire);
    uint64_t s = atomic_load_explicit(&sq_of(l)->seq, memory_order_relaxed);
    return NC_LIKELY(s == token) ? NUMACOLL_OK : NC_KVLOCK_RETRY;
}

/* The writer counts from its private copy (l->wstate), not from the shared word, which
 * any reader could overwrite: the values it stores are always odd inside and even
 * outside a write section. */
static int sq_wr_lock(nc_kvlock_t *l)
{
    l->wstate++;
    atomic_store_explicit(&sq_of(l)->seq, l->wstate, memory_order_relaxed);
    /* release fence: the odd value is ordered before every store of the write section */
    atomic_thread_fence(memory_order_release);
    return NUMACOLL_OK;
}

static int sq_wr_unlock(nc_kvlock_t *l)
{
    l->wstate++;
    /* release: the section's stores are visible to a reader that sees the even value */
    atomic_store_explicit(&sq_of(l)->seq, l->wstate, memory_order_release);
    return NUMACOLL_OK;
}

const nc_kvlock_ops_t nc_kvlock_seqlock = {
    .name = "seqlock",
    .description = "optimistic reads validated by a sequence number: no store and no atomic "
                   "RMW on the read path; the writer never waits",
    .optimistic = 1,
    .area_bytes = sq_bytes,
    .init = sq_init,
    .rd_lock = sq_rd_lock,
    .rd_unlock = sq_rd_unlock,
    .wr_lock = sq_wr_lock,
    .wr_unlock = sq_wr_unlock,
};
