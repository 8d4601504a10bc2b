/* Key-value store: a hostile reader. A reader process tries every way it has to write the
 * store's header and data segments (mprotect of its own mapping, reopening the server's
 * memfds through /proc after a chmod, mmap, write(), truncation, hole punching) and
 * scribbles over the header and the table wherever it gets through. The server must keep
 * working or report the corruption (NUMACOLL_ERR_STATE, "corrupt"), never crash, and the
 * other readers must keep getting correct values (or that error).
 *
 * protected: the store as created: no means may work, and nothing may change for anybody.
 * unprotected: the segments open to writes as on a kernel without F_SEAL_FUTURE_WRITE
 *   after a chmod (nc_kvdb_test_write_protect(0)); first the headers are overwritten
 *   (the server and the readers attached before must not notice; a new reader is refused
 *   with a message), then a quarter of the table's bucket words and an entry header
 *   (every lookup and commit gives the right value or the corruption error).
 * lock area (every registered scheme): the lock segment is writable by design; the
 *   hostile reader overwrites the scheme's lock words while the server holds them and
 *   while it commits, and the server must neither crash nor hang (test_lock_area). */
#define _GNU_SOURCE 1 /* fallocate */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "forkrun.h"
#include "test_kvdb_common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#define NS "hostile"
#define NKEYS 300
#define PAGE 4096

/* The segments' magic numbers and the data header's fields, as store.h lays them out. */
#define CTL_MAGIC_BYTES "ncolkvc1"
#define DATA_MAGIC_BYTES "ncolkvd1"
#define DATA_NBUCKETS_AT 24
#define DATA_BOFF_AT 32
#define DATA_FIELDS_END 88 /* kv_data_t: magic, 5 words of geometry, 4 counters */
#define CTL_FIELDS_END 96  /* the header's fields before the current-generation word */
#define CUR_AT 128         /* the current-generation word: (generation << 32) | fd */

enum { ATTACK_HEADERS = 1, ATTACK_TABLE = 2, ATTACK_PUNCH = 4 };

/* What worked for the hostile reader, per segment (header 0, data 1). */
enum {
    GOT_MPROTECT_OWN = 1,  /* mprotect of its own read-only mapping (header only) */
    GOT_OPEN_RW = 2,       /* open O_RDWR of the /proc link without a chmod */
    GOT_MMAP_RW = 4,       /* a writable shared mapping (after a chmod if needed) */
    GOT_MPROTECT = 8,      /* mprotect of a read-only mapping of the writable fd */
    GOT_WRITE = 16,        /* pwrite */
    GOT_TRUNCATE = 32,     /* ftruncate to a page less */
    GOT_PUNCH = 64,        /* fallocate PUNCH_HOLE of the last page */
    GOT_FOUND = 128,       /* the segment was found among the server's fds */
};

/* Shared between the test (the server) and its children. Orders: phase (release by the
 * server, acquire by the good reader) publishes nkeys and replaced, done (release by the
 * good reader, acquire by the server) publishes its counts and msg; the other fields are
 * written before a fork or before the writer exits and is reaped (waitpid), so relaxed. */
typedef struct sh {
    char handle[64];
    _Atomic int phase;    /* set by the server: the good reader's next check, -1 = exit */
    _Atomic int done;     /* the good reader: the last phase it checked */
    _Atomic int nkeys;    /* keys 0..nkeys-1 are committed */
    _Atomic int replaced; /* keys i % 5 == 0 below it hold their second value */
    int attack;           /* ATTACK_*: what the hostile reader does */
    _Atomic uint32_t got[2];
    _Atomic int ok, wrong, corrupt, other, attach_rc;
    char msg[512]; /* a reader's first unexpected error */
} sh_t;

typedef struct counts {
    int ok, wrong, corrupt, other;
    char msg[512];
} counts_t;

static void key_of(int i, char *k, size_t n)
{
    snprintf(k, n, "key-%05d", i);
}

/* Value of key @p i in round @p r; entries of varying sizes. */
static size_t value_of(int i, int r, char *v, size_t n)
{
    int len = snprintf(v, n, "v%05d-r%d-", i, r);
    for (int j = 0; j < i % 17 && (size_t)len + 1 < n; j++)
        v[len++] = (char)('a' + j);
    v[len] = 0;
    return (size_t)len;
}

/* Check keys 0..n-1 (those i % 5 == 0 below @p replaced in round 1): a correct value, the
 * corruption error, or anything else. */
static counts_t check_keys(numacoll_kvdb_t *db, int n, int replaced)
{
    counts_t c = {0};
    for (int i = 0; i < n; i++) {
        char k[32], want[64], buf[128];
        key_of(i, k, sizeof k);
        size_t wl = value_of(i, i < replaced && i % 5 == 0, want, sizeof want), len = 0;
        int rc = numacoll_kvdb_get(db, NS, (uint32_t)(i % 3), k, buf, sizeof buf, &len);
        if (rc == NUMACOLL_OK && len == wl && memcmp(buf, want, wl) == 0) {
            c.ok++;
        } else if (rc == NUMACOLL_OK) {
            c.wrong++;
            if (!c.msg[0])
                snprintf(c.msg, sizeof c.msg, "%s: %.*s, expected %s", k, (int)len, buf, want);
        } else if (rc == NUMACOLL_ERR_STATE && strstr(numacoll_last_error(), "corrupt")) {
            c.corrupt++;
        } else {
            c.other++;
            if (!c.msg[0])
                snprintf(c.msg, sizeof c.msg, "%s: %s: %s", k, numacoll_status_name(rc),
                         numacoll_last_error());
        }
    }
    return c;
}

static void store_counts(sh_t *sh, const counts_t *c)
{
    atomic_store_explicit(&sh->ok, c->ok, memory_order_relaxed);
    atomic_store_explicit(&sh->wrong, c->wrong, memory_order_relaxed);
    atomic_store_explicit(&sh->corrupt, c->corrupt, memory_order_relaxed);
    atomic_store_explicit(&sh->other, c->other, memory_order_relaxed);
    memcpy(sh->msg, c->msg, sizeof sh->msg);
}

/* Stage keys [from, to) in round r (rank i % 3), committing every 25; the first commit
 * error (NUMACOLL_OK if none). A failed commit's batch is dropped. */
static int put_keys(numacoll_kvdb_t *db, int from, int to, int r, char *msg, size_t msglen)
{
    int first = NUMACOLL_OK;
    for (int i = from; i < to; i++) {
        char k[32], v[64];
        key_of(i, k, sizeof k);
        size_t vl = value_of(i, r, v, sizeof v);
        assert_int_equal(numacoll_kvdb_put(db, NS, (uint32_t)(i % 3), k, v, vl), NUMACOLL_OK);
        if ((i + 1 - from) % 25 == 0 || i + 1 == to) {
            int rc = numacoll_kvdb_commit(db);
            if (rc && !first) {
                first = rc;
                snprintf(msg, msglen, "%s", numacoll_last_error());
            }
            if (rc) numacoll_kvdb_discard(db);
        }
    }
    return first;
}

/* ---- the good reader: attached before the attack, checks at every phase ---------------- */

static int good_reader(void *arg)
{
    sh_t *sh = arg;
    numacoll_kvdb_t *db;
    if (numacoll_kvdb_attach(sh->handle, &db) != NUMACOLL_OK) return 10;
    int seen = 0;
    uint64_t deadline = nc_now_ns() + 60000000000ull;
    while (1) {
        /* Wait loop: phase is written by the server (the test process) only, after it
         * committed what the check expects and stored nkeys and replaced; seeing a new
         * value (acquire) we may read those two. The keys themselves reach us through the
         * store's own read sections. */
        int p = atomic_load_explicit(&sh->phase, memory_order_acquire);
        if (p == -1) break;
        if (p == seen) {
            if (nc_now_ns() > deadline || getppid() == 1) return 11;
            sched_yield();
            continue;
        }
        counts_t c = check_keys(db, atomic_load_explicit(&sh->nkeys, memory_order_relaxed),
                                atomic_load_explicit(&sh->replaced, memory_order_relaxed));
        store_counts(sh, &c);
        atomic_store_explicit(&sh->done, p, memory_order_release);
        seen = p;
    }
    numacoll_kvdb_close(db);
    return 0;
}

/* Ask the good reader for a check and wait for its counts. */
static counts_t reader_check(sh_t *sh, pid_t reader, int phase)
{
    atomic_store_explicit(&sh->phase, phase, memory_order_release);
    uint64_t deadline = nc_now_ns() + 30000000000ull;
    /* Wait loop: done is written by the good reader only, after it stored its counts and
     * msg; seeing our phase there (acquire) we may read them. The reader's death ends the
     * wait with a failure. */
    while (atomic_load_explicit(&sh->done, memory_order_acquire) != phase) {
        assert_true(nc_now_ns() < deadline);
        assert_int_equal(kill(reader, 0), 0);
        assert_int_equal(waitpid(reader, NULL, WNOHANG), 0); /* not exited (or crashed) */
        sched_yield();
    }
    counts_t c = {.ok = atomic_load_explicit(&sh->ok, memory_order_relaxed),
                  .wrong = atomic_load_explicit(&sh->wrong, memory_order_relaxed),
                  .corrupt = atomic_load_explicit(&sh->corrupt, memory_order_relaxed),
                  .other = atomic_load_explicit(&sh->other, memory_order_relaxed)};
    memcpy(c.msg, sh->msg, sizeof c.msg);
    return c;
}

/* A reader attaching now: its attach status, then its counts. */
static int new_reader(void *arg)
{
    sh_t *sh = arg;
    numacoll_kvdb_t *db;
    int rc = numacoll_kvdb_attach(sh->handle, &db);
    atomic_store_explicit(&sh->attach_rc, rc, memory_order_relaxed);
    if (rc) {
        snprintf(sh->msg, sizeof sh->msg, "%s", numacoll_last_error());
        return 0;
    }
    counts_t c = check_keys(db, atomic_load_explicit(&sh->nkeys, memory_order_relaxed),
                            atomic_load_explicit(&sh->replaced, memory_order_relaxed));
    store_counts(sh, &c);
    numacoll_kvdb_close(db);
    return 0;
}

/* ---- the hostile reader ------------------------------------------------------------------ */

static void scribble(int which, char *w, size_t size, int attack)
{
    if (which == 1 && (attack & ATTACK_TABLE)) {
        uint64_t nb, boff;
        memcpy(&nb, w + DATA_NBUCKETS_AT, 8);
        memcpy(&boff, w + DATA_BOFF_AT, 8);
        if (nb && boff + nb * 16 <= size) {
            int live = 0, entry_done = 0;
            for (uint64_t b = 0; b < nb; b++) {
                uint64_t off;
                memcpy(&off, w + boff + b * 16 + 8, 8);
                if (off <= 1) continue;
                if (live++ % 4) { /* one live bucket in four keeps its entry ... */
                    if (!entry_done++) { /* ... except for one entry's header */
                        uint32_t huge = 0xfffffff8u;
                        memcpy(w + off, &huge, 4);
                    }
                    continue;
                }
                uint64_t bad = (live / 4) % 3 == 0   ? off + 4          /* misaligned */
                               : (live / 4) % 3 == 1 ? size + 8 * b     /* past the end */
                                                     : boff + 16 * b;   /* in the buckets */
                memcpy(w + boff + b * 16 + 8, &bad, 8);
            }
        }
    }
    if (attack & ATTACK_HEADERS) {
        if (which == 0) memset(w + 8, 0xa5, CTL_FIELDS_END - 8);
        if (which == 1) memset(w + 8, 0xa5, DATA_FIELDS_END - 8);
    }
}

/* Every way to write segment @p which through the link @p path. */
static uint32_t attempt(const char *path, int which, int attack)
{
    uint32_t got = GOT_FOUND;
    int rw = open(path, O_RDWR | O_CLOEXEC);
    if (rw >= 0) {
        got |= GOT_OPEN_RW;
    } else { /* the owner may chmod what it may not open */
        int ro = open(path, O_RDONLY | O_CLOEXEC);
        if (ro >= 0) {
            if (fchmod(ro, 0600) != 0) fprintf(stderr, "hostile: fchmod: %s\n", strerror(errno));
            close(ro);
        }
        rw = open(path, O_RDWR | O_CLOEXEC);
    }
    if (rw < 0) return got;
    struct stat st;
    if (fstat(rw, &st) != 0) return got;
    size_t size = (size_t)st.st_size;
    char *w = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, rw, 0);
    if (w != MAP_FAILED) got |= GOT_MMAP_RW;
    char *r = mmap(NULL, size, PROT_READ, MAP_SHARED, rw, 0);
    if (r != MAP_FAILED && mprotect(r, size, PROT_READ | PROT_WRITE) == 0) {
        got |= GOT_MPROTECT;
        if (w == MAP_FAILED) w = r, r = MAP_FAILED;
    }
    if (r != MAP_FAILED) munmap(r, size);
    char c;
    if (pread(rw, &c, 1, 0) == 1 && pwrite(rw, &c, 1, 0) == 1) got |= GOT_WRITE;
    if (w != MAP_FAILED) {
        scribble(which, w, size, attack);
        munmap(w, size);
    }
    if (ftruncate(rw, (off_t)(size - PAGE)) == 0) got |= GOT_TRUNCATE;
    if ((attack & ATTACK_PUNCH) &&
        fallocate(rw, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)(size - PAGE), PAGE) == 0)
        got |= GOT_PUNCH;
    close(rw);
    return got;
}

static int hostile(void *arg)
{
    sh_t *sh = arg;
    numacoll_kvdb_t *db = NULL;
    uint32_t got[2] = {0, 0};
    /* as a reader (refused once the header is overwritten, which the rest does not need):
     * its own mapping of the header segment (the scratch lines are in it) */
    if (numacoll_kvdb_attach(sh->handle, &db) == NUMACOLL_OK) {
        char *pg = (char *)((uintptr_t)nc_kvdb_scratch(db, 0) & ~(uintptr_t)(PAGE - 1));
        if (mprotect(pg, PAGE, PROT_READ | PROT_WRITE) == 0) {
            got[0] |= GOT_MPROTECT_OWN;
            if (sh->attack & ATTACK_HEADERS) memset(pg + 8, 0xa5, CTL_FIELDS_END - 8);
        }
    } else if (!(sh->attack & ATTACK_TABLE)) {
        return 10;
    }
    /* this store's segments: the header the handle names, the data segment its
     * current-generation word names (both checked by their magic numbers) */
    char path[2][64];
    snprintf(path[0], sizeof path[0], "%s", sh->handle);
    int ro = open(path[0], O_RDONLY | O_CLOEXEC);
    uint64_t cur = 0;
    if (ro < 0 || pread(ro, &cur, 8, CUR_AT) != 8) return 12;
    close(ro);
    snprintf(path[1], sizeof path[1], "/proc/%d/fd/%u", (int)getppid(), (unsigned)cur);
    const char *magic_of[2] = {CTL_MAGIC_BYTES, DATA_MAGIC_BYTES};
    for (int which = 0; which < 2; which++) {
        char magic[8] = {0};
        ro = open(path[which], O_RDONLY | O_CLOEXEC);
        if (ro < 0) continue;
        ssize_t m = pread(ro, magic, 8, 0);
        close(ro);
        if (m == 8 && !memcmp(magic, magic_of[which], 8))
            got[which] |= attempt(path[which], which, sh->attack);
    }
    atomic_store_explicit(&sh->got[0], got[0], memory_order_relaxed);
    atomic_store_explicit(&sh->got[1], got[1], memory_order_relaxed);
    numacoll_kvdb_close(db);
    return 0;
}

static uint32_t run_hostile(sh_t *sh, int attack)
{
    sh->attack = attack;
    pid_t h = kvt_spawn(hostile, sh);
    assert_int_equal(kvt_reap(h, 30), 0);
    return atomic_load_explicit(&sh->got[0], memory_order_relaxed) |
           atomic_load_explicit(&sh->got[1], memory_order_relaxed) << 8;
}

/* ---- the tests ---------------------------------------------------------------------------- */

static numacoll_kvdb_t *setup_store(const char *lock, sh_t *sh)
{
    numacoll_kvdb_params_t p = {.lock = lock, .max_readers = 8, .buckets = 64,
                                .heap_bytes = 4096, .grow = NUMACOLL_KVDB_GROW_YES};
    numacoll_kvdb_t *db = NULL;
    int rc = numacoll_kvdb_create(&p, &db);
    if (rc) print_error("create: %s\n", numacoll_last_error());
    assert_int_equal(rc, NUMACOLL_OK);
    snprintf(sh->handle, sizeof sh->handle, "%s", numacoll_kvdb_handle(db));
    char msg[512] = "";
    rc = put_keys(db, 0, NKEYS, 0, msg, sizeof msg);
    if (rc) print_error("commit: %s\n", msg);
    assert_int_equal(rc, NUMACOLL_OK);
    atomic_store_explicit(&sh->nkeys, NKEYS, memory_order_relaxed);
    return db;
}

static void expect_all(const counts_t *c, int n, const char *who)
{
    if (c->ok != n) print_error("%s: %d ok, %d wrong, %d corrupt, %d other: %s\n", who, c->ok,
                                c->wrong, c->corrupt, c->other, c->msg);
    assert_int_equal(c->ok, n);
}

/* Only a correct value or the corruption error; no wrong value, no other error. */
static void expect_correct_or_corrupt(const counts_t *c, const char *who)
{
    if (c->wrong || c->other)
        print_error("%s: %d ok, %d wrong, %d corrupt, %d other: %s\n", who, c->ok, c->wrong,
                    c->corrupt, c->other, c->msg);
    assert_int_equal(c->wrong, 0);
    assert_int_equal(c->other, 0);
}

static void test_protected(void **state)
{
    const char *lock = *state;
    kvt_clear_env();
    nc_kvdb_test_write_protect(1);
    sh_t *sh = kvt_shared(sizeof(sh_t));
    numacoll_kvdb_t *db = setup_store(lock, sh);
    pid_t reader = kvt_spawn(good_reader, sh);
    counts_t c = reader_check(sh, reader, 1);
    expect_all(&c, NKEYS, "reader before the attack");

    uint32_t got = run_hostile(sh, ATTACK_HEADERS | ATTACK_TABLE | ATTACK_PUNCH);
    /* both segments found; no means of writing them worked (root may open the link
     * read-write: mode bits do not bind it, the seals do) */
    assert_true(got & GOT_FOUND);
    assert_true(got & GOT_FOUND << 8);
    if (geteuid() == 0) got &= ~(uint32_t)(GOT_OPEN_RW | GOT_OPEN_RW << 8);
    if (got & ~(uint32_t)(GOT_FOUND | GOT_FOUND << 8))
        print_error("the hostile reader got through: header 0x%x, data 0x%x\n", got & 0xff,
                    got >> 8);
    assert_int_equal(got & ~(uint32_t)(GOT_FOUND | GOT_FOUND << 8), 0);

    /* the server goes on: replaces and new keys, growing the table */
    char msg[512] = "";
    numacoll_kvdb_stats_t st0, st1;
    assert_int_equal(numacoll_kvdb_stats(db, &st0), NUMACOLL_OK);
    int rc = put_keys(db, NKEYS, 2 * NKEYS, 0, msg, sizeof msg);
    if (rc) print_error("commit after the attack: %s\n", msg);
    assert_int_equal(rc, NUMACOLL_OK);
    for (int i = 0; i < NKEYS && !rc; i += 5) {
        char k[32], v[64];
        key_of(i, k, sizeof k);
        size_t vl = value_of(i, 1, v, sizeof v);
        rc = numacoll_kvdb_put(db, NS, (uint32_t)(i % 3), k, v, vl);
    }
    if (!rc) rc = numacoll_kvdb_commit(db);
    assert_int_equal(rc, NUMACOLL_OK);
    atomic_store_explicit(&sh->replaced, NKEYS, memory_order_relaxed);
    atomic_store_explicit(&sh->nkeys, 2 * NKEYS, memory_order_relaxed);
    assert_int_equal(numacoll_kvdb_stats(db, &st1), NUMACOLL_OK);
    assert_true(st1.generation > st0.generation); /* it grew */
    assert_int_equal(st1.entries, 2 * NKEYS);
    c = check_keys(db, 2 * NKEYS, NKEYS);
    expect_all(&c, 2 * NKEYS, "server after the attack");
    c = reader_check(sh, reader, 2);
    expect_all(&c, 2 * NKEYS, "reader attached before the attack");
    pid_t nr = kvt_spawn(new_reader, sh);
    assert_int_equal(kvt_reap(nr, 30), 0);
    assert_int_equal(atomic_load_explicit(&sh->attach_rc, memory_order_relaxed), NUMACOLL_OK);
    assert_int_equal(atomic_load_explicit(&sh->ok, memory_order_relaxed), 2 * NKEYS);

    atomic_store_explicit(&sh->phase, -1, memory_order_release);
    assert_int_equal(kvt_reap(reader, 30), 0);
    numacoll_kvdb_close(db);
    munmap(sh, sizeof *sh);
}

static void test_unprotected(void **state)
{
    const char *lock = *state;
    kvt_clear_env();
    nc_kvdb_test_write_protect(0); /* every generation this test creates */
    sh_t *sh = kvt_shared(sizeof(sh_t));
    numacoll_kvdb_t *db = setup_store(lock, sh);
    pid_t reader = kvt_spawn(good_reader, sh);
    counts_t c = reader_check(sh, reader, 1);
    expect_all(&c, NKEYS, "reader before the attack");

    /* 1. the headers: the header segment's layout fields, the data header's fields */
    uint32_t got = run_hostile(sh, ATTACK_HEADERS);
    assert_true(got & GOT_MMAP_RW);
    assert_true(got & GOT_MMAP_RW << 8);
    assert_false(got & (GOT_TRUNCATE | GOT_TRUNCATE << 8)); /* the size stays sealed */
    /* the server does not notice: its own copies; it grows the table twice over */
    char msg[512] = "";
    int rc = put_keys(db, NKEYS, 3 * NKEYS, 0, msg, sizeof msg);
    if (rc) print_error("commit after the header attack: %s\n", msg);
    assert_int_equal(rc, NUMACOLL_OK);
    atomic_store_explicit(&sh->nkeys, 3 * NKEYS, memory_order_relaxed);
    c = check_keys(db, 3 * NKEYS, 0);
    expect_all(&c, 3 * NKEYS, "server after the header attack");
    /* neither does a reader attached before (its own copies, and the new generations) */
    c = reader_check(sh, reader, 2);
    expect_all(&c, 3 * NKEYS, "reader after the header attack");
    /* a new reader cannot trust the header: refused, with the field named */
    pid_t nr = kvt_spawn(new_reader, sh);
    assert_int_equal(kvt_reap(nr, 30), 0);
    assert_int_equal(atomic_load_explicit(&sh->attach_rc, memory_order_relaxed), NUMACOLL_ERR_ARG);
    assert_non_null(strstr(sh->msg, "out of range"));

    /* 2. the table: a quarter of the live buckets point anywhere, an entry header lies */
    got = run_hostile(sh, ATTACK_TABLE);
    assert_true(got & GOT_MMAP_RW << 8);
    c = check_keys(db, 3 * NKEYS, 0);
    expect_correct_or_corrupt(&c, "server after the table attack");
    assert_true(c.corrupt > 0);
    assert_true(c.ok > 3 * NKEYS / 2);
    c = reader_check(sh, reader, 3);
    expect_correct_or_corrupt(&c, "reader after the table attack");
    assert_true(c.corrupt > 0);
    /* a commit that grows the table meets the scribbles: corruption reported, nothing
     * applied; and the server goes on serving what is intact */
    rc = put_keys(db, 3 * NKEYS, 6 * NKEYS, 0, msg, sizeof msg);
    assert_int_equal(rc, NUMACOLL_ERR_STATE);
    assert_non_null(strstr(msg, "corrupt"));
    assert_non_null(strstr(msg, "nothing was applied"));
    numacoll_kvdb_stats_t st;
    assert_int_equal(numacoll_kvdb_stats(db, &st), NUMACOLL_OK);
    size_t n = 0;
    rc = numacoll_kvdb_iterate(db, NS, 0, NULL, NULL, &n);
    assert_true(rc == NUMACOLL_OK || rc == NUMACOLL_ERR_STATE);
    counts_t c2 = check_keys(db, 3 * NKEYS, 0);
    expect_correct_or_corrupt(&c2, "server after the failed commits");
    assert_int_equal(c2.ok, c.ok);
    c2 = reader_check(sh, reader, 4);
    expect_correct_or_corrupt(&c2, "reader after the failed commits");
    assert_int_equal(c2.ok, c.ok);

    atomic_store_explicit(&sh->phase, -1, memory_order_release);
    assert_int_equal(kvt_reap(reader, 30), 0);
    numacoll_kvdb_close(db);
    munmap(sh, sizeof *sh);
    nc_kvdb_test_write_protect(1);
}

/* ---- a hostile reader scribbling over the lock area (every scheme) ------------------------ */

#define SCR_SLOTS 4
#define SCR_COMMITS 4    /* the server's commits while the hostile reader keeps scribbling */
#define SCR_TIMEOUT "0.2" /* NUMACOLL_TIMEOUT of the server and the hostile reader, s */

enum { SCR_RANDOM, SCR_ONES, SCR_DEAD, SCR_OWN, SCR_PATTERNS };
static const char *const scr_name[SCR_PATTERNS] = {"random bytes", "all-ones", "dead pids",
                                                   "its own pid"};

/* Shared by the test, the server (its child) and the hostile reader (the server's child).
 * req, ack and stop are release-stored by their one writer and acquire-loaded by the other
 * side (see the wait loops); the counts and msg are written by the server before it exits
 * and read by the test after reaping it. */
typedef struct scr {
    char handle[64];
    const char *lock; /* a registry name: the same address in every forked process */
    _Atomic int attached; /* hostile: attached (attaching takes a read section) */
    _Atomic int req;  /* server: it holds the write lock; write pattern req-1 now */
    _Atomic int ack;  /* hostile: pattern ack-1 is written (and it keeps rewriting it) */
    _Atomic int stop; /* server: stop rewriting pattern stop-1 */
    int ok, timeout, other; /* the server's commits by status */
    uint64_t recovered;
    double longest; /* the longest commit, s */
    char msg[512];  /* why the server failed, or its first error other than a timeout */
} scr_t;

/* Wait until *@p flag >= @p want; 1 if process @p other ended (gone or a zombie) or 30 s
 * passed. Wait loop: the flag is written by the other process only (release, after the
 * work it announces); seeing the value (acquire) we may rely on that work. */
static int scr_wait(_Atomic int *flag, int want, pid_t other)
{
    uint64_t deadline = nc_now_ns() + 30000000000ull;
    while (atomic_load_explicit(flag, memory_order_acquire) < want) {
        if (nc_now_ns() > deadline || nc_pid_gone(other)) return 1;
        sched_yield();
    }
    return 0;
}

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void scr_write(int pattern, char *area, size_t bytes, const pid_t dead[2], uint64_t *seed)
{
    switch (pattern) {
    case SCR_RANDOM: /* random bytes in about half of the 8-byte words */
        for (size_t o = 0; o + 8 <= bytes; o += 8) {
            uint64_t r = xorshift(seed);
            if (r & 1) {
                r = xorshift(seed);
                memcpy(area + o, &r, 8);
            }
        }
        break;
    case SCR_ONES:
        memset(area, 0xff, bytes);
        break;
    default: /* every 4-byte word: a dead process's pid, or our own */
        for (size_t o = 0; o + 4 <= bytes; o += 4) {
            int32_t v = pattern == SCR_OWN ? (int32_t)getpid() : (int32_t)dead[(o / 4) & 1];
            memcpy(area + o, &v, 4);
        }
    }
}

/* The hostile reader: each pattern once while the server holds the write lock, then again
 * and again while it commits; after the last (its own pid) it exits without detaching. */
static int scr_hostile(void *arg)
{
    scr_t *sh = arg;
    numacoll_kvdb_t *db;
    if (numacoll_kvdb_attach(sh->handle, &db)) return 10;
    size_t bytes;
    char *area = nc_kvdb_lock_area(db, &bytes);
    atomic_store_explicit(&sh->attached, 1, memory_order_release);
    pid_t dead[2];
    for (int i = 0; i < 2; i++) {
        dead[i] = fork();
        if (dead[i] == 0) _exit(0);
        if (dead[i] < 0 || waitpid(dead[i], NULL, 0) != dead[i]) return 11;
    }
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    pid_t server = getppid();
    for (int p = 0; p < SCR_PATTERNS; p++) {
        if (scr_wait(&sh->req, p + 1, server)) return 12;
        scr_write(p, area, bytes, dead, &seed);
        atomic_store_explicit(&sh->ack, p + 1, memory_order_release);
        /* Wait loop: stop is written by the server only, once its commits are done */
        while (atomic_load_explicit(&sh->stop, memory_order_acquire) < p + 1) {
            if (nc_pid_gone(server)) return 13;
            scr_write(p, area, bytes, dead, &seed);
            sched_yield();
        }
    }
    _exit(0); /* no close: our pid stays in the words and in our slot */
}

/* One commit of 5 new keys; its status (a failed commit's batch is dropped). */
static int scr_commit(scr_t *sh, numacoll_kvdb_t *db, int *key)
{
    for (int i = 0; i < 5; i++, (*key)++) {
        char k[32], v[64];
        key_of(*key, k, sizeof k);
        size_t vl = value_of(*key, 0, v, sizeof v);
        if (numacoll_kvdb_put(db, NS, 0, k, v, vl)) return NUMACOLL_ERR_STATE;
    }
    uint64_t t0 = nc_now_ns();
    int rc = numacoll_kvdb_commit(db);
    double took = (double)(nc_now_ns() - t0) / 1e9;
    if (took > sh->longest) sh->longest = took;
    if (rc) {
        const char *e = numacoll_last_error();
        if (rc == NUMACOLL_ERR_TIMEOUT) {
            sh->timeout++;
        } else {
            if (!sh->other++)
                snprintf(sh->msg, sizeof sh->msg, "commit: %s: %s", numacoll_status_name(rc), e);
        }
        if (!e || !e[0]) snprintf(sh->msg, sizeof sh->msg, "commit: status %d, no message", rc);
        numacoll_kvdb_discard(db);
    } else {
        sh->ok++;
    }
    return rc;
}

static int scr_server(void *arg)
{
    scr_t *sh = arg;
    setenv("NUMACOLL_TIMEOUT", SCR_TIMEOUT, 1);
    numacoll_config_reload();
    numacoll_kvdb_params_t prm = {.lock = sh->lock, .max_readers = SCR_SLOTS, .buckets = 64,
                                  .heap_bytes = 4096, .grow = NUMACOLL_KVDB_GROW_YES};
    numacoll_kvdb_t *db;
    if (numacoll_kvdb_create(&prm, &db)) return 20;
    snprintf(sh->handle, sizeof sh->handle, "%s", numacoll_kvdb_handle(db));
    int key = 0;
    if (scr_commit(sh, db, &key)) return 21;
    pid_t h = kvt_spawn(scr_hostile, sh);
    if (scr_wait(&sh->attached, 1, h)) {
        snprintf(sh->msg, sizeof sh->msg, "the hostile reader did not attach");
        return 26;
    }
    for (int p = 0; p < SCR_PATTERNS; p++) {
        /* the words change under the write lock: the unlock must not care */
        int rc = nc_kvdb_wrlock(db);
        atomic_store_explicit(&sh->req, p + 1, memory_order_release);
        if (scr_wait(&sh->ack, p + 1, h)) {
            snprintf(sh->msg, sizeof sh->msg, "the hostile reader did not write %s",
                     scr_name[p]);
            return 22;
        }
        if (rc == NUMACOLL_OK) nc_kvdb_wrunlock(db);
        else if (rc == NUMACOLL_ERR_TIMEOUT) sh->timeout++;
        else sh->other++;
        /* and while it keeps writing them */
        for (int c = 0; c < SCR_COMMITS; c++)
            scr_commit(sh, db, &key);
        atomic_store_explicit(&sh->stop, p + 1, memory_order_release);
    }
    /* The hostile reader exits, its pid left in every word; a zombie until we reap it. */
    uint64_t deadline = nc_now_ns() + 30000000000ull;
    while (!nc_pid_gone(h) && nc_now_ns() < deadline)
        sched_yield();
    int ok0 = sh->ok;
    for (int c = 0; c < SCR_COMMITS; c++)
        scr_commit(sh, db, &key);
    int rh = kvt_reap(h, 30);
    if (rh != 0) {
        snprintf(sh->msg, sizeof sh->msg, "the hostile reader ended with status %d", rh);
        return 23;
    }
    numacoll_kvdb_stats_t st;
    if (numacoll_kvdb_stats(db, &st)) return 24;
    sh->recovered = st.recovered;
    /* pid lock words: a dead holder's pid, or no pid at all, is recovered by the writer */
    if (strstr(sh->lock, "mutex") && sh->ok - ok0 != SCR_COMMITS) {
        snprintf(sh->msg, sizeof sh->msg,
                 "%d of %d commits after the hostile reader exited failed (%s)",
                 SCR_COMMITS - (sh->ok - ok0), SCR_COMMITS, numacoll_last_error());
        return 25;
    }
    numacoll_kvdb_close(db);
    return 0;
}

/* Under every scheme: the server survives a reader that overwrites the lock area while
 * the server holds the write lock and while it commits (random bytes, all-ones, pids of
 * dead processes, its own pid, then exiting): it exits normally, each commit ends with
 * NUMACOLL_OK or an error with a message (NUMACOLL_ERR_TIMEOUT when a word names a live
 * process), none lasts beyond its NUMACOLL_TIMEOUT by much; with pid lock words (the
 * *mutex* schemes) only timeouts, and every commit after the reader is gone succeeds. */
static void test_lock_area(void **state)
{
    const char *lock = *state;
    if (strcmp(lock, "rwlock") == 0) {
        /* glibc's rwlock state is not ours to check: with pids of dead processes written
         * over it, pthread_rwlock_timedwrlock spins inside glibc forever, past its
         * deadline (the server is killed after 60 s; it does not crash) */
        print_message("rwlock: skipped: a scribbled POSIX rwlock hangs the writer inside "
                      "glibc (known limitation of the rwlock scheme)\n");
        skip();
    }
    kvt_clear_env();
    scr_t *sh = kvt_shared(sizeof(scr_t));
    sh->lock = lock;
    pid_t srv = kvt_spawn(scr_server, sh);
    int st = kvt_reap(srv, 60);
    print_message("%s: server status %d; commits: %d ok, %d timed out, %d other errors; "
                  "longest %.3f s; %llu recovered%s%s\n",
                  lock, st, sh->ok, sh->timeout, sh->other, sh->longest,
                  (unsigned long long)sh->recovered, sh->msg[0] ? "; " : "", sh->msg);
    if (st != 0)
        print_error("%s: the server %s\n", lock,
                    st == -1  ? "hung (killed after 60 s)"
                    : st > 128 ? "crashed"
                               : "failed");
    assert_int_equal(st, 0);
    assert_true(sh->longest < 30.0);
    if (strstr(lock, "mutex")) assert_int_equal(sh->other, 0);
    munmap(sh, sizeof *sh);
}

#define FOR_LOCK(name)                                                                          \
    {"test_protected/" name, test_protected, NULL, NULL, (void *)name},                          \
        {"test_unprotected/" name, test_unprotected, NULL, NULL, (void *)name}

int main(void)
{
    const struct CMUnitTest tests[] = {
        FOR_LOCK("seqlock"),        FOR_LOCK("reader-flags"), FOR_LOCK("rwlock"),
        FOR_LOCK("n-mutex-signal"), FOR_LOCK("1n-mutex"),     FOR_LOCK("2n-mutex"),
    };
    int fails = cmocka_run_group_tests(tests, NULL, NULL);
    /* the lock area: every registered scheme */
    struct CMUnitTest area[32];
    char names[32][64];
    int n = 0;
    for (int i = 0; i < nc_kvlock_registry_count && n < 32; i++, n++) {
        snprintf(names[n], sizeof names[n], "test_lock_area/%s", nc_kvlock_registry[i]->name);
        area[n] = (struct CMUnitTest){names[n], test_lock_area, NULL, NULL,
                                      (void *)nc_kvlock_registry[i]->name};
    }
    return fails + _cmocka_run_group_tests("kvdb hostile: lock area", area, (size_t)n, NULL, NULL);
}
