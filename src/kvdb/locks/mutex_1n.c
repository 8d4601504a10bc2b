/*
 * 1n-mutex: one robust mutex per reader slot; a reader locks only its own, the writer
 * locks all of them (slot order) and unlocks them all.
 *
 * Correctness: a read section of reader x and a write section both hold mutex x, so they
 * exclude each other; readers never share a lock word, so no coherence traffic between
 * readers. Cost: the writer does nslots lock/unlock pairs (one RMW on each reader's line)
 * and waits for every reader inside; a reader that keeps re-locking may delay the writer
 * (no writer preference). A dead reader's mutex is recovered by EOWNERDEAD.
 */
#include "lock.h"

static size_t stride(size_t line)
{
    return nc_round_up(sizeof(pthread_mutex_t), line);
}
static pthread_mutex_t *mx(nc_kvlock_t *l, int i)
{
    return (pthread_mutex_t *)(l->area + (size_t)i * stride(l->line));
}

static size_t m1_bytes(int nslots, size_t line)
{
    return (size_t)nslots * stride(line);
}

static int m1_init(nc_kvlock_t *l)
{
    for (int i = 0; i < l->nslots; i++) {
        int rc = nc_kvlock_mutex_init(mx(l, i), "1n-mutex reader mutex");
        if (rc) return rc;
    }
    return NUMACOLL_OK;
}

static void m1_fini(nc_kvlock_t *l)
{
    for (int i = 0; i < l->nslots; i++)
        pthread_mutex_destroy(mx(l, i));
}

static int m1_rd_lock(nc_kvlock_t *l, uint64_t *token)
{
    (void)token;
    return nc_kvlock_mutex_lock(l, mx(l, l->slot), NULL, "1n-mutex reader mutex");
}

static int m1_rd_unlock(nc_kvlock_t *l, uint64_t token)
{
    (void)token;
    pthread_mutex_unlock(mx(l, l->slot));
    return NUMACOLL_OK;
}

static int m1_wr_lock(nc_kvlock_t *l)
{
    for (int i = 0; i < l->nslots; i++) {
        int rc = nc_kvlock_mutex_lock(l, mx(l, i), NULL, "1n-mutex reader mutex");
        if (rc) {
            while (--i >= 0)
                pthread_mutex_unlock(mx(l, i));
            return rc;
        }
    }
    return NUMACOLL_OK;
}

static int m1_wr_unlock(nc_kvlock_t *l)
{
    for (int i = 0; i < l->nslots; i++)
        pthread_mutex_unlock(mx(l, i));
    return NUMACOLL_OK;
}

const nc_kvlock_ops_t nc_kvlock_1n_mutex = {
    .name = "1n-mutex",
    .description = "a robust mutex per reader; the writer locks all N",
    .area_bytes = m1_bytes,
    .init = m1_init,
    .fini = m1_fini,
    .rd_lock = m1_rd_lock,
    .rd_unlock = m1_rd_unlock,
    .wr_lock = m1_wr_lock,
    .wr_unlock = m1_wr_unlock,
};
