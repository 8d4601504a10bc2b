/*
 * The key-value store: segments, the open-addressing hash table, put/commit/get/iterate.
 *
 * Segments. Both kinds are memfd files (memfd_create), never names in /dev/shm: a crash
 * of any process cannot leave a file behind, because the memory lives exactly as long as
 * some process maps it or holds its fd. Readers reach the server's memfds through
 * /proc/<server pid>/fd/<n> (the handle); opening such a link needs the same rights as
 * reading the server's fds (same user), and the files are chmod 0600 as well. We chose
 * this over shm_open + immediate unlink because a reader may attach at any time (a named
 * file would have to stay until the last reader came, i.e. forever) and over passing fds
 * on a Unix socket because a string handle fits PMIx-style environment hand-over. Pages
 * are reserved with posix_fallocate: a full memory filesystem is NUMACOLL_ERR_NOMEM, not
 * a SIGBUS at first touch.
 *
 *   control segment (one per store, fixed): header (line 0), the current data generation
 *     word (line 1), the reader slots (one line each), two scratch lines (bench/tests),
 *     the lock scheme's area.
 *   data segment (one per generation): header, buckets (2 x 8 bytes each: hash and entry
 *     offset; offset 0 = empty, 1 = tombstone), then the entry heap (append-only).
 *
 * Entries are immutable once a bucket points to them: a replace appends a new entry and
 * swings the bucket, a delete writes a tombstone; dead entries are garbage until the next
 * generation. The server appends a batch's entries beyond the heap's used end outside the
 * write section (readers never look there) and only swings bucket words inside it, so the
 * write section is short. When a batch does not fit (heap, or buckets above 3/4 load),
 * the server builds a new generation (grown, or just compacted) entirely outside the
 * lock, then publishes (generation, fd) in the control segment inside a write section;
 * readers compare their generation with that word inside every read section and re-map.
 *
 * Every offset and length a reader takes from the shared segment is checked against its
 * mapping before use (an optimistic reader may see garbage; a check failing in a
 * validated snapshot is reported as a corrupted store).
 */
#include "kvdb_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define CTL_MAGIC 0x3163766b6c6f636eull  /* "ncolkvc1" */
#define DATA_MAGIC 0x3164766b6c6f636eull /* "ncolkvd1" */
#define KV_VERSION 1u
#define OFF_EMPTY 0u
#define OFF_TOMB 1u

typedef struct kv_ctl {
    uint64_t magic;
    uint32_t version;
    uint32_t nslots;
    int32_t server_pid;
    uint32_t line;
    uint64_t size;
    uint64_t cur_off, slots_off, scratch_off, lock_off;
    char lock_name[32];
} kv_ctl_t;

typedef struct kv_data {
    uint64_t magic;
    uint64_t gen;
    uint64_t size;     /* immutable after creation (like nbuckets and the offsets) */
    uint64_t nbuckets; /* power of two */
    uint64_t buckets_off;
    uint64_t heap_off;
    /* written by the server (inside write sections), read for statistics */
    _Atomic uint64_t heap_used; /* absolute end offset of the used heap */
    _Atomic uint64_t live;      /* live entries */
    _Atomic uint64_t used;      /* live + tombstone buckets */
    _Atomic uint64_t garbage;   /* bytes of dead entries */
} kv_data_t;

typedef struct kv_bucket {
    _Atomic uint64_t hash;
    _Atomic uint64_t off;
} kv_bucket_t;

typedef struct kv_entry {
    uint32_t size; /* whole entry, multiple of 8 */
    uint32_t rank;
    uint16_t nslen;
    uint16_t keylen;
    uint32_t vallen;
    uint64_t hash;
    /* namespace bytes, key bytes, value bytes */
} kv_entry_t;

typedef struct kv_op {
    int del;
    uint32_t rank;
    uint16_t nslen, keylen;
    uint32_t vallen;
    uint64_t hash;
    uint64_t off; /* where the entry goes (commit) */
    char *buf;    /* ns, key, value */
} kv_op_t;

struct numacoll_kvdb {
    int server;
    const nc_kvlock_ops_t *ops;
    nc_kvlock_t lk;
    char *ctl;
    size_t ctl_size;
    int ctl_fd; /* server */
    pid_t server_pid;
    char handle[64];
    /* current data generation mapped by this process */
    char *data;
    size_t data_size;
    uint64_t gen;
    int data_fd; /* server */
    /* server: staged batch and limits */
    kv_op_t *staged;
    size_t nstaged, capstaged;
    size_t max_value, max_size;
    int grow;
    uint64_t retries;
    char *iterbuf;
    size_t itercap;
};

int nc_kv_prof_clock = NC_KV_CLOCK_CPUID;

static kv_ctl_t *ctl_hdr(const numacoll_kvdb_t *db)
{
    return (kv_ctl_t *)db->ctl;
}
static _Atomic uint64_t *ctl_cur(const numacoll_kvdb_t *db)
{
    return (_Atomic uint64_t *)(db->ctl + ctl_hdr(db)->cur_off);
}
static kv_data_t *dhdr(const char *data)
{
    return (kv_data_t *)(void *)data;
}
static kv_bucket_t *buckets(const char *data)
{
    return (kv_bucket_t *)(void *)(data + dhdr(data)->buckets_off);
}

/* ---- hashing ------------------------------------------------------------------------- */

/* 8 bytes at a time: multiply and fold (a 50-byte key costs ~7 rounds, not 50). */
static inline uint64_t mix8(uint64_t h, uint64_t x)
{
    h = (h ^ x) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 32);
}

static inline uint64_t hash_bytes(uint64_t h, const char *p, size_t n)
{
    uint64_t x;
    for (; n >= 8; n -= 8, p += 8) {
        memcpy(&x, p, 8);
        h = mix8(h, x);
    }
    x = 0;
    memcpy(&x, p, n);
    return mix8(h, x ^ ((uint64_t)n << 56));
}

static uint64_t kv_hash(const char *ns, size_t nslen, uint32_t rank, const char *key, size_t keylen)
{
    uint64_t h = hash_bytes(0x243f6a8885a308d3ull, ns, nslen);
    h = mix8(h, rank | ((uint64_t)0xa5 << 40));
    h = hash_bytes(h, key, keylen);
    return h ^ (h >> 29);
}

static size_t entry_bytes(size_t nslen, size_t keylen, size_t vallen)
{
    return nc_round_up(sizeof(kv_entry_t) + nslen + keylen + vallen, 8);
}

/* ---- segments -------------------------------------------------------------------------- */

static int reserve(int fd, size_t len, const char *what)
{
    int err;
    do {
        err = posix_fallocate(fd, 0, (off_t)len);
    } while (err == EINTR);
    if (!err) return NUMACOLL_OK;
    if (err == ENOSPC || err == ENOMEM)
        return nc_error(NUMACOLL_ERR_NOMEM,
                        "kvdb: cannot reserve %zu bytes of shared memory for the %s: %s", len, what,
                        strerror(err));
    return nc_error(NUMACOLL_ERR_SYS, "kvdb: posix_fallocate of %zu bytes for the %s: %s", len,
                    what, strerror(err));
}

/* Create a memfd of @p size bytes (mode 0600, pages reserved) mapped read-write. */
static int memfd_segment(size_t size, const char *what, int *fdp, char **basep)
{
    int fd = memfd_create("numacoll-kvdb", MFD_CLOEXEC);
    if (fd < 0)
        return nc_error(NUMACOLL_ERR_SYS, "kvdb: memfd_create for the %s failed: %s", what,
                        strerror(errno));
    int rc = NUMACOLL_OK;
    if (fchmod(fd, 0600) != 0)
        rc = nc_error(NUMACOLL_ERR_SYS, "kvdb: fchmod of the %s failed: %s", what, strerror(errno));
    else if (ftruncate(fd, (off_t)size) != 0)
        rc = nc_error(NUMACOLL_ERR_NOMEM, "kvdb: cannot size the %s to %zu bytes: %s", what, size,
                      strerror(errno));
    else
        rc = reserve(fd, size, what);
    if (rc) {
        close(fd);
        return rc;
    }
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        rc = nc_error(NUMACOLL_ERR_NOMEM, "kvdb: mmap of %zu bytes for the %s failed: %s", size,
                      what, strerror(errno));
        close(fd);
        return rc;
    }
    *fdp = fd;
    *basep = p;
    return NUMACOLL_OK;
}

/* Open one of the server's fds through /proc. */
static int open_proc_fd(pid_t pid, int fd, int flags, const char *what, int *out, size_t *size)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)pid, fd);
    int f = open(path, flags | O_CLOEXEC | O_NONBLOCK);
    if (f < 0)
        return nc_error(errno == ENOENT || errno == ESRCH ? NUMACOLL_ERR_NOT_FOUND
                                                          : NUMACOLL_ERR_SYS,
                        "kvdb: cannot open the %s at %s: %s (is the server alive, and are we "
                        "the same user?)",
                        what, path, strerror(errno));
    struct stat st;
    if (fstat(f, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(f);
        return nc_error(NUMACOLL_ERR_ARG, "kvdb: %s is not a key-value store segment", path);
    }
    *out = f;
    *size = (size_t)st.st_size;
    return NUMACOLL_OK;
}

/* Data segment geometry for @p nb buckets and @p heap bytes. */
static size_t data_size_for(size_t nb, size_t heap, size_t *boff, size_t *hoff)
{
    *boff = nc_round_up(sizeof(kv_data_t), 64);
    *hoff = nc_round_up(*boff + nb * sizeof(kv_bucket_t), 64);
    return nc_round_up(*hoff + heap, nc_page_size());
}

static int data_create(size_t nb, size_t heap, uint64_t gen, int *fd, char **base, size_t *size)
{
    size_t boff, hoff;
    size_t sz = data_size_for(nb, heap, &boff, &hoff);
    int rc = memfd_segment(sz, "key-value data segment", fd, base);
    if (rc) return rc;
    kv_data_t *d = dhdr(*base);
    d->magic = DATA_MAGIC;
    d->gen = gen;
    d->size = sz;
    d->nbuckets = nb;
    d->buckets_off = boff;
    d->heap_off = hoff;
    atomic_store_explicit(&d->heap_used, hoff, memory_order_relaxed);
    *size = sz;
    return NUMACOLL_OK;
}

/* Check the immutable geometry of a mapped data segment. */
static int data_check(const char *base, size_t size, uint64_t gen)
{
    const kv_data_t *d = dhdr(base);
    if (size < sizeof *d || d->magic != DATA_MAGIC || d->gen != gen || d->size != size) return -1;
    uint64_t nb = d->nbuckets;
    if (nb == 0 || (nb & (nb - 1)) || d->buckets_off < sizeof *d || d->buckets_off > size ||
        nb > (size - d->buckets_off) / sizeof(kv_bucket_t) ||
        d->heap_off < d->buckets_off + nb * sizeof(kv_bucket_t) || d->heap_off > size)
        return -1;
    return 0;
}

/* Reader: map generation (gen, fd) published by the server. */
static int reader_remap(numacoll_kvdb_t *db, uint64_t cur)
{
    uint64_t gen = cur >> 32;
    int sfd = (int)(cur & 0xffffffffu), fd;
    size_t size;
    int rc = open_proc_fd(db->server_pid, sfd, O_RDONLY, "key-value data segment", &fd, &size);
    if (rc) return rc;
    void *p = size ? mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    close(fd);
    if (p == MAP_FAILED)
        return nc_error(NUMACOLL_ERR_SYS, "kvdb: cannot map the data segment (generation %llu)",
                        (unsigned long long)gen);
    if (data_check(p, size, gen)) {
        munmap(p, size);
        return nc_error(NUMACOLL_ERR_STATE,
                        "kvdb: the server's fd %d is not data generation %llu (stale)", sfd,
                        (unsigned long long)gen);
    }
    if (db->data) munmap(db->data, db->data_size);
    db->data = p;
    db->data_size = size;
    db->gen = gen;
    return NUMACOLL_OK;
}

/* Inside a read section: make sure we map the current generation. */
static inline int reader_sync(numacoll_kvdb_t *db)
{
    /* acquire: written by the server inside a write section, after the new generation was
     * completely built; seeing it we may read that generation */
    uint64_t cur = atomic_load_explicit(ctl_cur(db), memory_order_acquire);
    if (NC_LIKELY((cur >> 32) == db->gen)) return NUMACOLL_OK;
    return reader_remap(db, cur);
}

/* ---- lookup (bounds-checked: may run on an optimistic, possibly torn snapshot) ---------- */

#define FIND_CORRUPT (-100)

/* Returns the entry offset, 0 if not found, FIND_CORRUPT on an impossible layout. Also
 * returns the bucket index in *bidx (or the insertion point when not found). */
static int64_t kv_find(const char *data, size_t dsize, uint64_t h, const char *ns, size_t nslen,
                       uint32_t rank, const char *key, size_t keylen, kv_entry_t *ehdr)
{
    const kv_data_t *d = dhdr(data);
    uint64_t nb = d->nbuckets, mask = nb - 1, hoff = d->heap_off;
    const kv_bucket_t *b = buckets(data);
    uint64_t p = h & mask;
    for (uint64_t i = 0; i < nb; i++, p = (p + 1) & mask) {
        uint64_t off = atomic_load_explicit(&b[p].off, memory_order_relaxed);
        if (off == OFF_EMPTY) return 0;
        if (off == OFF_TOMB) continue;
        if (atomic_load_explicit(&b[p].hash, memory_order_relaxed) != h) continue;
        if (off < hoff || (off & 7) || off > dsize - sizeof(kv_entry_t)) return FIND_CORRUPT;
        memcpy(ehdr, data + off, sizeof *ehdr);
        if (ehdr->rank != rank || ehdr->nslen != nslen || ehdr->keylen != keylen) continue;
        if ((uint64_t)nslen + keylen + ehdr->vallen > dsize - off - sizeof *ehdr)
            return FIND_CORRUPT;
        const char *e = data + off + sizeof *ehdr;
        if (memcmp(e, ns, nslen) != 0 || memcmp(e + nslen, key, keylen) != 0) continue;
        return (int64_t)off;
    }
    return 0;
}

/* ---- server-side table updates ------------------------------------------------------ */

/* Apply one put whose entry already sits at @p off (inside a write section, or on an
 * unpublished generation). */
static void table_put(char *data, uint64_t h, uint64_t off)
{
    kv_data_t *d = dhdr(data);
    kv_bucket_t *b = buckets(data);
    const kv_entry_t *ne = (const kv_entry_t *)(void *)(data + off);
    const char *nk = (const char *)(ne + 1);
    uint64_t mask = d->nbuckets - 1, p = h & mask;
    int64_t tomb = -1;
    for (uint64_t i = 0; i < d->nbuckets; i++, p = (p + 1) & mask) {
        uint64_t o = atomic_load_explicit(&b[p].off, memory_order_relaxed);
        if (o == OFF_EMPTY) break;
        if (o == OFF_TOMB) {
            if (tomb < 0) tomb = (int64_t)p;
            continue;
        }
        if (atomic_load_explicit(&b[p].hash, memory_order_relaxed) != h) continue;
        const kv_entry_t *e = (const kv_entry_t *)(void *)(data + o);
        if (e->rank != ne->rank || e->nslen != ne->nslen || e->keylen != ne->keylen ||
            memcmp(e + 1, nk, (size_t)e->nslen + e->keylen) != 0)
            continue;
        /* replace: swing the bucket to the new immutable entry */
        atomic_store_explicit(&b[p].off, off, memory_order_relaxed);
        atomic_store_explicit(&d->garbage,
                              atomic_load_explicit(&d->garbage, memory_order_relaxed) + e->size,
                              memory_order_relaxed);
        return;
    }
    if (tomb >= 0) {
        p = (uint64_t)tomb;
    } else {
        atomic_store_explicit(&d->used, atomic_load_explicit(&d->used, memory_order_relaxed) + 1,
                              memory_order_relaxed);
    }
    atomic_store_explicit(&b[p].hash, h, memory_order_relaxed);
    atomic_store_explicit(&b[p].off, off, memory_order_relaxed);
    atomic_store_explicit(&d->live, atomic_load_explicit(&d->live, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

static void table_del(char *data, const kv_op_t *op)
{
    kv_data_t *d = dhdr(data);
    kv_entry_t eh;
    int64_t off = kv_find(data, d->size, op->hash, op->buf, op->nslen, op->rank,
                          op->buf + op->nslen, op->keylen, &eh);
    if (off <= 0) return;
    kv_bucket_t *b = buckets(data);
    uint64_t mask = d->nbuckets - 1, p = op->hash & mask;
    for (uint64_t i = 0; i < d->nbuckets; i++, p = (p + 1) & mask) {
        if (atomic_load_explicit(&b[p].off, memory_order_relaxed) == (uint64_t)off) {
            atomic_store_explicit(&b[p].off, OFF_TOMB, memory_order_relaxed);
            atomic_store_explicit(&d->live,
                                  atomic_load_explicit(&d->live, memory_order_relaxed) - 1,
                                  memory_order_relaxed);
            atomic_store_explicit(&d->garbage,
                                  atomic_load_explicit(&d->garbage, memory_order_relaxed) + eh.size,
                                  memory_order_relaxed);
            return;
        }
    }
}

/* Append an entry at the heap end (outside the published part). Returns its offset. */
static uint64_t heap_append(char *data, uint64_t *end, uint64_t h, uint32_t rank, const char *ns,
                            size_t nslen, const char *key, size_t keylen, const void *val,
                            size_t vallen)
{
    uint64_t off = *end;
    kv_entry_t e = {.size = (uint32_t)entry_bytes(nslen, keylen, vallen),
                    .rank = rank,
                    .nslen = (uint16_t)nslen,
                    .keylen = (uint16_t)keylen,
                    .vallen = (uint32_t)vallen,
                    .hash = h};
    char *p = data + off;
    memcpy(p, &e, sizeof e);
    memcpy(p + sizeof e, ns, nslen);
    memcpy(p + sizeof e + nslen, key, keylen);
    if (vallen) memcpy(p + sizeof e + nslen + keylen, val, vallen);
    *end = off + e.size;
    return off;
}

/* ---- creation, attach, close ---------------------------------------------------------- */

/* Timeout and spin policy of this process's waits (config; few spins when the readers
 * plus the server outnumber our CPUs, since then the process we wait for may need ours). */
static void lock_policy(nc_kvlock_t *l)
{
    l->timeout_ns = (uint64_t)(nc_cfg_double("NUMACOLL_TIMEOUT") * 1e9);
    long spin = nc_cfg_int("NUMACOLL_WAIT_SPIN");
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

int numacoll_kvdb_create(const numacoll_kvdb_params_t *params, numacoll_kvdb_t **out)
{
    if (!out) return nc_error(NUMACOLL_ERR_ARG, "numacoll_kvdb_create: db is NULL");
    *out = NULL;
    int rc = numacoll_config_check();
    if (rc) return rc;
    numacoll_kvdb_params_t p = {0};
    if (params) p = *params;
    const char *lname = p.lock ? p.lock : nc_cfg_str("NUMACOLL_KVDB_LOCK");
    const nc_kvlock_ops_t *ops = nc_kvlock_find(lname);
    if (!ops) {
        char allowed[512];
        snprintf(allowed, sizeof allowed, "%s", nc_kvlock_allowed_names());
        for (char *c = allowed; *c; c++)
            if (*c == '|') *c = ',';
        return nc_error(NUMACOLL_ERR_NOT_FOUND, "kvdb: unknown lock scheme '%s'; allowed: %s",
                        lname, allowed);
    }
    long nslots = p.max_readers ? p.max_readers : nc_cfg_int("NUMACOLL_KVDB_MAX_READERS");
    if (nslots < 1 || nslots > 4096)
        return nc_error(NUMACOLL_ERR_ARG, "kvdb: max_readers=%ld is not valid; allowed: 1..4096",
                        nslots);
    size_t nb = p.buckets ? p.buckets : (size_t)nc_cfg_int("NUMACOLL_KVDB_BUCKETS");
    if (nb < 8 || nb > (1ull << 30))
        return nc_error(NUMACOLL_ERR_ARG, "kvdb: buckets=%zu is not valid; allowed: 8..2^30", nb);
    nb = pow2_at_least(nb);
    size_t heap = p.heap_bytes ? p.heap_bytes : nc_cfg_size("NUMACOLL_KVDB_HEAP");
    if (heap < 1024)
        return nc_error(NUMACOLL_ERR_ARG, "kvdb: heap_bytes=%zu is not valid; allowed: >= 1024",
                        heap);
    int grow;
    if (p.grow == NUMACOLL_KVDB_GROW_CONFIG)
        grow = nc_cfg_bool("NUMACOLL_KVDB_GROW");
    else if (p.grow == NUMACOLL_KVDB_GROW_YES || p.grow == NUMACOLL_KVDB_GROW_NO)
        grow = p.grow == NUMACOLL_KVDB_GROW_YES;
    else
        return nc_error(NUMACOLL_ERR_ARG,
                        "kvdb: grow=%d is not valid; allowed: NUMACOLL_KVDB_GROW_CONFIG (0), "
                        "_YES (1), _NO (2)",
                        p.grow);

    numacoll_kvdb_t *db = calloc(1, sizeof *db);
    if (!db) return nc_error(NUMACOLL_ERR_NOMEM, "kvdb: out of memory");
    db->server = 1;
    db->ops = ops;
    db->ctl_fd = db->data_fd = -1;
    db->server_pid = getpid();
    db->max_value = nc_cfg_size("NUMACOLL_KVDB_MAX_VALUE");
    db->max_size = nc_cfg_size("NUMACOLL_KVDB_MAX_SIZE");
    db->grow = grow;

    size_t line = nc_line_size();
    size_t cur_off = line, slots_off = 2 * line;
    size_t scratch_off = slots_off + (size_t)nslots * line;
    size_t lock_off = scratch_off + 2 * line;
    size_t ctl_size = nc_round_up(lock_off + ops->area_bytes((int)nslots, line), nc_page_size());
    rc = memfd_segment(ctl_size, "key-value control segment", &db->ctl_fd, &db->ctl);
    if (rc) goto fail;
    db->ctl_size = ctl_size;
    kv_ctl_t *c = ctl_hdr(db);
    c->magic = CTL_MAGIC;
    c->version = KV_VERSION;
    c->nslots = (uint32_t)nslots;
    c->server_pid = (int32_t)db->server_pid;
    c->line = (uint32_t)line;
    c->size = ctl_size;
    c->cur_off = cur_off;
    c->slots_off = slots_off;
    c->scratch_off = scratch_off;
    c->lock_off = lock_off;
    snprintf(c->lock_name, sizeof c->lock_name, "%s", ops->name);

    db->lk.area = db->ctl + lock_off;
    db->lk.nslots = (int)nslots;
    db->lk.line = line;
    db->lk.slots = db->ctl + slots_off;
    db->lk.slot = -1;
    db->lk.server_pid = db->server_pid;
    lock_policy(&db->lk);
    rc = ops->init(&db->lk);
    if (rc) goto fail;

    size_t dsz;
    if ((size_t)data_size_for(nb, heap, &(size_t){0}, &(size_t){0}) > db->max_size) {
        rc = nc_error(NUMACOLL_ERR_ARG,
                      "kvdb: the initial table (%zu buckets, %zu heap bytes) exceeds "
                      "NUMACOLL_KVDB_MAX_SIZE=%zu",
                      nb, heap, db->max_size);
        goto fail;
    }
    rc = data_create(nb, heap, 1, &db->data_fd, &db->data, &dsz);
    if (rc) goto fail;
    db->data_size = dsz;
    db->gen = 1;
    /* release: the generation is complete before anybody can see its number (nobody can
     * attach before create returns anyway) */
    atomic_store_explicit(ctl_cur(db), (1ull << 32) | (uint32_t)db->data_fd, memory_order_release);
    snprintf(db->handle, sizeof db->handle, "/proc/%d/fd/%d", (int)db->server_pid, db->ctl_fd);
    *out = db;
    return NUMACOLL_OK;
fail:
    numacoll_kvdb_close(db);
    return rc;
}

const char *numacoll_kvdb_handle(const numacoll_kvdb_t *db)
{
    return db && db->server ? db->handle : NULL;
}

const char *numacoll_kvdb_lock_name(const numacoll_kvdb_t *db)
{
    return db ? db->ops->name : NULL;
}

int numacoll_kvdb_attach(const char *handle, numacoll_kvdb_t **out)
{
    if (!out) return nc_error(NUMACOLL_ERR_ARG, "numacoll_kvdb_attach: db is NULL");
    *out = NULL;
    int pid = 0, sfd = -1, n = 0;
    if (!handle || sscanf(handle, "/proc/%d/fd/%d%n", &pid, &sfd, &n) != 2 || handle[n] != 0 ||
        pid <= 0 || sfd < 0)
        return nc_error(NUMACOLL_ERR_ARG,
                        "kvdb: handle '%s' is not valid; expected '/proc/<pid>/fd/<n>' as "
                        "returned by numacoll_kvdb_handle()",
                        handle ? handle : "(null)");
    int rc = numacoll_config_check();
    if (rc) return rc;
    int fd;
    size_t size;
    rc = open_proc_fd(pid, sfd, O_RDWR, "key-value control segment", &fd, &size);
    if (rc) return rc;
    void *p = size >= sizeof(kv_ctl_t) ? mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                                       : MAP_FAILED;
    close(fd);
    if (p == MAP_FAILED)
        return nc_error(NUMACOLL_ERR_ARG, "kvdb: %s is not a key-value store (cannot map it)",
                        handle);
    kv_ctl_t *c = p;
    const nc_kvlock_ops_t *ops = NULL;
    if (c->magic != CTL_MAGIC || c->version != KV_VERSION || c->size != size ||
        c->server_pid != pid || c->line < 32 || c->line > NC_MAX_LINE ||
        !(ops = nc_kvlock_find(c->lock_name)) ||
        c->lock_off + ops->area_bytes((int)c->nslots, c->line) > size ||
        c->slots_off + (uint64_t)c->nslots * c->line > c->scratch_off) {
        munmap(p, size);
        return nc_error(NUMACOLL_ERR_ARG,
                        "kvdb: %s is not a key-value store of this numacoll version", handle);
    }
    numacoll_kvdb_t *db = calloc(1, sizeof *db);
    if (!db) {
        munmap(p, size);
        return nc_error(NUMACOLL_ERR_NOMEM, "kvdb: out of memory");
    }
    db->ops = ops;
    db->ctl = p;
    db->ctl_size = size;
    db->ctl_fd = db->data_fd = -1;
    db->server_pid = pid;
    db->lk.area = db->ctl + c->lock_off;
    db->lk.nslots = (int)c->nslots;
    db->lk.line = c->line;
    db->lk.slots = db->ctl + c->slots_off;
    db->lk.slot = -1;
    db->lk.server_pid = pid;
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
                if (pass == 1 && ops->slot_reset) ops->slot_reset(&db->lk, i);
                atomic_fetch_add_explicit(&s->attaches, 1, memory_order_relaxed);
                break;
            }
        }
    }
    if (db->lk.slot < 0) {
        int ns = db->lk.nslots;
        munmap(p, size);
        free(db);
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
    /* The server does not destroy the shared mutexes (ops->fini): readers may still be
     * attached and even hold them; the memory goes away with the last mapping. */
    if (db->data) munmap(db->data, db->data_size);
    if (db->ctl) munmap(db->ctl, db->ctl_size);
    if (db->data_fd >= 0) close(db->data_fd);
    if (db->ctl_fd >= 0) close(db->ctl_fd);
    numacoll_kvdb_discard(db);
    free(db->staged);
    free(db->iterbuf);
    free(db);
    return NUMACOLL_OK;
}

/* ---- staging ---------------------------------------------------------------------------- */

static int check_key(const char *who, const char *ns, const char *key, size_t *nslen,
                     size_t *keylen)
{
    if (!ns || !key) return nc_error(NUMACOLL_ERR_ARG, "%s: namespace or key is NULL", who);
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

static int stage(numacoll_kvdb_t *db, int del, const char *ns, size_t nslen, uint32_t rank,
                 const char *key, size_t keylen, const void *val, size_t vallen)
{
    if (db->nstaged == db->capstaged) {
        size_t nc = db->capstaged ? 2 * db->capstaged : 64;
        kv_op_t *n = realloc(db->staged, nc * sizeof *n);
        if (!n) return nc_error(NUMACOLL_ERR_NOMEM, "kvdb: out of memory staging a put");
        db->staged = n;
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
    if (!db || !db->server)
        return nc_error(NUMACOLL_ERR_STATE, "numacoll_kvdb_put: only the server (the process "
                                            "that created the store) may write");
    size_t nslen = 0, keylen = 0; /* set by check_key when it succeeds */
    int rc = check_key("numacoll_kvdb_put", nspace, key, &nslen, &keylen);
    if (rc) return rc;
    if (len > db->max_value)
        return nc_error(NUMACOLL_ERR_TOOBIG,
                        "numacoll_kvdb_put: value of %zu bytes for key '%s' exceeds "
                        "NUMACOLL_KVDB_MAX_VALUE=%zu",
                        len, key, db->max_value);
    if (len && !value) return nc_error(NUMACOLL_ERR_ARG, "numacoll_kvdb_put: value is NULL");
    return stage(db, 0, nspace, nslen, rank, key, keylen, value, len);
}

int numacoll_kvdb_delete(numacoll_kvdb_t *db, const char *nspace, uint32_t rank, const char *key)
{
    if (!db || !db->server)
        return nc_error(NUMACOLL_ERR_STATE, "numacoll_kvdb_delete: only the server may write");
    size_t nslen = 0, keylen = 0; /* set by check_key when it succeeds */
    int rc = check_key("numacoll_kvdb_delete", nspace, key, &nslen, &keylen);
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
        exists = kv_find(db->data, db->data_size, h, nspace, nslen, rank, key, keylen, &eh) > 0;
    }
    if (!exists)
        return nc_error(NUMACOLL_ERR_NOT_FOUND,
                        "numacoll_kvdb_delete: key '%s' of rank %u in namespace '%s' not found",
                        key, rank, nspace);
    return stage(db, 1, nspace, nslen, rank, key, keylen, NULL, 0);
}

void numacoll_kvdb_discard(numacoll_kvdb_t *db)
{
    if (!db) return;
    for (size_t i = 0; i < db->nstaged; i++)
        free(db->staged[i].buf);
    db->nstaged = 0;
}

/* ---- commit ------------------------------------------------------------------------------ */

/* Copy every live entry of @p old into the fresh generation @p nd (unpublished). */
static void rebuild(const char *old, char *nd)
{
    const kv_data_t *od = dhdr(old);
    const kv_bucket_t *ob = buckets(old);
    uint64_t end = atomic_load_explicit(&dhdr(nd)->heap_used, memory_order_relaxed);
    for (uint64_t i = 0; i < od->nbuckets; i++) {
        uint64_t off = atomic_load_explicit(&ob[i].off, memory_order_relaxed);
        if (off <= OFF_TOMB) continue;
        const kv_entry_t *e = (const kv_entry_t *)(const void *)(old + off);
        memcpy(nd + end, e, e->size);
        table_put(nd, e->hash, end);
        end += e->size;
    }
    atomic_store_explicit(&dhdr(nd)->heap_used, end, memory_order_relaxed);
}

/* Append the batch's entries at *end of @p data and apply them (the caller decides whether
 * that is inside a write section). Entries are appended first (phase 1, invisible), the
 * bucket updates are phase 2. */
static void append_batch(numacoll_kvdb_t *db, char *data, uint64_t *end)
{
    for (size_t i = 0; i < db->nstaged; i++) {
        kv_op_t *op = &db->staged[i];
        if (op->del) continue;
        op->off =
            heap_append(data, end, op->hash, op->rank, op->buf, op->nslen, op->buf + op->nslen,
                        op->keylen, op->buf + op->nslen + op->keylen, op->vallen);
    }
}
static void apply_batch(numacoll_kvdb_t *db, char *data, uint64_t end)
{
    for (size_t i = 0; i < db->nstaged; i++) {
        kv_op_t *op = &db->staged[i];
        if (op->del)
            table_del(data, op);
        else
            table_put(data, op->hash, op->off);
    }
    atomic_store_explicit(&dhdr(data)->heap_used, end, memory_order_relaxed);
}

int numacoll_kvdb_commit(numacoll_kvdb_t *db)
{
    if (!db || !db->server)
        return nc_error(NUMACOLL_ERR_STATE, "numacoll_kvdb_commit: only the server may write");
    if (db->nstaged == 0) return NUMACOLL_OK;
    kv_data_t *d = dhdr(db->data);
    uint64_t add = 0, nputs = 0;
    for (size_t i = 0; i < db->nstaged; i++)
        if (!db->staged[i].del) {
            add += entry_bytes(db->staged[i].nslen, db->staged[i].keylen, db->staged[i].vallen);
            nputs++;
        }
    uint64_t used_end = atomic_load_explicit(&d->heap_used, memory_order_relaxed);
    uint64_t used = atomic_load_explicit(&d->used, memory_order_relaxed);
    uint64_t live = atomic_load_explicit(&d->live, memory_order_relaxed);
    uint64_t nb = d->nbuckets;
    int fits = used_end + add <= d->size && (used + nputs) * 4 <= nb * 3;
    int rc;

    if (fits) {
        uint64_t end = used_end;
        append_batch(db, db->data, &end); /* beyond heap_used: no reader looks there */
        rc = db->ops->wr_lock(&db->lk);
        if (rc) return nc_error_wrap(rc, "numacoll_kvdb_commit");
        apply_batch(db, db->data, end);
        db->ops->wr_unlock(&db->lk);
        numacoll_kvdb_discard(db);
        return NUMACOLL_OK;
    }

    /* New generation: compacted, grown if needed (and allowed). */
    uint64_t heap_cur = d->size - d->heap_off;
    uint64_t live_bytes =
        used_end - d->heap_off - atomic_load_explicit(&d->garbage, memory_order_relaxed);
    uint64_t need_bytes = live_bytes + add, need_entries = live + nputs;
    uint64_t nb2 = nb, heap2 = heap_cur;
    if (db->grow) {
        while (need_entries * 2 > nb2)
            nb2 *= 2; /* at most half full after rebuild */
        while (need_bytes * 3 > heap2 * 2)
            heap2 *= 2; /* at most 2/3 of the heap used */
    }
    size_t boff, hoff;
    size_t size2 = data_size_for(nb2, heap2, &boff, &hoff);
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
    if (db->gen + 1 > 0xffffffffull)
        return nc_error(NUMACOLL_ERR_FULL, "kvdb: generation counter exhausted");
    int nfd;
    char *nd;
    size_t nsize;
    rc = data_create(nb2, heap2, db->gen + 1, &nfd, &nd, &nsize);
    if (rc) return nc_error_wrap(rc, "numacoll_kvdb_commit (growing the table)");
    rebuild(db->data, nd);
    uint64_t end = atomic_load_explicit(&dhdr(nd)->heap_used, memory_order_relaxed);
    append_batch(db, nd, &end);
    apply_batch(db, nd, end);
    rc = db->ops->wr_lock(&db->lk);
    if (rc) {
        munmap(nd, nsize);
        close(nfd);
        return nc_error_wrap(rc, "numacoll_kvdb_commit");
    }
    /* release: the new generation is complete before a reader can see its number */
    atomic_store_explicit(ctl_cur(db), ((db->gen + 1) << 32) | (uint32_t)nfd, memory_order_release);
    /* close the old fd inside the write section: readers of lock-based schemes only open
     * the fd published in the current word, which stays open until the next publication */
    close(db->data_fd);
    db->ops->wr_unlock(&db->lk);
    munmap(db->data, db->data_size);
    db->data = nd;
    db->data_size = nsize;
    db->data_fd = nfd;
    db->gen++;
    numacoll_kvdb_discard(db);
    nc_log(1, -1, 0, "kvdb: generation %llu: %llu buckets, %llu heap bytes",
           (unsigned long long)db->gen, (unsigned long long)nb2, (unsigned long long)heap2);
    return NUMACOLL_OK;
}

/* ---- get ------------------------------------------------------------------------------- */

static int corrupt(numacoll_kvdb_t *db)
{
    return nc_error(NUMACOLL_ERR_STATE,
                    "kvdb: the store's data segment (generation %llu) is inconsistent",
                    (unsigned long long)db->gen);
}

/* Copy the value of the entry found at @p off (header @p eh) into @p buf when it fits
 * @p buflen; its length either way (get reports a value too large for buf by its length). */
static inline uint32_t kv_copy_value(const numacoll_kvdb_t *db, int64_t off, const kv_entry_t *eh,
                                     size_t nslen, size_t keylen, void *buf, size_t buflen)
{
    uint32_t vallen = eh->vallen;
    if (vallen <= buflen && vallen)
        memcpy(buf, db->data + off + sizeof *eh + nslen + keylen, vallen);
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
    if (NC_UNLIKELY(!db || !len))
        return nc_error(NUMACOLL_ERR_ARG, "numacoll_kvdb_get: NULL argument");
    int rc = check_key("numacoll_kvdb_get", ns, key, &nslen, &keylen);
    if (NC_UNLIKELY(rc)) return rc;
    if (NC_UNLIKELY(buflen && !buf))
        return nc_error(NUMACOLL_ERR_ARG, "numacoll_kvdb_get: buf is NULL");
    uint64_t h = kv_hash(ns, nslen, rank, key, keylen);
    kv_entry_t eh;
    int64_t off;
    uint32_t vallen = 0;
    if (db->server) { /* the single writer reads its own data without locking */
        if (prof) st[1] = st[2] = nc_kv_stamp_end();
        off = kv_find(db->data, db->data_size, h, ns, nslen, rank, key, keylen, &eh);
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
                off = kv_find(db->data, db->data_size, h, ns, nslen, rank, key, keylen, &eh);
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
    if (NC_UNLIKELY(off == FIND_CORRUPT)) return corrupt(db);
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
 * [uint32 keylen][uint32 vallen][key][NUL][value], bounds-checked. Returns count or error. */
static int64_t collect(numacoll_kvdb_t *db, const char *ns, size_t nslen, uint32_t rank,
                       size_t *bytes)
{
    const char *data = db->data;
    size_t dsize = db->data_size;
    const kv_data_t *d = dhdr(data);
    const kv_bucket_t *b = buckets(data);
    size_t o = 0;
    int64_t n = 0;
    for (uint64_t i = 0; i < d->nbuckets; i++) {
        uint64_t off = atomic_load_explicit(&b[i].off, memory_order_relaxed);
        if (off <= OFF_TOMB) continue;
        if (off < d->heap_off || (off & 7) || off > dsize - sizeof(kv_entry_t)) return FIND_CORRUPT;
        kv_entry_t e;
        memcpy(&e, data + off, sizeof e);
        if (e.rank != rank || e.nslen != nslen) continue;
        if ((uint64_t)e.nslen + e.keylen + e.vallen > dsize - off - sizeof e) return FIND_CORRUPT;
        const char *p = data + off + sizeof e;
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
    if (!db || !nspace) return nc_error(NUMACOLL_ERR_ARG, "numacoll_kvdb_iterate: NULL argument");
    size_t nslen = strnlen(nspace, NUMACOLL_KVDB_MAX_NSLEN + 1);
    if (nslen > NUMACOLL_KVDB_MAX_NSLEN)
        return nc_error(NUMACOLL_ERR_TOOBIG, "numacoll_kvdb_iterate: namespace longer than %d",
                        NUMACOLL_KVDB_MAX_NSLEN);
    int64_t n;
    size_t bytes = 0;
    if (db->server) {
        n = collect(db, nspace, nslen, rank, &bytes);
    } else {
        while (1) {
            uint64_t tok;
            int rc = db->ops->rd_lock(&db->lk, &tok);
            if (rc) return rc;
            rc = reader_sync(db);
            n = rc ? rc : collect(db, nspace, nslen, rank, &bytes);
            if (db->ops->rd_unlock(&db->lk, tok) == NC_KVLOCK_RETRY) {
                db->retries++;
                continue;
            }
            if (rc) return rc;
            break;
        }
    }
    if (n == FIND_CORRUPT) return corrupt(db);
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
    if (!db || !st) return nc_error(NUMACOLL_ERR_ARG, "numacoll_kvdb_stats: NULL argument");
    const kv_data_t *d = dhdr(db->data);
    st->generation = db->gen;
    st->entries = atomic_load_explicit(&d->live, memory_order_relaxed);
    st->buckets = d->nbuckets;
    st->heap_bytes = d->size - d->heap_off;
    st->heap_used = atomic_load_explicit(&d->heap_used, memory_order_relaxed) - d->heap_off;
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
    return (_Atomic uint64_t *)(db->ctl + ctl_hdr(db)->scratch_off + (size_t)i * db->lk.line);
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
