/*
 * rwlock: one process-shared POSIX rwlock (writer-preferring where glibc offers it).
 *
 * Correctness: the rwlock itself. Cost: every reader does an atomic read-modify-write on
 * the same lock word at lock and at unlock, so the line bounces between all reading cores
 * (the coherence traffic the paper blames); the writer pays one RMW plus its wait.
 *
 * Robustness: POSIX has no robust rwlock. Each reader therefore keeps the state of its
 * hold in its own slot word: OUT, ACQ (trying to lock), HOLD, REL (unlocking), with a
 * generation that counts its changes. The writer waits in slices
 * (pthread_rwlock_timedwrlock); after each slice it releases the holds of dead readers on
 * their behalf. This relies on glibc's rwlock, whose read unlock is an anonymous decrement
 * of the reader count (readers are not owners), so any process can drop a dead reader's
 * hold. A dead reader in HOLD surely holds; one killed in ACQ (between getting the lock and
 * saying so) or in REL (between saying it lets go and doing so) may or may not. Those
 * holds are recovered by counting (rw_recover_anon): the reader count in glibc's lock word,
 * read between two collections of all slot words that agree, minus every hold a slot
 * accounts for or may account for, is the number of holds of dead readers that no slot
 * shows, and exactly that many are released. It needs glibc's lock word layout, checked
 * when the lock is created (rw_count_works); without it such a hold is not recovered and the
 * writer fails with NUMACOLL_ERR_TIMEOUT if NUMACOLL_TIMEOUT is set. A waiting reader polls
 * with pthread_rwlock_tryrdlock rather than blocking in pthread_rwlock_rdlock (glibc counts
 * a blocked reader in the lock word, and one killed there would be counted as a holder), so
 * a reader killed while it waits holds nothing (test_reader_dies_waiting). A waiting reader
 * checks the server, so a server that dies holding the write lock gives it
 * NUMACOLL_ERR_PEER_DEAD, not a hang.
 */
#include "lock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLICE_NS 10000000ull /* 10 ms */

/* A slot word: (generation << 2) | state. Written by the slot's reader (plain stores: it
 * is the only writer while alive) and, for a dead reader, by whoever claims the slot
 * (compare-exchange, so that one claimer releases a hold once). */
enum { RW_OUT = 0, RW_ACQ = 1, RW_HOLD = 2, RW_REL = 3 };
#define RW_STATE(w) ((unsigned)((w)&3u))

typedef struct rw_slot {
    _Atomic uint64_t word;
} rw_slot_t;

typedef struct rw_head {
    pthread_rwlock_t rw;
    int count_ok; /* glibc's reader count is readable (rw_count_works); set by init */
} rw_head_t;

/* Tests only: called at the named points of a read lock and unlock (NULL otherwise). */
void (*nc_kvlock_rw_test_hook)(int point);

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
 * pthread_rwlock_common.c); -1 where that layout is not known. Acquire: a reader's slot
 * state stored before its release fence and lock-word RMW is visible after this load. */
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
    head_of(l)->count_ok = rw_count_works(rw_of(l));
    if (!head_of(l)->count_ok)
        nc_log(1, -1, l->nslots,
               "kvdb rwlock: this C library's rwlock does not show its reader count; a reader "
               "killed while it takes or drops the lock cannot be recovered");
    return NUMACOLL_OK;
}

static void deadline_in(struct timespec *ts, uint64_t ns)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ns += (uint64_t)ts->tv_nsec;
    ts->tv_sec += (time_t)(ns / 1000000000ull);
    ts->tv_nsec = (long)(ns % 1000000000ull);
}

/* Our own slot's next state (we are its only writer: a plain load of our own word). */
static inline uint64_t next_word(rw_slot_t *s, unsigned state)
{
    uint64_t w = atomic_load_explicit(&s->word, memory_order_relaxed);
    return ((w >> 2) + 1) << 2 | state;
}

/* One tryrdlock with the slot in ACQ around it. On failure the slot gets its previous word
 * back, generation included: nothing was held, and a waiting reader's attempts then do not
 * look like changes to the writer's collections (rw_recover_anon). */
static int rw_try(nc_kvlock_t *l, rw_slot_t *s)
{
    uint64_t before = atomic_load_explicit(&s->word, memory_order_relaxed);
    atomic_store_explicit(&s->word, ((before >> 2) + 1) << 2 | RW_ACQ, memory_order_relaxed);
    /* release fence: ACQ is visible to anyone whose acquire load of the lock word sees the
     * RMW of a successful tryrdlock below (rw_readers) */
    atomic_thread_fence(memory_order_release);
    if (NC_UNLIKELY(nc_kvlock_rw_test_hook != NULL)) nc_kvlock_rw_test_hook(0);
    int rc = pthread_rwlock_tryrdlock(rw_of(l));
    if (rc != 0) {
        /* release: our failed attempt is over before anyone sees OUT again */
        atomic_store_explicit(&s->word, before, memory_order_release);
        return rc;
    }
    if (NC_UNLIKELY(nc_kvlock_rw_test_hook != NULL)) nc_kvlock_rw_test_hook(1);
    /* relaxed: HOLD only says more surely what ACQ said; the rwlock orders the data */
    atomic_store_explicit(&s->word, next_word(s, RW_HOLD), memory_order_relaxed);
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
         * one killed there would count as a holder that no slot shows. A failed tryrdlock
         * leaves the word unchanged. On success we hold a read lock with the rwlock's acquire
         * semantics: we see every write of the last write section. The wait spins, yields,
         * then naps (the shared wait policy), fails with NUMACOLL_ERR_PEER_DEAD if the server
         * dies and with NUMACOLL_ERR_TIMEOUT after NUMACOLL_TIMEOUT. */
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
    atomic_store_explicit(&s->word, next_word(s, RW_REL), memory_order_relaxed);
    /* release fence: REL is visible to anyone whose acquire load of the lock word sees our
     * unlock's RMW (rw_readers), so no collection shows us in HOLD without our hold */
    atomic_thread_fence(memory_order_release);
    if (NC_UNLIKELY(nc_kvlock_rw_test_hook != NULL)) nc_kvlock_rw_test_hook(2);
    pthread_rwlock_unlock(rw_of(l));
    /* release: a collection that sees OUT sees our unlock in the lock word too */
    atomic_store_explicit(&s->word, next_word(s, RW_OUT), memory_order_release);
    return NUMACOLL_OK;
}

/* Claim slot @p i's word @p w (a dead reader's) by setting it to OUT; 1 if we did. */
static int claim(rw_slot_t *s, uint64_t w)
{
    /* relaxed: the exchange only decides who acts on the dead reader's state */
    return atomic_compare_exchange_strong_explicit(&s->word, &w, ((w >> 2) + 1) << 2 | RW_OUT,
                                                   memory_order_relaxed, memory_order_relaxed);
}

/* Release the holds of dead readers in HOLD (they surely hold). Returns how many. */
static int rw_recover_held(nc_kvlock_t *l)
{
    int n = 0;
    for (int i = 0; i < l->nslots; i++) {
        rw_slot_t *s = rw_slot(l, i);
        /* acquire: pairs with nothing in particular; the state is re-checked by the claim */
        uint64_t w = atomic_load_explicit(&s->word, memory_order_acquire);
        if (RW_STATE(w) == RW_HOLD && nc_kvlock_slot_dead(l, i) && claim(s, w)) {
            pthread_rwlock_unlock(rw_of(l)); /* glibc: drops one anonymous reader hold */
            l->recovered++;
            n++;
            nc_log(1, -1, l->nslots, "kvdb rwlock: released the read hold of dead reader slot %d",
                   i);
        }
    }
    return n;
}

/* The holds of dead readers that no slot shows for sure: readers killed in ACQ or REL
 * (they may or may not hold), also after their slots were taken over (rw_slot_reset). A
 * live reader's hold always shows in its slot (ACQ, HOLD or REL from before its tryrdlock
 * to after its unlock). So: collect every slot's owner and word, read the reader count R,
 * collect again. A slot whose owner and word did not change in between
 *  - in OUT held nothing then (its last unlock came before its release store of OUT, which
 *    the first acquire load saw; a new hold would have stored ACQ before its RMW, and the
 *    second load, after R's acquire load, would see that);
 *  - in HOLD holds (a dead owner's hold is rw_recover_held's, not ours);
 *  - in ACQ or REL with a live owner may hold;
 *  - in ACQ or REL with a dead owner is what we look for: not counted.
 * A slot that changed may hold. R minus every slot that holds or may hold is a number of
 * holds that only dead readers in ACQ or REL, or dead readers whose slots were taken over,
 * can have, and exactly that many are released. Counting a maybe-holder as a holder can
 * only release too few (the next slice tries again), never one too many. Returns how
 * many it released. */
static int rw_recover_anon(nc_kvlock_t *l)
{
    if (!head_of(l)->count_ok) return 0;
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
        if (x != w[i] || p != o[i] || RW_STATE(x) == RW_HOLD)
            maybe++;
        else if (RW_STATE(x) != RW_OUT && !nc_pid_gone(p))
            maybe++;
    }
    free(o);
    free(w);
    if (r - maybe > (long)l->nslots + 1024) { /* not a count of holds: leave it alone */
        nc_log(1, -1, l->nslots, "kvdb rwlock: implausible reader count %ld; not recovering", r);
        return 0;
    }
    int n = r > maybe ? (int)(r - maybe) : 0;
    for (int k = 0; k < n; k++)
        pthread_rwlock_unlock(rw_of(l)); /* glibc: drops one anonymous reader hold */
    if (n) {
        l->recovered += (uint64_t)n;
        nc_log(1, -1, l->nslots,
               "kvdb rwlock: released %d read hold(s) of readers killed while taking or "
               "dropping the lock",
               n);
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
        rw_recover_held(l);
        rw_recover_anon(l);
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
    /* a dead previous owner in HOLD still holds the lock: drop its hold now; one in ACQ or
     * REL may hold: its hold, if any, is left to the writer's count (rw_recover_anon) */
    rw_slot_t *s = rw_slot(l, slot);
    uint64_t w = atomic_load_explicit(&s->word, memory_order_acquire);
    if (RW_STATE(w) != RW_OUT && claim(s, w) && RW_STATE(w) == RW_HOLD) {
        pthread_rwlock_unlock(rw_of(l));
        l->recovered++;
    }
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
