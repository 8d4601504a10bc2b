/*
 * 1n-mutex: one mutex per reader slot; a reader locks only its own, the writer locks all
 * of them (slot order) and unlocks them all. The mutexes are pid lock words (pidlock.c),
 * each alone on its line.
 *
 * Correctness: a read section of reader x and a write section both hold mutex x, so they
 * exclude each other; readers never share a lock word, so no coherence traffic between
 * readers. Cost: the writer does nslots lock/unlock pairs (one RMW on each reader's line)
 * and waits for every reader inside; a reader that keeps re-locking may delay the writer
 * (no writer preference). A dead reader's mutex is taken over by whoever locks it next
 * (the writer, or the reader that takes over the slot).
 */
#include "lock.h"

#define WHAT "1n-mutex reader mutex"

static nc_pidlock_t *mx(nc_kvlock_t *l, int i)
{
    return (nc_pidlock_t *)(l->area + (size_t)i * l->line);
}

static size_t m1_bytes(int nslots, size_t line)
{
    return (size_t)nslots * line;
}

static int m1_init(nc_kvlock_t *l)
{
    for (int i = 0; i < l->nslots; i++)
        nc_pidlock_init(mx(l, i));
    return NUMACOLL_OK;
}

static int m1_rd_lock(nc_kvlock_t *l, uint64_t *token)
{
    (void)token;
    return nc_pidlock_lock(l, mx(l, l->slot), WHAT);
}

static int m1_rd_unlock(nc_kvlock_t *l, uint64_t token)
{
    (void)token;
    nc_pidlock_unlock(l, mx(l, l->slot), WHAT);
    return NUMACOLL_OK;
}

static int m1_wr_lock(nc_kvlock_t *l)
{
    for (int i = 0; i < l->nslots; i++) {
        int rc = nc_pidlock_lock(l, mx(l, i), WHAT);
        if (rc) {
            while (--i >= 0)
                nc_pidlock_unlock(l, mx(l, i), WHAT);
            return rc;
        }
    }
    return NUMACOLL_OK;
}

static int m1_wr_unlock(nc_kvlock_t *l)
{
    for (int i = 0; i < l->nslots; i++)
        nc_pidlock_unlock(l, mx(l, i), WHAT);
    return NUMACOLL_OK;
}

const nc_kvlock_ops_t nc_kvlock_1n_mutex = {
    .name = "1n-mutex",
    .description = "a mutex (pid lock word) per reader; the writer locks all N",
    .area_bytes = m1_bytes,
    .init = m1_init,
    .rd_lock = m1_rd_lock,
    .rd_unlock = m1_rd_unlock,
    .wr_lock = m1_wr_lock,
    .wr_unlock = m1_wr_unlock,
};
