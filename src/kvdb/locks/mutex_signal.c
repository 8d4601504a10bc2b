/*
 * n-mutex-signal: the paper's N(mutex+signal). Per reader slot x a plain signal variable
 * VS[x] (written only by the writer) and a mutex LP[x] (a pid lock word, pidlock.c), each
 * alone on its line.
 *   writer: for i: VS[i] = 1; for i: lock LP[i]; ... write ...;
 *           for i: unlock LP[i]; for i: VS[i] = 0
 *   reader x: while VS[x] == 1: wait; lock LP[x]; ... read ...; unlock LP[x]
 *
 * Correctness comes from LP alone (both sections hold LP[x]); VS is a hint that keeps new
 * readers away while the writer is collecting the mutexes, so the writer is not starved.
 * A reader that read VS[x] == 0 just before the writer set it simply gets LP[x] first and
 * the writer waits for that one section. Cost: the reader's lock is one load of a line it
 * only reads (it changes only when the writer writes) plus one mutex lock/unlock: one RMW
 * fewer than 2n-mutex. The writer does N plain stores plus N lock/unlock pairs, and never
 * reads VS back. The signal is a plain flag, not a condition variable: a reader that sees
 * it set polls it with the wait policy (spin, yield, nap) and sleeps in the kernel only on
 * LP[x], whose futex the writer's unlock wakes.
 */
#include "lock.h"

#define WHAT "n-mutex-signal mutex"

typedef struct ms_signal {
    _Atomic uint32_t vs; /* written by the writer only */
} ms_signal_t;

static size_t stride(size_t line)
{
    return 2 * line;
}
static ms_signal_t *vs(nc_kvlock_t *l, int i)
{
    return (ms_signal_t *)(l->area + (size_t)i * stride(l->line));
}
static nc_pidlock_t *lp(nc_kvlock_t *l, int i)
{
    return (nc_pidlock_t *)(l->area + (size_t)i * stride(l->line) + l->line);
}

static size_t ms_bytes(int nslots, size_t line)
{
    return (size_t)nslots * stride(line);
}

static int ms_init(nc_kvlock_t *l)
{
    for (int i = 0; i < l->nslots; i++)
        nc_pidlock_init(lp(l, i));
    return NUMACOLL_OK;
}

static int ms_rd_lock(nc_kvlock_t *l, uint64_t *token)
{
    (void)token;
    int x = l->slot;
    /* VS[x] is written by the writer only. Seeing 0 lets us try the mutex (correctness
     * does not depend on it, relaxed suffices); seeing 1 means a write is being set up. */
    if (NC_UNLIKELY(atomic_load_explicit(&vs(l, x)->vs, memory_order_relaxed))) {
        nc_kvwait_t kw;
        nc_kvwait_init(&kw, l, l->server_pid, "kvdb n-mutex-signal read (waiting for VS)");
        /* Wait loop: VS[x] is written by the writer (1 before it collects the mutexes, 0
         * after it released them). Seeing 0 (relaxed) promises nothing about the store:
         * it only says that now is a good time to take LP[x], which orders us. */
        while (atomic_load_explicit(&vs(l, x)->vs, memory_order_relaxed)) {
            int rc = nc_kvwait_step(&kw);
            if (rc) return rc;
        }
    }
    return nc_pidlock_lock(l, lp(l, x), WHAT);
}

static int ms_rd_unlock(nc_kvlock_t *l, uint64_t token)
{
    (void)token;
    nc_pidlock_unlock(l, lp(l, l->slot), WHAT);
    return NUMACOLL_OK;
}

static int ms_wr_lock(nc_kvlock_t *l)
{
    for (int i = 0; i < l->nslots; i++)
        atomic_store_explicit(&vs(l, i)->vs, 1, memory_order_relaxed);
    for (int i = 0; i < l->nslots; i++) {
        int rc = nc_pidlock_lock(l, lp(l, i), WHAT);
        if (rc) {
            while (--i >= 0)
                nc_pidlock_unlock(l, lp(l, i), WHAT);
            for (int j = 0; j < l->nslots; j++)
                atomic_store_explicit(&vs(l, j)->vs, 0, memory_order_relaxed);
            return rc;
        }
    }
    return NUMACOLL_OK;
}

static int ms_wr_unlock(nc_kvlock_t *l)
{
    for (int i = 0; i < l->nslots; i++)
        nc_pidlock_unlock(l, lp(l, i), WHAT);
    for (int i = 0; i < l->nslots; i++)
        atomic_store_explicit(&vs(l, i)->vs, 0, memory_order_relaxed);
    return NUMACOLL_OK;
}

const nc_kvlock_ops_t nc_kvlock_n_mutex_signal = {
    .name = "n-mutex-signal",
    .description = "the paper's N(mutex+signal): per reader a plain signal variable and a "
                   "mutex (pid lock word); the writer sets all signals, then locks all mutexes",
    .area_bytes = ms_bytes,
    .init = ms_init,
    .rd_lock = ms_rd_lock,
    .rd_unlock = ms_rd_unlock,
    .wr_lock = ms_wr_lock,
    .wr_unlock = ms_wr_unlock,
};
