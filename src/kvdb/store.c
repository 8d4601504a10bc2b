/*
 * The key-value store's public calls: create/attach/close, staging, commit, get, iterate,
 * statistics. Segments, their layout and what each process trusts: store.h and
 * segment.c; the server's table updates: table.c.
 *
 * A commit whose batch fits the current generation appends the entries beyond the heap's
 * used end outside the lock and swings bucket words inside one write section. When a
 * batch does not fit (heap, or buckets above 3/4 load), the server builds a new
 * generation (grown, or just compacted) entirely outside the lock, then publishes
 * (generation, fd) in the header segment's current-generation word inside a write
 * section; readers compare their generation with that word inside every read section and
 * re-map.
 *
 * Every offset and length a reader takes from a data segment is checked against its
 * private copy of the segment's geometry before use (an optimistic reader may see
 * garbage; a check failing in a validated snapshot is reported as a corrupt store).
 */
#include "store.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int nc_kv_prof_clock = NC_KV_CLOCK_CPUID;

/* Inside a read section: make sure we map the current generation. */
static inline int reader_sync(numacoll_kvdb_t *db)
{
    /* acquire: the server stores the word (release) inside a write section, after the new
     * generation was completely built; seeing it we may read that generation */
    uint64_t cur = atomic_load_explicit(db->cur, memory_order_acquire);
    if (NC_LIKELY((cur >> 32) == db->t.gen)) return NUMACOLL_OK;
    return kv_reader_remap(db, cur);
}

/* ---- creation, attach, close ---------------------------------------------------------- */

/* Timeout and spin policy of this process's waits (config; few spins when the readers
 * plus the server outnumber our CPUs, since then the process we wait for may need ours),
 * and the pid its lock words hold. */
static void lock_policy(nc_kvlock_t *l)
{
    l->self = (uint32_t)getpid();
    l->timeout_ns = (uint64_t)(nc_cfg_double(NC_CFG_TIMEOUT) * 1e9);
    long spin = nc_cfg_int(NC_CFG_WAIT_SPIN);
    cpu_set_t set;
    int ncpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    if (spin >= 0)
        l->spin_limit = (uint32_t)spin;
    else
        l->spin_limit = nc_detect_oversubscribed(l->nslots + 1, ncpus) ? 64 : 4096;
}

static size_t pow2_at_least(size_t x)
{
    size_t p = 8;
    while (p < x)
        p <<= 1;
    return p;
}

static numacoll_kvdb_t *kv_alloc(void)
{
    numacoll_kvdb_t *db = calloc(1, sizeof *db);
    if (db) {
        db->hdr_fd = db->lck_fd = db->data_fd = -1;
        db->lk.slot = -1;
    }
    return db;
}

int numacoll_kvdb_create(const numacoll_kvdb_params_t *params, numacoll_kvdb_t **out)
{
    if (!out) return nc_error(NUMACOLL_ERR_ARG, "numacoll_kvdb_create: db is NULL");
    *out = NULL;
    int rc = numacoll_config_check();
    if (rc) return rc;
    numacoll_kvdb_params_t p = {0};
    if (params) p = *params;
    const char *lname = p.lock ? p.lock : nc_cfg_str(NC_CFG_KVDB_LOCK);
    const nc_kvlock_ops_t *ops = nc_kvlock_find(lname);
    if (!ops) {
        char allowed[512];
        snprintf(allowed, sizeof allowed, "%s", nc_kvlock_allowed_names());
        for (char *c = allowed; *c; c++)
            if (*c == '|') *c = ',';
        return nc_error(NUMACOLL_ERR_NOT_FOUND, "kvdb: unknown lock scheme '%s'; allowed: %s",
                        lname, allowed);
    }
    long nslots = p.max_readers ? p.max_readers : nc_cfg_int(NC_CFG_KVDB_MAX_READERS);
    if (nslots < 1 || nslots > 4096)
        return nc_error(NUMACOLL_ERR_ARG, "kvdb: max_readers=%ld is not valid; allowed: 1..4096",
                        nslots);
    size_t nb = p.buckets ? p.buckets : (size_t)nc_cfg_int(NC_CFG_KVDB_BUCKETS);
    if (nb < 8 || nb > (1ull << 30))
        return nc_error(NUMACOLL_ERR_ARG, "kvdb: buckets=%zu is not valid; allowed: 8..2^30", nb);
    nb = pow2_at_least(nb);
    size_t heap = p.heap_bytes ? p.heap_bytes : nc_cfg_size(NC_CFG_KVDB_HEAP);
    if (heap < 1024)
        return nc_error(NUMACOLL_ERR_ARG, "kvdb: heap_bytes=%zu is not valid; allowed: >= 1024",
                        heap);
    int grow;
    if (p.grow == NUMACOLL_KVDB_GROW_CONFIG)
        grow = nc_cfg_bool(NC_CFG_KVDB_GROW);
    else if (p.grow == NUMACOLL_KVDB_GROW_YES || p.grow == NUMACOLL_KVDB_GROW_NO)
        grow = p.grow == NUMACOLL_KVDB_GROW_YES;
    else
        return nc_error(NUMACOLL_ERR_ARG,
                        "kvdb: grow=%d is not valid; allowed: NUMACOLL_KVDB_GROW_CONFIG (0), "
                        "_YES (1), _NO (2)",
                        p.grow);

    numacoll_kvdb_t *db = kv_alloc();
    if (!db) return nc_error(NUMACOLL_ERR_NOMEM, "kvdb: out of memory");
    db->server = 1;
    db->ops = ops;
    db->server_pid = getpid();
    db->max_value = nc_cfg_size(NC_CFG_KVDB_MAX_VALUE);
    db->max_size = nc_cfg_size(NC_CFG_KVDB_MAX_SIZE);
    db->grow = grow;
    if (kv_data_size_for(nb, heap, &(size_t){0}, &(size_t){0}) > db->max_size) {
        rc = nc_error(NUMACOLL_ERR_ARG,
                      "kvdb: the initial table (%zu buckets, %zu heap bytes) exceeds "
                      "NUMACOLL_KVDB_MAX_SIZE=%zu",
                      nb, heap, db->max_size);
        goto fail;
    }
    rc = kv_ctl_create(db, (int)nslots);
    if (rc) goto fail;
    lock_policy(&db->lk);
    rc = ops->init(&db->lk);
    if (rc) goto fail;
    rc = kv_data_create(nb, heap, 1, &db->data_fd, &db->t);
    if (rc) goto fail;
    /* release: the generation is complete before anybody can see its number (nobody can
     * attach before create returns anyway) */
    atomic_store_explicit(db->cur, (1ull << 32) | (uint32_t)db->data_fd, memory_order_release);
    *out = db;
    return NUMACOLL_OK;
fail:
    numacoll_kvdb_close(db);
    return rc;
}

const char *numacoll_kvdb_handle(const numacoll_kvdb_t *db)
{
    if (!db) {
        nc_error(NUMACOLL_ERR_ARG, "numacoll_kvdb_handle: db is NULL");
        return NULL;
    }
    if (!db->server) {
        nc_error(NUMACOLL_ERR_STATE, "numacoll_kvdb_handle: db is a reader's; only the server "
                                     "(the process that created the store) has the handle");
        return NULL;
    }
    return db->handle;
}

const char *numacoll_kvdb_lock_name(const numacoll_kvdb_t *db)
{
    if (!db) {
        nc_error(NUMACOLL_ERR_ARG, "numacoll_kvdb_lock_name: db is NULL");
        return NULL;
    }
    return db->ops->name;
}

int numacoll_kvdb_attach(const char *handle, numacoll_kvdb_t **out)
{
    if (!out) return nc_error(NUMACOLL_ERR_ARG, "numacoll_kvdb_attach: db is NULL");
    *out = NULL;
    if (!handle) return nc_error(NUMACOLL_ERR_ARG, "numacoll_kvdb_attach: handle is NULL");
    int pid = 0, sfd = -1, n = 0;
    if (sscanf(handle, "/proc/%d/fd/%d%n", &pid, &sfd, &n) != 2 || handle[n] != 0 || pid <= 0 ||
        sfd < 0)
        return nc_error(NUMACOLL_ERR_ARG,
                        "kvdb: handle '%s' is not valid; expected '/proc/<pid>/fd/<n>' as "
                        "returned by numacoll_kvdb_handle()",
                        handle);
    int rc = numacoll_config_check();
    if (rc) return rc;
    numacoll_kvdb_t *db = kv_alloc();
    if (!db) return nc_error(NUMACOLL_ERR_NOMEM, "kvdb: out of memory");
    db->server_pid = pid;
    rc = kv_ctl_attach(db, handle, pid, sfd);
    if (rc) {
        numacoll_kvdb_close(db);
        return rc;
    }
    lock_policy(&db->lk);

    /* claim a free slot (CAS 0 -> our pid), else take over the slot of a dead reader */
    int32_t me = (int32_t)getpid();
    for (int pass = 0; pass < 2 && db->lk.slot < 0; pass++) {
        for (int i = 0; i < db->lk.nslots; i++) {
            nc_kv_slot_t *s = nc_kvlock_slot(&db->lk, i);
            int32_t exp = atomic_load_explicit(&s->pid, memory_order_relaxed);
            if (pass == 0 ? exp != 0 : (exp == 0 || !nc_kvlock_slot_dead(&db->lk, i))) continue;
            /* acq_rel: the previous owner's release (detach) happens before our use */
            if (atomic_compare_exchange_strong_explicit(&s->pid, &exp, me, memory_order_acq_rel,
                                                        memory_order_relaxed)) {
                db->lk.slot = i;
                if (pass == 1 && db->ops->slot_reset) db->ops->slot_reset(&db->lk, i);
                atomic_fetch_add_explicit(&s->attaches, 1, memory_order_relaxed);
                break;
            }
        }
    }
    if (db->lk.slot < 0) {
        int ns = db->lk.nslots;
        numacoll_kvdb_close(db);
        return nc_error(NUMACOLL_ERR_FULL,
                        "kvdb: all %d reader slots are taken by live readers; raise "
                        "max_readers / NUMACOLL_KVDB_MAX_READERS on the server",
                        ns);
    }
    /* map the current generation (a read section keeps it from changing under us) */
    uint64_t tok;
    while (1) {
        rc = db->ops->rd_lock(&db->lk, &tok);
        if (rc) break;
        rc = reader_sync(db);
        int v = db->ops->rd_unlock(&db->lk, tok);
        if (v == NC_KVLOCK_RETRY) {
            db->retries++;
            continue;
        }
        break;
    }
    if (rc) {
        numacoll_kvdb_close(db);
        return rc;
    }
    *out = db;
    return NUMACOLL_OK;
}

int numacoll_kvdb_close(numacoll_kvdb_t *db)
{
    if (!db) return NUMACOLL_OK;
    if (!db->server && db->lk.slot >= 0) {
        nc_kv_slot_t *s = nc_kvlock_slot(&db->lk, db->lk.slot);
        /* release: our last read section is over before the slot can be taken again */
        atomic_store_explicit(&s->pid, 0, memory_order_release);
    }
    /* The server does not tear down the shared lock area (ops->fini): readers may still be
     * attached and even hold their locks; the memory goes away with the last mapping. */
    kv_segments_release(db);
    for (size_t i = 0; i < db->nstaged; i++)
        free(db->staged[i].buf);
    free(db->staged);
    free(db->undo);
    free(db->iterbuf);
    free(db);
    return NUMACOLL_OK;
}

/* ---- staging ---------------------------------------------------------------------------- */

static int check_key(const char *who, const char *ns, const char *key, size_t *nslen,
                     size_t *keylen)
{
    if (!ns) return nc_error(NUMACOLL_ERR_ARG, "%s: nspace is NULL", who);
    if (!key) return nc_error(NUMACOLL_ERR_ARG, "%s: key is NULL", who);
    *nslen = strnlen(ns, NUMACOLL_KVDB_MAX_NSLEN + 1);
    *keylen = strnlen(key, NUMACOLL_KVDB_MAX_KEYLEN + 1);
    if (*nslen > NUMACOLL_KVDB_MAX_NSLEN)
        return nc_error(
            NUMACOLL_ERR_TOOBIG,
            "%s: namespace '%.40s...' is longer than %d bytes (NUMACOLL_KVDB_MAX_NSLEN)", who, ns,
            NUMACOLL_KVDB_MAX_NSLEN);
    if (*keylen > NUMACOLL_KVDB_MAX_KEYLEN)
        return nc_error(NUMACOLL_ERR_TOOBIG,
                        "%s: key '%.40s...' is longer than %d bytes (NUMACOLL_KVDB_MAX_KEYLEN)",
                        who, key, NUMACOLL_KVDB_MAX_KEYLEN);
    if (*keylen == 0) return nc_error(NUMACOLL_ERR_ARG, "%s: the key is empty", who);
    return NUMACOLL_OK;
}

/* NUMACOLL_ERR_ARG for a NULL db, NUMACOLL_ERR_STATE for a reader's. */
static int check_server(const char *who, const numacoll_kvdb_t *db)
{
    if (!db) return nc_error(NUMACOLL_ERR_ARG, "%s: db is NULL", who);
    if (!db->server)
        return nc_error(NUMACOLL_ERR_STATE,
                        "%s: db is a reader's; only the server (the process that created the "
                        "store) may write",
                        who);
    return NUMACOLL_OK;
}

static int stage(numacoll_kvdb_t *db, int del, const char *ns, size_t nslen, uint32_t rank,
                 const char *key, size_t keylen, const void *val, size_t vallen)
{
    if (db->nstaged == db->capstaged) {
        size_t nc = db->capstaged ? 2 * db->capstaged : 64;
        kv_op_t *n = realloc(db->staged, nc * sizeof *n);
        if (n) db->staged = n;
        kv_undo_t *u = n ? realloc(db->undo, nc * sizeof *u) : NULL;
        if (!u) return nc_error(NUMACOLL_ERR_NOMEM, "kvdb: out of memory staging a put");
        db->undo = u;
        db->capstaged = nc;
    }
    char *buf = malloc(nslen + keylen + vallen + 1);
    if (!buf) return nc_error(NUMACOLL_ERR_NOMEM, "kvdb: out of memory staging a put");
    memcpy(buf, ns, nslen);
    memcpy(buf + nslen, key, keylen);
    if (vallen) memcpy(buf + nslen + keylen, val, vallen);
    kv_op_t *op = &db->staged[db->nstaged++];
    *op = (kv_op_t){.del = del,
                    .rank = rank,
                    .nslen = (uint16_t)nslen,
                    .keylen = (uint16_t)keylen,
                    .vallen = (uint32_t)vallen,
                    .hash = kv_hash(ns, nslen, rank, key, keylen),
                    .buf = buf};
    return NUMACOLL_OK;
}

int numacoll_kvdb_put(numacoll_kvdb_t *db, const char *nspace, uint32_t rank, const char *key,
                      const void *value, size_t len)
{
    int rc = check_server("numacoll_kvdb_put", db);
    if (rc) return rc;
    size_t nslen = 0, keylen = 0; /* set by check_key when it succeeds */
    rc = check_key("numacoll_kvdb_put", nspace, key, &nslen, &keylen);
    if (rc) return rc;
    if (len > db->max_value)
        return nc_error(NUMACOLL_ERR_TOOBIG,
                        "numacoll_kvdb_put: value of %zu bytes for key '%s' exceeds "
                        "NUMACOLL_KVDB_MAX_VALUE=%zu",
                        len, key, db->max_value);
    if (len && !value)
        return nc_error(NUMACOLL_ERR_ARG, "numacoll_kvdb_put: value is NULL (len is %zu)", len);
    return stage(db, 0, nspace, nslen, rank, key, keylen, value, len);
}

int numacoll_kvdb_delete(numacoll_kvdb_t *db, const char *nspace, uint32_t rank, const char *key)
{
    int rc = check_server("numacoll_kvdb_delete", db);
    if (rc) return rc;
    size_t nslen = 0, keylen = 0; /* set by check_key when it succeeds */
    rc = check_key("numacoll_kvdb_delete", nspace, key, &nslen, &keylen);
    if (rc) return rc;
    uint64_t h = kv_hash(nspace, nslen, rank, key, keylen);
    int exists = -1; /* from the staged batch: the last op on this key decides */
    for (size_t i = db->nstaged; i-- > 0 && exists < 0;) {
        kv_op_t *op = &db->staged[i];
        if (op->hash == h && op->rank == rank && op->nslen == nslen && op->keylen == keylen &&
            memcmp(op->buf, nspace, nslen) == 0 && memcmp(op->buf + nslen, key, keylen) == 0)
            exists = !op->del;
    }
    if (exists < 0) {
        kv_entry_t eh;
        kv_bad_t bad = {0};
        uint64_t b;
        int64_t off = kv_find(&db->t, db->t.c.heap_used, h, nspace, nslen, rank, key, keylen,
                              &eh, &b, &bad);
        if (off == FIND_CORRUPT)
            return nc_error_wrap(kv_corrupt(db->t.gen, &bad), "numacoll_kvdb_delete");
        exists = off > 0;
    }
    if (!exists)
        return nc_error(NUMACOLL_ERR_NOT_FOUND,
                        "numacoll_kvdb_delete: key '%s' of rank %u in namespace '%s' not found",
                        key, rank, nspace);
    return stage(db, 1, nspace, nslen, rank, key, keylen, NULL, 0);
}

void numacoll_kvdb_discard(numacoll_kvdb_t *db)
{
    if (!db) {
        nc_error(NUMACOLL_ERR_ARG, "numacoll_kvdb_discard: db is NULL");
        return;
    }
    for (size_t i = 0; i < db->nstaged; i++)
        free(db->staged[i].buf);
    db->nstaged = 0;
}

/* ---- commit ------------------------------------------------------------------------------ */

int numacoll_kvdb_commit(numacoll_kvdb_t *db)
{
    int rc = check_server("numacoll_kvdb_commit", db);
    if (rc) return rc;
    if (db->nstaged == 0) return NUMACOLL_OK;
    const kv_tab_t *t = &db->t; /* the server's own numbers, never the shared copies */
    uint64_t add = 0, nputs = 0;
    for (size_t i = 0; i < db->nstaged; i++)
        if (!db->staged[i].del) {
            add += kv_entry_bytes(db->staged[i].nslen, db->staged[i].keylen,
                                  db->staged[i].vallen);
            nputs++;
        }
    uint64_t nb = t->g.nb, live = t->c.live;
    int fits = add <= t->g.size - t->c.heap_used && (t->c.used + nputs) * 4 <= nb * 3;

    if (fits) {
        uint64_t end;
        kv_append_batch(db, &db->t, &end); /* beyond the used heap: no reader looks there */
        rc = db->ops->wr_lock(&db->lk);
        if (rc) return nc_error_wrap(rc, "numacoll_kvdb_commit");
        rc = kv_apply_batch(db, &db->t, end, db->undo); /* all or nothing */
        db->ops->wr_unlock(&db->lk);
        if (rc) return nc_error_wrap(rc, "numacoll_kvdb_commit (nothing was applied)");
        numacoll_kvdb_discard(db);
        return NUMACOLL_OK;
    }

    /* New generation: compacted, grown if needed (and allowed). */
    uint64_t heap_cur = t->g.size - t->g.hoff;
    uint64_t live_bytes = t->c.heap_used - t->g.hoff - t->c.garbage;
    uint64_t need_bytes = live_bytes + add, need_entries = live + nputs;
    uint64_t nb2 = nb, heap2 = heap_cur;
    if (db->grow) {
        while (need_entries * 2 > nb2)
            nb2 *= 2; /* at most half full after rebuild */
        while (need_bytes * 3 > heap2 * 2)
            heap2 *= 2; /* at most 2/3 of the heap used */
    }
    size_t boff, hoff;
    size_t size2 = kv_data_size_for(nb2, heap2, &boff, &hoff);
    if (need_entries * 4 > nb2 * 3 || need_bytes > heap2 || size2 > db->max_size) {
        if (!db->grow)
            return nc_error(NUMACOLL_ERR_FULL,
                            "numacoll_kvdb_commit: the table is full (%llu live keys + %llu "
                            "new in %llu buckets, %llu + %llu bytes in a %llu-byte heap) and "
                            "growth is disabled (NUMACOLL_KVDB_GROW=0); nothing was applied",
                            (unsigned long long)live, (unsigned long long)nputs,
                            (unsigned long long)nb, (unsigned long long)live_bytes,
                            (unsigned long long)add, (unsigned long long)heap_cur);
        return nc_error(NUMACOLL_ERR_FULL,
                        "numacoll_kvdb_commit: the table would have to grow to %zu bytes, "
                        "above NUMACOLL_KVDB_MAX_SIZE=%zu; nothing was applied",
                        size2, db->max_size);
    }
    if (t->gen + 1 > 0xffffffffull)
        return nc_error(NUMACOLL_ERR_FULL, "kvdb: generation counter exhausted");
    int nfd;
    kv_tab_t nt;
    rc = kv_data_create(nb2, heap2, t->gen + 1, &nfd, &nt);
    if (rc) return nc_error_wrap(rc, "numacoll_kvdb_commit (growing the table)");
    uint64_t end;
    rc = kv_rebuild(t, &nt);
    if (!rc) {
        kv_append_batch(db, &nt, &end);
        rc = kv_apply_batch(db, &nt, end, NULL); /* unpublished: no undo needed */
    }
    if (!rc) rc = db->ops->wr_lock(&db->lk);
    if (rc) {
        munmap(nt.base, nt.g.size);
        close(nfd);
        return nc_error_wrap(rc, "numacoll_kvdb_commit (nothing was applied)");
    }
    /* release: the new generation is complete before a reader can see its number */
    atomic_store_explicit(db->cur, (nt.gen << 32) | (uint32_t)nfd, memory_order_release);
    /* close the old fd inside the write section: readers of lock-based schemes only open
     * the fd published in the current word, which stays open until the next publication */
    close(db->data_fd);
    db->ops->wr_unlock(&db->lk);
    munmap(db->t.base, db->t.g.size);
    db->t = nt;
    db->data_fd = nfd;
    numacoll_kvdb_discard(db);
    nc_log(1, -1, 0, "kvdb: generation %llu: %llu buckets, %llu heap bytes",
           (unsigned long long)nt.gen, (unsigned long long)nb2, (unsigned long long)heap2);
    return NUMACOLL_OK;
}

/* ---- get ------------------------------------------------------------------------------- */

/* Copy the value of the entry found at @p off (header @p eh, lengths checked by kv_find)
 * into @p buf when it fits @p buflen; its length either way (get reports a value too large
 * for buf by its length). */
static inline uint32_t kv_copy_value(const numacoll_kvdb_t *db, int64_t off, const kv_entry_t *eh,
                                     size_t nslen, size_t keylen, void *buf, size_t buflen)
{
    uint32_t vallen = eh->vallen;
    if (vallen <= buflen && vallen)
        memcpy(buf, db->t.base + off + sizeof *eh + nslen + keylen, vallen);
    return vallen;
}

/* The body of get; @p prof is a compile-time constant in each instantiation, so the plain
 * get contains no stamp code at all. */
static inline __attribute__((always_inline)) int get_impl(numacoll_kvdb_t *db, const char *ns,
                                                          uint32_t rank, const char *key, void *buf,
                                                          size_t buflen, size_t *len, uint64_t *st,
                                                          const int prof)
{
    if (prof) st[0] = nc_kv_stamp_start();
    size_t nslen = 0, keylen = 0; /* set by check_key when it succeeds */
    if (NC_UNLIKELY(!db)) return nc_error(NUMACOLL_ERR_ARG, "numacoll_kvdb_get: db is NULL");
    int rc = check_key("numacoll_kvdb_get", ns, key, &nslen, &keylen);
    if (NC_UNLIKELY(rc)) return rc;
    if (NC_UNLIKELY(buflen && !buf))
        return nc_error(NUMACOLL_ERR_ARG, "numacoll_kvdb_get: buf is NULL (buflen is %zu)",
                        buflen);
    if (NC_UNLIKELY(!len)) return nc_error(NUMACOLL_ERR_ARG, "numacoll_kvdb_get: len is NULL");
    uint64_t h = kv_hash(ns, nslen, rank, key, keylen);
    kv_entry_t eh;
    kv_bad_t bad = {0};
    uint64_t bidx;
    int64_t off;
    uint32_t vallen = 0;
    if (db->server) { /* the single writer reads its own data without locking */
        if (prof) st[1] = st[2] = nc_kv_stamp_end();
        off = kv_find(&db->t, db->t.c.heap_used, h, ns, nslen, rank, key, keylen, &eh, &bidx,
                      &bad);
        if (prof) st[3] = nc_kv_stamp_end();
        if (off > 0) vallen = kv_copy_value(db, off, &eh, nslen, keylen, buf, buflen);
        if (prof) st[4] = st[5] = nc_kv_stamp_end();
    } else {
        while (1) {
            uint64_t tok;
            if (prof) st[1] = nc_kv_stamp_end();
            rc = db->ops->rd_lock(&db->lk, &tok);
            if (NC_UNLIKELY(rc)) return rc;
            if (prof) st[2] = nc_kv_stamp_end();
            rc = reader_sync(db);
            off = 0;
            if (NC_LIKELY(!rc))
                off = kv_find(&db->t, db->t.g.size, h, ns, nslen, rank, key, keylen, &eh, &bidx,
                              &bad);
            if (prof) st[3] = nc_kv_stamp_end();
            if (off > 0) vallen = kv_copy_value(db, off, &eh, nslen, keylen, buf, buflen);
            if (prof) st[4] = nc_kv_stamp_end();
            int v = db->ops->rd_unlock(&db->lk, tok);
            if (prof) st[5] = nc_kv_stamp_end();
            if (NC_UNLIKELY(v == NC_KVLOCK_RETRY)) {
                db->retries++;
                continue;
            }
            if (NC_UNLIKELY(rc)) return rc;
            break;
        }
    }
    if (NC_UNLIKELY(off == FIND_CORRUPT))
        return nc_error_wrap(kv_corrupt(db->t.gen, &bad), "numacoll_kvdb_get of key '%s'", key);
    if (NC_UNLIKELY(off == 0)) {
        if (prof) st[6] = nc_kv_stamp_end();
        return nc_error(NUMACOLL_ERR_NOT_FOUND,
                        "numacoll_kvdb_get: key '%s' of rank %u in namespace '%s' not found", key,
                        rank, ns);
    }
    *len = vallen;
    if (NC_UNLIKELY(vallen > buflen))
        return nc_error(NUMACOLL_ERR_TOOBIG,
                        "numacoll_kvdb_get: the value of key '%s' has %u bytes, the buffer %zu",
                        key, vallen, buflen);
    if (prof) st[6] = nc_kv_stamp_end();
    return NUMACOLL_OK;
}

int numacoll_kvdb_get(numacoll_kvdb_t *db, const char *nspace, uint32_t rank, const char *key,
                      void *buf, size_t buflen, size_t *len)
{
    return get_impl(db, nspace, rank, key, buf, buflen, len, NULL, 0);
}

int nc_kvdb_get_profiled(numacoll_kvdb_t *db, const char *nspace, uint32_t rank, const char *key,
                         void *buf, size_t buflen, size_t *len, uint64_t stamps[NC_KV_PROF_POINTS])
{
    return get_impl(db, nspace, rank, key, buf, buflen, len, stamps, 1);
}

/* ---- iterate ----------------------------------------------------------------------------- */

/* Copy every (key, value) of (ns, rank) into db->iterbuf as records
 * [uint32 keylen][uint32 vallen][key][NUL][value]; offsets and lengths are checked against
 * [hoff, hend) as in kv_find, the walk visits each bucket once. Returns the count,
 * FIND_CORRUPT (*bad says why) or NUMACOLL_ERR_NOMEM. */
static int64_t collect(numacoll_kvdb_t *db, uint64_t hend, const char *ns, size_t nslen,
                       uint32_t rank, size_t *bytes, kv_bad_t *bad)
{
    const kv_tab_t *t = &db->t;
    const kv_bucket_t *b = kv_buckets(t);
    size_t o = 0;
    int64_t n = 0;
    for (uint64_t i = 0; i < t->g.nb; i++) {
        uint64_t off = atomic_load_explicit(&b[i].off, memory_order_relaxed);
        if (off <= OFF_TOMB) continue;
        if (off < t->g.hoff || (off & 7) || off > hend - sizeof(kv_entry_t)) {
            *bad = (kv_bad_t){"points outside the heap, at offset", i, off};
            return FIND_CORRUPT;
        }
        kv_entry_t e;
        memcpy(&e, t->base + off, sizeof e);
        if (e.rank != rank || e.nslen != nslen) continue;
        if ((uint64_t)e.nslen + e.keylen + e.vallen > hend - off - sizeof e) {
            *bad = (kv_bad_t){"points to an entry running past the segment, value length", i,
                              e.vallen};
            return FIND_CORRUPT;
        }
        const char *p = t->base + off + sizeof e;
        if (memcmp(p, ns, nslen) != 0) continue;
        size_t rec = 8 + (size_t)e.keylen + 1 + e.vallen;
        if (o + rec > db->itercap) {
            size_t nc = db->itercap ? db->itercap : 4096;
            while (nc < o + rec)
                nc *= 2;
            char *nbuf = realloc(db->iterbuf, nc);
            if (!nbuf) return NUMACOLL_ERR_NOMEM;
            db->iterbuf = nbuf;
            db->itercap = nc;
        }
        uint32_t kl = e.keylen, vl = e.vallen;
        memcpy(db->iterbuf + o, &kl, 4);
        memcpy(db->iterbuf + o + 4, &vl, 4);
        memcpy(db->iterbuf + o + 8, p + nslen, kl);
        db->iterbuf[o + 8 + kl] = 0;
        if (vl) memcpy(db->iterbuf + o + 9 + kl, p + nslen + kl, vl);
        o += rec;
        n++;
    }
    *bytes = o;
    return n;
}

int numacoll_kvdb_iterate(numacoll_kvdb_t *db, const char *nspace, uint32_t rank,
                          numacoll_kvdb_iter_fn fn, void *ctx, size_t *count)
{
    if (!db) return nc_error(NUMACOLL_ERR_ARG, "numacoll_kvdb_iterate: db is NULL");
    if (!nspace) return nc_error(NUMACOLL_ERR_ARG, "numacoll_kvdb_iterate: nspace is NULL");
    size_t nslen = strnlen(nspace, NUMACOLL_KVDB_MAX_NSLEN + 1);
    if (nslen > NUMACOLL_KVDB_MAX_NSLEN)
        return nc_error(NUMACOLL_ERR_TOOBIG, "numacoll_kvdb_iterate: namespace longer than %d",
                        NUMACOLL_KVDB_MAX_NSLEN);
    int64_t n;
    size_t bytes = 0;
    kv_bad_t bad = {0};
    if (db->server) {
        n = collect(db, db->t.c.heap_used, nspace, nslen, rank, &bytes, &bad);
    } else {
        while (1) {
            uint64_t tok;
            int rc = db->ops->rd_lock(&db->lk, &tok);
            if (rc) return rc;
            rc = reader_sync(db);
            n = rc ? rc : collect(db, db->t.g.size, nspace, nslen, rank, &bytes, &bad);
            if (db->ops->rd_unlock(&db->lk, tok) == NC_KVLOCK_RETRY) {
                db->retries++;
                continue;
            }
            if (rc) return rc;
            break;
        }
    }
    if (n == FIND_CORRUPT)
        return nc_error_wrap(kv_corrupt(db->t.gen, &bad), "numacoll_kvdb_iterate");
    if (n == NUMACOLL_ERR_NOMEM)
        return nc_error(NUMACOLL_ERR_NOMEM, "numacoll_kvdb_iterate: out of memory");
    if (count) *count = (size_t)n;
    for (size_t o = 0; fn && o < bytes;) {
        uint32_t kl, vl;
        memcpy(&kl, db->iterbuf + o, 4);
        memcpy(&vl, db->iterbuf + o + 4, 4);
        if (fn(db->iterbuf + o + 8, db->iterbuf + o + 9 + kl, vl, ctx)) break;
        o += 8 + (size_t)kl + 1 + vl;
    }
    return NUMACOLL_OK;
}

/* ---- stats and internal access --------------------------------------------------------- */

int numacoll_kvdb_stats(numacoll_kvdb_t *db, numacoll_kvdb_stats_t *st)
{
    if (!db) return nc_error(NUMACOLL_ERR_ARG, "numacoll_kvdb_stats: db is NULL");
    if (!st) return nc_error(NUMACOLL_ERR_ARG, "numacoll_kvdb_stats: st is NULL");
    const kv_tab_t *t = &db->t;
    uint64_t heap = t->g.size - t->g.hoff, live, used_end;
    if (db->server) {
        live = t->c.live;
        used_end = t->c.heap_used;
    } else { /* the server's shared copies: numbers only, clamped to the geometry */
        const kv_data_t *d = kv_dhdr(t);
        live = atomic_load_explicit(&d->live, memory_order_relaxed);
        used_end = atomic_load_explicit(&d->heap_used, memory_order_relaxed);
        if (used_end < t->g.hoff || used_end > t->g.size) used_end = t->g.hoff;
    }
    st->generation = t->gen;
    st->entries = live;
    st->buckets = t->g.nb;
    st->heap_bytes = heap;
    st->heap_used = used_end - t->g.hoff;
    st->retries = db->retries;
    st->recovered = db->lk.recovered;
    st->slot = db->lk.slot;
    return NUMACOLL_OK;
}

int nc_kvdb_rdlock(numacoll_kvdb_t *db, uint64_t *token)
{
    return db->ops->rd_lock(&db->lk, token);
}
int nc_kvdb_rdunlock(numacoll_kvdb_t *db, uint64_t token)
{
    return db->ops->rd_unlock(&db->lk, token);
}
int nc_kvdb_wrlock(numacoll_kvdb_t *db)
{
    return db->ops->wr_lock(&db->lk);
}
int nc_kvdb_wrunlock(numacoll_kvdb_t *db)
{
    return db->ops->wr_unlock(&db->lk);
}
_Atomic uint64_t *nc_kvdb_scratch(numacoll_kvdb_t *db, int i)
{
    return (_Atomic uint64_t *)(void *)(db->scratch + (size_t)(i & 1) * db->lk.line);
}
char *nc_kvdb_lock_area(numacoll_kvdb_t *db, size_t *bytes)
{
    if (bytes) *bytes = db->ops->area_bytes(db->lk.nslots, db->lk.line);
    return db->lk.area;
}
const nc_kvlock_ops_t *nc_kvdb_lock_ops(const numacoll_kvdb_t *db)
{
    return db->ops;
}
int nc_kvdb_slot(const numacoll_kvdb_t *db)
{
    return db->lk.slot;
}
uint32_t nc_kvdb_slot_attaches(numacoll_kvdb_t *db, int i)
{
    return atomic_load_explicit(&nc_kvlock_slot(&db->lk, i)->attaches, memory_order_relaxed);
}
int nc_kvdb_slot_pid(numacoll_kvdb_t *db, int i)
{
    return atomic_load_explicit(&nc_kvlock_slot(&db->lk, i)->pid, memory_order_relaxed);
}
