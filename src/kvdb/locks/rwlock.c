/*
 * rwlock: one process-shared POSIX rwlock (writer-preferring where glibc offers it).
 *
 * Correctness: the rwlock itself. Cost: every reader does an atomic read-modify-write on
 * the same lock word at lock and at unlock, so the line bounces between all reading cores
 * (the coherence traffic the paper blames); the writer pays one RMW plus its wait.
 *
 * Robustness: POSIX has no robust rwlock. Each reader therefore marks "inside" on its own
 * slot line after it has the read lock and clears it before releasing. The writer waits in
 * slices (pthread_rwlock_timedwrlock); after each slice it looks for slots marked inside
 * whose owner has died and releases their read hold on their behalf. This relies on
 * glibc's rwlock, whose read unlock is an anonymous decrement of the reader count (readers
 * are not owners), so any process can drop a dead reader's hold. A waiting reader polls
 * with pthread_rwlock_tryrdlock rather than blocking in pthread_rwlock_rdlock (glibc counts
 * a blocked reader in the lock word, and one killed there could never be discounted), so a
 * reader killed while it waits holds nothing (test_reader_dies_waiting). Only a reader
 * killed in the few instructions between getting the lock and marking its slot (or between
 * clearing the mark and unlocking) cannot be recovered: the writer then fails with
 * NUMACOLL_ERR_TIMEOUT if NUMACOLL_TIMEOUT is set. A waiting reader checks the server, so a
 * server that dies holding the write lock gives it NUMACOLL_ERR_PEER_DEAD, not a hang.
 */
#include "lock.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#define SLICE_NS 10000000ull /* 10 ms */

typedef struct rw_slot {
    _Atomic uint32_t inside; /* written by the slot's reader (and by the writer for a dead one) */
} rw_slot_t;

static pthread_rwlock_t *rw_of(nc_kvlock_t *l)
{
    return (pthread_rwlock_t *)l->area;
}
static rw_slot_t *rw_slot(nc_kvlock_t *l, int i)
{
    return (rw_slot_t *)(l->area + nc_round_up(sizeof(pthread_rwlock_t), l->line) +
                         (size_t)i * l->line);
}

static size_t rw_bytes(int nslots, size_t line)
{
    return nc_round_up(sizeof(pthread_rwlock_t), line) + (size_t)nslots * line;
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
    return NUMACOLL_OK;
}

static void deadline_in(struct timespec *ts, uint64_t ns)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ns += (uint64_t)ts->tv_nsec;
    ts->tv_sec += (time_t)(ns / 1000000000ull);
    ts->tv_nsec = (long)(ns % 1000000000ull);
}

static int rw_rd_lock(nc_kvlock_t *l, uint64_t *token)
{
    (void)token;
    int rc = pthread_rwlock_tryrdlock(rw_of(l));
    if (NC_UNLIKELY(rc != 0)) {
        nc_kvwait_t kw;
        nc_kvwait_init(&kw, l, l->server_pid, "kvdb rwlock read");
        /* Wait loop: the lock word is written by the writer (the server, taking and
         * releasing the write lock) and by readers; EBUSY means a writer holds it or waits
         * for it (writer preference). We poll with tryrdlock instead of blocking in
         * pthread_rwlock_(timed)rdlock: glibc counts a blocked reader in the lock word, and
         * one killed there leaves a hold that nobody can tell from a live reader's, so the
         * writer would wait forever. A failed tryrdlock leaves the word unchanged. On
         * success we hold a read lock with the rwlock's acquire semantics: we see every
         * write of the last write section. The wait spins, yields, then naps (the shared
         * wait policy), fails with NUMACOLL_ERR_PEER_DEAD if the server dies and with
         * NUMACOLL_ERR_TIMEOUT after NUMACOLL_TIMEOUT. */
        while (rc == EBUSY || rc == EAGAIN) {
            int st = nc_kvwait_step(&kw);
            if (st) return st;
            rc = pthread_rwlock_tryrdlock(rw_of(l));
        }
        if (rc)
            return nc_error(NUMACOLL_ERR_SYS, "kvdb rwlock: read lock failed: %s", strerror(rc));
    }
    /* relaxed: only read by the writer's recovery after it timed out waiting for us */
    atomic_store_explicit(&rw_slot(l, l->slot)->inside, 1, memory_order_relaxed);
    return NUMACOLL_OK;
}

static int rw_rd_unlock(nc_kvlock_t *l, uint64_t token)
{
    (void)token;
    atomic_store_explicit(&rw_slot(l, l->slot)->inside, 0, memory_order_relaxed);
    pthread_rwlock_unlock(rw_of(l));
    return NUMACOLL_OK;
}

/* Release the read holds of readers that died inside. Returns how many. */
static int rw_recover(nc_kvlock_t *l)
{
    int n = 0;
    for (int i = 0; i < l->nslots; i++) {
        rw_slot_t *s = rw_slot(l, i);
        /* exchange: a reader taking over the slot (rw_slot_reset) may race with us; only
         * the one that swaps 1 -> 0 drops the hold */
        if (atomic_load_explicit(&s->inside, memory_order_relaxed) && nc_kvlock_slot_dead(l, i) &&
            atomic_exchange_explicit(&s->inside, 0, memory_order_relaxed) == 1) {
            pthread_rwlock_unlock(rw_of(l)); /* glibc: drops one anonymous reader hold */
            l->recovered++;
            n++;
            nc_log(1, -1, l->nslots, "kvdb rwlock: released the read hold of dead reader slot %d",
                   i);
        }
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
    /* a dead previous owner that was inside still holds the lock: drop its hold now */
    rw_slot_t *s = rw_slot(l, slot);
    if (atomic_exchange_explicit(&s->inside, 0, memory_order_relaxed) == 1) {
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
