/*
 * Private layout of the key-value store, shared by store.c (the public calls), segment.c
 * (the shared-memory segments) and table.c (the server's table updates).
 *
 * Segments (memfd files, see segment.c), and who may write them:
 *   header segment (one per store; the handle names it): the layout (kv_ctl_t, line 0),
 *     the current-generation word and two scratch lines. Written by the server only.
 *   lock segment (one per store): a magic line, the reader slots (one line each), the lock
 *     scheme's area. Readers must write here (their slot, their lock words).
 *   data segment (one per generation): header (kv_data_t), buckets (2 x 8 bytes each: hash
 *     and entry offset; offset 0 = empty, 1 = tombstone), then the entry heap (append-only).
 *     Written by the server only.
 * Readers map the header and data segments read-only. The server creates those two with
 * mode 0400 and seals them with F_SEAL_FUTURE_WRITE once it has mapped them, so no other
 * process can make them writable again: not by mprotect of its mapping, nor by opening
 * /proc/<server>/fd/<n> again (even after a chmod) and mapping or writing that. Every
 * segment is also sealed against shrinking and growing (a truncation would turn mappings
 * into SIGBUS) and against further seals.
 *
 * Trust. Nothing read from shared memory is trusted beyond what is checked:
 *   - The server keeps private copies of everything it decides on: both segments' layout
 *     (pointers computed once), each generation's geometry, heap end and counters
 *     (kv_tab_t), its own lock state (nc_kvlock_t.wstate). The shared copies in the
 *     segments are written for readers only. What it must read back from a table (bucket
 *     words, entry headers and keys) it checks before use (table.c) and reports as
 *     NUMACOLL_ERR_STATE naming what is out of range.
 *   - A reader checks the layout once (attach, each new generation) and keeps a private
 *     copy; it bounds-checks every offset and length it takes from a table, and a walk
 *     visits at most the private bucket count.
 * On a kernel without F_SEAL_FUTURE_WRITE (before Linux 5.1) only the mode bits keep
 * readers from writing the header and data segments, and a process of the same user can
 * chmod them: the checks still keep every process from crashing or looping, but what such
 * a process overwrites is lost (lookups of it fail with NUMACOLL_ERR_STATE or
 * NUMACOLL_ERR_NOT_FOUND, and a commit that needs it fails with NUMACOLL_ERR_STATE).
 * The lock segment stays writable by every reader: a reader that overwrites lock words
 * can stall the others or the server (NUMACOLL_TIMEOUT bounds the waits, except under the
 * rwlock scheme) but not crash it; see lock.h.
 */
#ifndef NC_KVDB_STORE_H
#define NC_KVDB_STORE_H

#include "kvdb_internal.h"

#include <string.h>

#define CTL_MAGIC 0x3163766b6c6f636eull  /* "ncolkvc1": header segment */
#define LCK_MAGIC 0x316c766b6c6f636eull  /* "ncolkvl1": lock segment */
#define DATA_MAGIC 0x3164766b6c6f636eull /* "ncolkvd1": data segment */
#define KV_VERSION 2u
#define OFF_EMPTY 0u
#define OFF_TOMB 1u

/* Line 0 of the header segment: written once by the server before any reader can attach. */
typedef struct kv_ctl {
    uint64_t magic;
    uint32_t version;
    uint32_t nslots;
    int32_t server_pid;
    uint32_t line;
    uint64_t size;                 /* header segment bytes */
    uint64_t cur_off, scratch_off; /* in the header segment */
    int32_t lock_fd;               /* the server's fd of the lock segment */
    uint32_t reserved;
    uint64_t lock_size;          /* lock segment bytes */
    uint64_t slots_off, lock_off; /* in the lock segment */
    char lock_name[32];
} kv_ctl_t;

typedef struct kv_data {
    uint64_t magic;
    uint64_t gen;
    uint64_t size;     /* written once at creation (like nbuckets and the offsets) */
    uint64_t nbuckets; /* power of two */
    uint64_t buckets_off;
    uint64_t heap_off;
    /* copies of the server's private counters (written inside write sections), for the
     * readers' statistics only */
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

/* A staged put or delete (server). */
typedef struct kv_op {
    int del;
    uint32_t rank;
    uint16_t nslen, keylen;
    uint32_t vallen;
    uint64_t hash;
    uint64_t off; /* where the entry goes (commit) */
    char *buf;    /* ns, key, value */
} kv_op_t;

/* Geometry of a mapped data generation: a private copy (reader: checked at remap). */
typedef struct kv_geo {
    uint64_t size; /* segment bytes = mapping length */
    uint64_t nb;   /* buckets, a power of two */
    uint64_t mask; /* nb - 1 */
    uint64_t boff; /* offset of bucket 0 (16-byte aligned) */
    uint64_t hoff; /* offset of the heap (8-byte aligned, >= boff + 16 nb) */
} kv_geo_t;

/* The server's own counters of a generation. */
typedef struct kv_count {
    uint64_t heap_used; /* end offset of the used heap */
    uint64_t live, used, garbage;
} kv_count_t;

/* A data generation as this process maps it (the counters: server only). */
typedef struct kv_tab {
    char *base;
    kv_geo_t g;
    kv_count_t c;
    uint64_t gen;
} kv_tab_t;

/* One bucket store of a batch applied in place: what the bucket held before. */
typedef struct kv_undo {
    uint64_t b, hash, off;
} kv_undo_t;

struct numacoll_kvdb {
    int server;
    const nc_kvlock_ops_t *ops;
    nc_kvlock_t lk; /* area and slots point into the lock segment */
    pid_t server_pid;
    char handle[64];
    /* header segment (read-only for readers) and the words in it, located once */
    char *hdr;
    size_t hdr_size;
    int hdr_fd;             /* server */
    _Atomic uint64_t *cur;  /* current generation: (gen << 32) | the server's fd */
    char *scratch;          /* two lines */
    /* lock segment */
    char *lck;
    size_t lck_size;
    int lck_fd; /* server */
    /* current data generation mapped by this process */
    kv_tab_t t;
    int data_fd; /* server */
    /* server: staged batch, the undo log of an in-place commit (capstaged entries) */
    kv_op_t *staged;
    kv_undo_t *undo;
    size_t nstaged, capstaged;
    size_t max_value, max_size;
    int grow;
    uint64_t retries;
    char *iterbuf;
    size_t itercap;
};

/* ---- hashing and sizes --------------------------------------------------------------- */

/* 8 bytes at a time: multiply and fold (a 50-byte key costs ~7 rounds, not 50). */
static inline uint64_t kv_mix8(uint64_t h, uint64_t x)
{
    h = (h ^ x) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 32);
}

static inline uint64_t kv_hash_bytes(uint64_t h, const char *p, size_t n)
{
    uint64_t x;
    for (; n >= 8; n -= 8, p += 8) {
        memcpy(&x, p, 8);
        h = kv_mix8(h, x);
    }
    x = 0;
    memcpy(&x, p, n);
    return kv_mix8(h, x ^ ((uint64_t)n << 56));
}

static inline uint64_t kv_hash(const char *ns, size_t nslen, uint32_t rank, const char *key,
                               size_t keylen)
{
    uint64_t h = kv_hash_bytes(0x243f6a8885a308d3ull, ns, nslen);
    h = kv_mix8(h, rank | ((uint64_t)0xa5 << 40));
    h = kv_hash_bytes(h, key, keylen);
    return h ^ (h >> 29);
}

static inline uint64_t kv_entry_bytes(uint64_t nslen, uint64_t keylen, uint64_t vallen)
{
    return nc_round_up(sizeof(kv_entry_t) + nslen + keylen + vallen, 8);
}

static inline kv_data_t *kv_dhdr(const kv_tab_t *t)
{
    return (kv_data_t *)(void *)t->base;
}
static inline kv_bucket_t *kv_buckets(const kv_tab_t *t)
{
    return (kv_bucket_t *)(void *)(t->base + t->g.boff);
}

/* ---- lookup ------------------------------------------------------------------------------ */

#define FIND_CORRUPT (-100)

/* What a check found out of range: "bucket <bucket> <what> <value>". */
typedef struct kv_bad {
    const char *what;
    uint64_t bucket, value;
} kv_bad_t;

/* Look up a key in @p t. Every bucket offset and entry length is checked against
 * [t->g.hoff, hend) before use: hend is the end of the mapping for a reader (which may be
 * copying a torn optimistic snapshot) and the used heap's end for the server. hend >=
 * t->g.hoff > sizeof(kv_entry_t), so hend - sizeof(kv_entry_t) does not wrap. The walk
 * visits at most t->g.nb buckets. Returns the entry's offset, its header in *ehdr and its
 * bucket in *bidx; 0 if not found; FIND_CORRUPT with *bad naming what was out of range. */
static inline int64_t kv_find(const kv_tab_t *t, uint64_t hend, uint64_t h, const char *ns,
                              size_t nslen, uint32_t rank, const char *key, size_t keylen,
                              kv_entry_t *ehdr, uint64_t *bidx, kv_bad_t *bad)
{
    const char *base = t->base;
    const uint64_t mask = t->g.mask, hoff = t->g.hoff;
    const kv_bucket_t *b = (const kv_bucket_t *)(const void *)(base + t->g.boff);
    uint64_t p = h & mask;
    for (uint64_t i = 0; i < t->g.nb; i++, p = (p + 1) & mask) {
        uint64_t off = atomic_load_explicit(&b[p].off, memory_order_relaxed);
        if (off == OFF_EMPTY) return 0;
        if (off == OFF_TOMB) continue;
        if (atomic_load_explicit(&b[p].hash, memory_order_relaxed) != h) continue;
        if (NC_UNLIKELY(off < hoff || (off & 7) || off > hend - sizeof(kv_entry_t))) {
            *bad = (kv_bad_t){"points outside the heap, at offset", p, off};
            return FIND_CORRUPT;
        }
        memcpy(ehdr, base + off, sizeof *ehdr);
        if (ehdr->rank != rank || ehdr->nslen != nslen || ehdr->keylen != keylen) continue;
        if (NC_UNLIKELY((uint64_t)nslen + keylen + ehdr->vallen > hend - off - sizeof *ehdr)) {
            *bad = (kv_bad_t){"points to an entry running past the segment, value length", p,
                              ehdr->vallen};
            return FIND_CORRUPT;
        }
        const char *e = base + off + sizeof *ehdr;
        if (memcmp(e, ns, nslen) != 0 || memcmp(e + nslen, key, keylen) != 0) continue;
        *bidx = p;
        return (int64_t)off;
    }
    return 0;
}

/* The functions the store's files share: hidden, so that libnumacoll and the MPI preload
 * export no kv_* names into an application's namespace. */
#pragma GCC visibility push(hidden)

/** NUMACOLL_ERR_STATE: generation @p gen is corrupt; the message names @p bad. */
int kv_corrupt(uint64_t gen, const kv_bad_t *bad);

/* ---- segments (segment.c) --------------------------------------------------------------- */

/** Server: create the header and lock segments for @p nslots readers of scheme db->ops and
 *  set db's segment fields, db->lk's layout and db->handle. */
int kv_ctl_create(numacoll_kvdb_t *db, int nslots);
/** Reader: map the header (read-only) and lock segments of the store named by
 *  /proc/@p pid/fd/@p sfd, check their layout, and set db's segment fields and db->lk. */
int kv_ctl_attach(numacoll_kvdb_t *db, const char *handle, pid_t pid, int sfd);
/** Bytes of a data segment of @p nb buckets and @p heap heap bytes; its offsets. */
size_t kv_data_size_for(size_t nb, size_t heap, size_t *boff, size_t *hoff);
/** Server: a new data generation @p gen, mapped read-write into *t (counters zero). */
int kv_data_create(size_t nb, size_t heap, uint64_t gen, int *fd, kv_tab_t *t);
/** Reader: map generation (gen, fd) of the word @p cur the server published. */
int kv_reader_remap(numacoll_kvdb_t *db, uint64_t cur);
/** Unmap every segment and close the server's fds (close). */
void kv_segments_release(numacoll_kvdb_t *db);

/* ---- the server's table updates (table.c) ----------------------------------------------- */

/** Append the batch's entries from @p t's used heap end on (outside the part readers look
 *  at); *end receives the new end. The caller has checked that they fit. */
void kv_append_batch(numacoll_kvdb_t *db, kv_tab_t *t, uint64_t *end);
/**
 * Apply the staged batch, whose entries end at @p end, to @p t and copy t's counters to the
 * shared header. With @p undo (an in-place commit, inside the write section) the batch is
 * all or nothing: on an error every bucket store is rolled back and t's counters restored.
 * Errors: NUMACOLL_ERR_STATE when the table is found corrupt (message names what).
 */
int kv_apply_batch(numacoll_kvdb_t *db, kv_tab_t *t, uint64_t end, kv_undo_t *undo);
/** Copy every live entry of @p old into the new, unpublished generation @p nt, checking
 *  each bucket and entry of @p old. NUMACOLL_ERR_STATE when one is out of range. */
int kv_rebuild(const kv_tab_t *old, kv_tab_t *nt);

#pragma GCC visibility pop

#endif
