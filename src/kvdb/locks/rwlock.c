/*
 * rwlock: one process-shared POSIX rwlock (writer-preferring where glibc offers it).
 *
 * Correctness: the rwlock itself. Cost: every reader does an atomic read-modify-write on
 * the same lock word at lock and at unlock, so the line bounces between all reading cores
 * (the coherence traffic the paper blames); the writer pays one RMW plus its wait.
 *
 * Robustness: POSIX has no robust rwlock, but glibc's read unlock is an anonymous
 * decrement of the reader count (readers are not owners), so any process can drop a dead
 * reader's hold, if it knows there is one. Each reader says IN in its own slot word before
 * it tries the lock and OUT after it has unlocked (or failed to lock), with a generation
 * that counts its changes. A reader killed while IN may or may not hold the lock. The
 * writer waits in slices (pthread_rwlock_timedwrlock) and after each slice counts
 * (rw_recover): the reader count in glibc's lock word, read between two collections of all
 * slot words, minus every reader whose slot shows it may hold, is a number of holds of
 * dead readers, and exactly that many are released; never one too many. The count needs
 * glibc's lock word layout, checked when the lock is created (rw_count_works); without it
 * nothing is recovered and the writer fails with NUMACOLL_ERR_TIMEOUT if NUMACOLL_TIMEOUT
 * is set. A waiting reader polls with pthread_rwlock_tryrdlock rather than blocking in
 * pthread_rwlock_rdlock (glibc counts a blocked reader in the lock word, and one killed
 * there would count as a holder no slot can account for), so a reader killed while it
 * waits holds nothing (test_reader_dies_waiting). A waiting reader checks the server, so a
 * server that dies holding the write lock gives it NUMACOLL_ERR_PEER_DEAD, not a hang.
 */
#include "lock.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLICE_NS 10000000ull /* 10 ms */

/* A slot word: (generation << 1) | IN. Written only by the slot's owner (plain stores),
 * also by a new owner clearing a dead one's IN (rw_slot_reset). */
#define RW_IN 1u
static inline uint64_t rw_next(uint64_t w, unsigned in) /* next generation, IN or OUT */
{
    return ((w >> 1) + 1) << 1 | in;
}

typedef struct rw_slot {
    _Atomic uint64_t word;
} rw_slot_t;

typedef struct rw_head {
    pthread_rwlock_t rw;
} rw_head_t;

/* Tests only (nc_kvlock_rw_set_test_hook); static: one RIP-relative load per check. */
static void (*test_hook)(int point);

void nc_kvlock_rw_set_test_hook(void (*hook)(int point))
{
    test_hook = hook;
}

static rw_head_t *head_of(nc_kvlock_t *l)
{
    return (rw_head_t *)l->area;
}
static pthread_rwlock_t *rw_of(nc_kvlock_t *l)
{
    return &head_of(l)->rw;
}
static rw_slot_t *rw_slot(nc_kvlock_t *l, int i)
{
    return (rw_slot_t *)(l->area + nc_round_up(sizeof(rw_head_t), l->line) + (size_t)i * l->line);
}

static size_t rw_bytes(int nslots, size_t line)
{
    return nc_round_up(sizeof(rw_head_t), line) + (size_t)nslots * line;
}

/* Readers holding @p rw, from glibc's lock word (bits 3 and up of __readers, see glibc's
 * pthread_rwlock_common.c); -1 where that layout is not known. Acquire: a reader's IN,
 * stored before its release fence and its lock-word RMW, is visible after this load. */
static long rw_readers(pthread_rwlock_t *rw)
{
#ifdef __GLIBC__
    return (long)(__atomic_load_n(&rw->__data.__readers, __ATOMIC_ACQUIRE) >> 3);
#else
    (void)rw;
    return -1;
#endif
}

/* Whether rw_readers follows this lock: 0, 1 and 2 read holds and back (the lock is new:
 * nobody else can use it yet). */
static int rw_count_works(pthread_rwlock_t *rw)
{
    int ok = rw_readers(rw) == 0;
    for (int i = 1; i <= 2 && ok; i++)
        ok = pthread_rwlock_tryrdlock(rw) == 0 && rw_readers(rw) == i;
    while (rw_readers(rw) > 0)
        pthread_rwlock_unlock(rw);
    return ok && rw_readers(rw) == 0;
}

static int rw_init(nc_kvlock_t *l)
{
    pthread_rwlockattr_t a;
    int rc = pthread_rwlockattr_init(&a);
    if (!rc) rc = pthread_rwlockattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
#ifdef __GLIBC__ /* an enum constant, not a macro */
    if (!rc) rc = pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
#endif
    if (!rc) rc = pthread_rwlock_init(rw_of(l), &a);
    pthread_rwlockattr_destroy(&a);
    if (rc)
        return nc_error(NUMACOLL_ERR_SYS, "kvdb rwlock: cannot create the rwlock: %s",
                        strerror(rc));
    l->wstate = (uint64_t)rw_count_works(rw_of(l)); /* the writer's own: only it recovers */
    if (!l->wstate)
        nc_log(1, -1, l->nslots,
               "kvdb rwlock: this C library's rwlock does not show its reader count; the read "
               "hold of a reader that dies inside cannot be recovered");
    return NUMACOLL_OK;
}

static void deadline_in(struct timespec *ts, uint64_t ns)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ns += (uint64_t)ts->tv_nsec;
    ts->tv_sec += (time_t)(ns / 1000000000ull);
    ts->tv_nsec = (long)(ns % 1000000000ull);
}

/* One tryrdlock with the slot IN around it. On failure the slot gets its previous word
 * back, generation included: nothing was held, and a waiting reader's attempts then do not
 * look like changes to the writer's collections (rw_recover). */
static int rw_try(nc_kvlock_t *l, rw_slot_t *s)
{
    /* relaxed: our own word (OUT), of which we are the only writer */
    uint64_t before = atomic_load_explicit(&s->word, memory_order_relaxed);
    atomic_store_explicit(&s->word, rw_next(before, RW_IN), memory_order_relaxed);
    /* release fence: IN is visible to anyone whose acquire load of the lock word sees the
     * RMW of a successful tryrdlock below (rw_readers) */
    atomic_thread_fence(memory_order_release);
    if (NC_UNLIKELY(test_hook != NULL)) test_hook(0);
    int rc = pthread_rwlock_tryrdlock(rw_of(l));
    if (NC_UNLIKELY(rc != 0)) {
        /* release: our failed attempt is over before anyone sees OUT again */
        atomic_store_explicit(&s->word, before, memory_order_release);
        return rc;
    }
    if (NC_UNLIKELY(test_hook != NULL)) test_hook(1);
    return 0;
}

static int rw_rd_lock(nc_kvlock_t *l, uint64_t *token)
{
    (void)token;
    rw_slot_t *s = rw_slot(l, l->slot);
    int rc = rw_try(l, s);
    if (NC_UNLIKELY(rc != 0)) {
        nc_kvwait_t kw;
        nc_kvwait_init(&kw, l, l->server_pid, "kvdb rwlock read");
        /* Wait loop: the lock word is written by the writer (the server, taking and
         * releasing the write lock) and by readers; EBUSY means a writer holds it or waits
         * for it (writer preference). We poll with tryrdlock instead of blocking in
         * pthread_rwlock_(timed)rdlock: glibc counts a blocked reader in the lock word, and
         * one killed there would count as a holder that no slot accounts for. A failed
         * tryrdlock leaves the word unchanged. On success we hold a read lock with the
         * rwlock's acquire semantics: we see every write of the last write section. The
         * wait spins, yields, then naps (the shared wait policy), fails with
         * NUMACOLL_ERR_PEER_DEAD if the server dies and with NUMACOLL_ERR_TIMEOUT after
         * NUMACOLL_TIMEOUT. */
        while (rc == EBUSY || rc == EAGAIN) {
            int st = nc_kvwait_step(&kw);
            if (st) return st;
            rc = rw_try(l, s);
        }
        if (rc)
            return nc_error(NUMACOLL_ERR_SYS, "kvdb rwlock: read lock failed: %s", strerror(rc));
    }
    return NUMACOLL_OK;
}

static int rw_rd_unlock(nc_kvlock_t *l, uint64_t token)
{
    (void)token;
    rw_slot_t *s = rw_slot(l, l->slot);
    pthread_rwlock_unlock(rw_of(l));
    if (NC_UNLIKELY(test_hook != NULL)) test_hook(2);
    /* release: whoever sees OUT sees our unlock in the lock word too. Relaxed load: our
     * own word (IN), of which we are the only writer */
    atomic_store_explicit(&s->word,
                          rw_next(atomic_load_explicit(&s->word, memory_order_relaxed), 0),
                          memory_order_release);
    return NUMACOLL_OK;
}

/* Release the read holds of dead readers that no slot can account for. A live reader's
 * hold always shows in its slot (IN from before its tryrdlock to after its unlock). So:
 * collect every slot's owner and word, read the reader count R, collect again. A slot
 * whose owner and word did not change in between
 *  - OUT held nothing then (its last unlock came before its release store of OUT, which
 *    the first acquire load saw; a new hold would have stored IN before its RMW, and the
 *    second load, after R's acquire load, would see that);
 *  - IN with a live owner may hold: counted as holding;
 *  - IN with a dead owner may hold too, and is what we look for: not counted.
 * A slot that changed may hold: counted. R minus the count is a number of holds that only
 * dead readers can have (IN, or with their slots taken over since), and exactly that many
 * are released. Counting a maybe-holder as a holder can only release too few (the next
 * slice tries again), never one too many. Only the writer runs this (a second counter at
 * the same time could release a hold twice). Returns how many it released. */
static int rw_recover(nc_kvlock_t *l)
{
    if (!l->wstate) return 0; /* glibc's reader count is not readable (rw_init) */
    uint64_t *w = malloc((size_t)l->nslots * sizeof *w);
    pid_t *o = malloc((size_t)l->nslots * sizeof *o);
    if (!w || !o) { /* skipped this slice */
        free(w), free(o);
        return 0;
    }
    for (int i = 0; i < l->nslots; i++) {
        /* acquire: a new owner's pid store comes before its claim of the word */
        o[i] = atomic_load_explicit(&nc_kvlock_slot(l, i)->pid, memory_order_acquire);
        w[i] = atomic_load_explicit(&rw_slot(l, i)->word, memory_order_acquire);
    }
    long r = rw_readers(rw_of(l)), maybe = 0;
    for (int i = 0; i < l->nslots; i++) {
        uint64_t x = atomic_load_explicit(&rw_slot(l, i)->word, memory_order_acquire);
        pid_t p = atomic_load_explicit(&nc_kvlock_slot(l, i)->pid, memory_order_acquire);
        maybe += x != w[i] || p != o[i] || ((x & RW_IN) && !nc_pid_gone(p));
    }
    free(w), free(o);
    if (r - maybe > (long)l->nslots + 1024) { /* not a count of holds: leave it alone */
        nc_log(1, -1, l->nslots, "kvdb rwlock: implausible reader count %ld; not recovering", r);
        return 0;
    }
    int n = r > maybe ? (int)(r - maybe) : 0;
    for (int k = 0; k < n; k++)
        pthread_rwlock_unlock(rw_of(l)); /* glibc: drops one anonymous reader hold */
    if (n) {
        l->recovered += (uint64_t)n;
        nc_log(1, -1, l->nslots, "kvdb rwlock: released %d read hold(s) of dead readers", n);
    }
    return n;
}

static int rw_wr_lock(nc_kvlock_t *l)
{
    uint64_t start = 0;
    while (1) {
        struct timespec ts;
        deadline_in(&ts, SLICE_NS);
        int rc = pthread_rwlock_timedwrlock(rw_of(l), &ts);
        if (rc == 0) return NUMACOLL_OK;
        if (rc != ETIMEDOUT)
            return nc_error(NUMACOLL_ERR_SYS, "kvdb rwlock: write lock failed: %s", strerror(rc));
        if (!start) start = nc_now_ns();
        rw_recover(l);
        if (l->timeout_ns && nc_now_ns() - start > l->timeout_ns)
            return nc_error(NUMACOLL_ERR_TIMEOUT,
                            "kvdb rwlock: write lock not granted within NUMACOLL_TIMEOUT (a "
                            "reader holds it, or died where its hold cannot be recovered)");
    }
}

static int rw_wr_unlock(nc_kvlock_t *l)
{
    pthread_rwlock_unlock(rw_of(l));
    return NUMACOLL_OK;
}

static void rw_slot_reset(nc_kvlock_t *l, int slot)
{
    /* the dead previous owner's IN goes; its hold, if any, stays for the writer's count
     * (rw_recover), the only one who releases holds on others' behalf */
    rw_slot_t *s = rw_slot(l, slot);
    /* relaxed load: the slot is ours now (its pid), nobody else writes its word; release
     * store: as any OUT of ours (rw_rd_unlock) */
    uint64_t w = atomic_load_explicit(&s->word, memory_order_relaxed);
    if (w & RW_IN) atomic_store_explicit(&s->word, rw_next(w, 0), memory_order_release);
}

const nc_kvlock_ops_t nc_kvlock_rwlock = {
    .name = "rwlock",
    .description = "one process-shared POSIX rwlock (writer-preferring); readers share one "
                   "lock word",
    .optimistic = 0,
    .area_bytes = rw_bytes,
    .init = rw_init,
    .rd_lock = rw_rd_lock,
    .rd_unlock = rw_rd_unlock,
    .wr_lock = rw_wr_lock,
    .wr_unlock = rw_wr_unlock,
    .slot_reset = rw_slot_reset,
};
