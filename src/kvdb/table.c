/*
 * The server's updates of the open-addressing hash table (layout and trust: store.h).
 *
 * Entries are immutable once a bucket points to them: a replace appends a new entry and
 * swings the bucket, a delete writes a tombstone; dead entries are garbage until the next
 * generation. The server appends a batch's entries beyond the heap's used end outside the
 * write section (readers never look there) and only swings bucket words inside it, so the
 * write section is short. A new generation (grown or compacted) is built entirely outside
 * the lock and published by store.c.
 *
 * The server decides with its private geometry and counters (kv_tab_t). Bucket words,
 * entry headers and keys it reads back from the segment are checked before use
 * (entry_ok): a table another process has overwritten gives NUMACOLL_ERR_STATE naming the
 * bucket and what is out of range, never an access outside the segment or an endless walk.
 */
#include "store.h"

int kv_corrupt(uint64_t gen, const kv_bad_t *bad)
{
    return nc_error(NUMACOLL_ERR_STATE,
                    "kvdb: data generation %llu is corrupt (overwritten by another process?): "
                    "bucket %llu %s %llu",
                    (unsigned long long)gen, (unsigned long long)bad->bucket, bad->what,
                    (unsigned long long)bad->value);
}

/* Check the entry bucket @p b of @p t points to (@p off) and copy its header into *e: it
 * must lie in the used heap, 8-aligned, and its header must be one the server writes
 * (lengths within the limits, size what they add up to, all inside the used heap). */
static int entry_ok(const kv_tab_t *t, uint64_t b, uint64_t off, kv_entry_t *e, kv_bad_t *bad)
{
    /* heap_used >= hoff > sizeof *e: no wrap */
    if (off < t->g.hoff || (off & 7) || off > t->c.heap_used - sizeof *e) {
        *bad = (kv_bad_t){"points outside the used heap, at offset", b, off};
        return 0;
    }
    memcpy(e, t->base + off, sizeof *e); /* one copy: checked, then used */
    if (e->nslen > NUMACOLL_KVDB_MAX_NSLEN || e->keylen < 1 ||
        e->keylen > NUMACOLL_KVDB_MAX_KEYLEN ||
        e->size != kv_entry_bytes(e->nslen, e->keylen, e->vallen) ||
        e->size > t->c.heap_used - off) {
        *bad = (kv_bad_t){"points to an entry with an inconsistent header, size", b, e->size};
        return 0;
    }
    return 1;
}

/* Record that bucket @p b held (hash, off) before a store (in-place commits). */
static inline void undo_push(kv_undo_t *undo, size_t *nundo, uint64_t b, uint64_t hash,
                             uint64_t off)
{
    if (undo) undo[(*nundo)++] = (kv_undo_t){b, hash, off};
}

/* Point the bucket of key (@p rank, @p nk = namespace and key bytes) at its new entry
 * @p off: the key's bucket if it has one (replace), else the first tombstone or empty
 * bucket of its walk. */
static int table_put(kv_tab_t *t, uint64_t h, uint32_t rank, uint16_t nslen, uint16_t keylen,
                     const char *nk, uint64_t off, kv_undo_t *undo, size_t *nundo)
{
    kv_bucket_t *b = kv_buckets(t);
    uint64_t mask = t->g.mask, p = h & mask;
    int64_t tomb = -1, empty = -1;
    kv_bad_t bad = {0};
    for (uint64_t i = 0; i < t->g.nb; i++, p = (p + 1) & mask) {
        uint64_t o = atomic_load_explicit(&b[p].off, memory_order_relaxed);
        if (o == OFF_EMPTY) {
            empty = (int64_t)p;
            break;
        }
        if (o == OFF_TOMB) {
            if (tomb < 0) tomb = (int64_t)p;
            continue;
        }
        if (atomic_load_explicit(&b[p].hash, memory_order_relaxed) != h) continue;
        kv_entry_t e;
        if (!entry_ok(t, p, o, &e, &bad)) return kv_corrupt(t->gen, &bad);
        if (e.rank != rank || e.nslen != nslen || e.keylen != keylen ||
            memcmp(t->base + o + sizeof e, nk, (size_t)nslen + keylen) != 0)
            continue;
        /* replace: swing the bucket to the new immutable entry */
        undo_push(undo, nundo, p, h, o);
        atomic_store_explicit(&b[p].off, off, memory_order_relaxed);
        t->c.garbage += e.size;
        return NUMACOLL_OK;
    }
    if (tomb >= 0) {
        p = (uint64_t)tomb;
    } else if (empty >= 0) {
        p = (uint64_t)empty;
        t->c.used++;
    } else { /* the private count keeps a quarter of the buckets empty */
        bad = (kv_bad_t){"starts a walk that finds no free bucket among", h & mask, t->g.nb};
        return kv_corrupt(t->gen, &bad);
    }
    undo_push(undo, nundo, p, atomic_load_explicit(&b[p].hash, memory_order_relaxed),
              atomic_load_explicit(&b[p].off, memory_order_relaxed));
    atomic_store_explicit(&b[p].hash, h, memory_order_relaxed);
    atomic_store_explicit(&b[p].off, off, memory_order_relaxed);
    t->c.live++;
    return NUMACOLL_OK;
}

static int table_del(kv_tab_t *t, const kv_op_t *op, kv_undo_t *undo, size_t *nundo)
{
    kv_entry_t eh;
    kv_bad_t bad = {0};
    uint64_t p = 0;
    int64_t off = kv_find(t, t->c.heap_used, op->hash, op->buf, op->nslen, op->rank,
                          op->buf + op->nslen, op->keylen, &eh, &p, &bad);
    if (off == FIND_CORRUPT) return kv_corrupt(t->gen, &bad);
    if (off == 0) return NUMACOLL_OK; /* staged delete of a key the batch deleted already */
    if (!entry_ok(t, p, (uint64_t)off, &eh, &bad)) return kv_corrupt(t->gen, &bad);
    kv_bucket_t *b = kv_buckets(t);
    undo_push(undo, nundo, p, op->hash, (uint64_t)off);
    atomic_store_explicit(&b[p].off, OFF_TOMB, memory_order_relaxed);
    t->c.live--;
    t->c.garbage += eh.size;
    return NUMACOLL_OK;
}

/* Append an entry at *end (outside the published part of the heap). Returns its offset. */
static uint64_t heap_append(kv_tab_t *t, uint64_t *end, const kv_op_t *op)
{
    uint64_t off = *end;
    kv_entry_t e = {.size = (uint32_t)kv_entry_bytes(op->nslen, op->keylen, op->vallen),
                    .rank = op->rank,
                    .nslen = op->nslen,
                    .keylen = op->keylen,
                    .vallen = op->vallen,
                    .hash = op->hash};
    char *p = t->base + off;
    memcpy(p, &e, sizeof e);
    memcpy(p + sizeof e, op->buf, (size_t)op->nslen + op->keylen + op->vallen);
    *end = off + e.size;
    return off;
}

void kv_append_batch(numacoll_kvdb_t *db, kv_tab_t *t, uint64_t *end)
{
    *end = t->c.heap_used;
    for (size_t i = 0; i < db->nstaged; i++) {
        kv_op_t *op = &db->staged[i];
        if (!op->del) op->off = heap_append(t, end, op);
    }
}

int kv_apply_batch(numacoll_kvdb_t *db, kv_tab_t *t, uint64_t end, kv_undo_t *undo)
{
    kv_count_t before = t->c;
    size_t nundo = 0;
    int rc = NUMACOLL_OK;
    t->c.heap_used = end; /* the batch's entries are part of the used heap now */
    for (size_t i = 0; i < db->nstaged && !rc; i++) {
        kv_op_t *op = &db->staged[i];
        rc = op->del ? table_del(t, op, undo, &nundo)
                     : table_put(t, op->hash, op->rank, op->nslen, op->keylen, op->buf, op->off,
                                 undo, &nundo);
    }
    if (rc) {
        kv_bucket_t *b = kv_buckets(t);
        while (nundo-- > 0) {
            const kv_undo_t *u = &undo[nundo];
            atomic_store_explicit(&b[u->b].hash, u->hash, memory_order_relaxed);
            atomic_store_explicit(&b[u->b].off, u->off, memory_order_relaxed);
        }
        t->c = before;
        return rc;
    }
    kv_data_t *d = kv_dhdr(t);
    atomic_store_explicit(&d->heap_used, t->c.heap_used, memory_order_relaxed);
    atomic_store_explicit(&d->live, t->c.live, memory_order_relaxed);
    atomic_store_explicit(&d->used, t->c.used, memory_order_relaxed);
    atomic_store_explicit(&d->garbage, t->c.garbage, memory_order_relaxed);
    return NUMACOLL_OK;
}

int kv_rebuild(const kv_tab_t *old, kv_tab_t *nt)
{
    const kv_bucket_t *ob = kv_buckets(old);
    /* the server's counts of what may be copied: the new generation has room for them and
     * the batch, not for more */
    const uint64_t live_bytes = old->c.heap_used - old->g.hoff - old->c.garbage;
    uint64_t n = 0;
    kv_bad_t bad = {0};
    for (uint64_t i = 0; i < old->g.nb; i++) {
        uint64_t off = atomic_load_explicit(&ob[i].off, memory_order_relaxed);
        if (off <= OFF_TOMB) continue;
        kv_entry_t e;
        if (!entry_ok(old, i, off, &e, &bad)) return kv_corrupt(old->gen, &bad);
        if (e.hash != atomic_load_explicit(&ob[i].hash, memory_order_relaxed)) {
            bad = (kv_bad_t){"holds a hash other than that of its entry at offset", i,
                             off};
            return kv_corrupt(old->gen, &bad);
        }
        if (++n > old->c.live) {
            bad = (kv_bad_t){"is one more live entry than the server's count of", i, old->c.live};
            return kv_corrupt(old->gen, &bad);
        }
        uint64_t end = nt->c.heap_used;
        if (e.size > live_bytes - (end - nt->g.hoff)) {
            bad = (kv_bad_t){"brings the live entries past the server's count of bytes", i,
                             live_bytes};
            return kv_corrupt(old->gen, &bad);
        }
        char *dst = nt->base + end;
        memcpy(dst, old->base + off, e.size);
        memcpy(dst, &e, sizeof e); /* the header as checked */
        nt->c.heap_used = end + e.size;
        int rc = table_put(nt, e.hash, e.rank, e.nslen, e.keylen, dst + sizeof e, end, NULL, NULL);
        if (rc) return rc;
    }
    kv_data_t *d = kv_dhdr(nt);
    atomic_store_explicit(&d->heap_used, nt->c.heap_used, memory_order_relaxed);
    atomic_store_explicit(&d->live, nt->c.live, memory_order_relaxed);
    atomic_store_explicit(&d->used, nt->c.used, memory_order_relaxed);
    atomic_store_explicit(&d->garbage, nt->c.garbage, memory_order_relaxed);
    return NUMACOLL_OK;
}
