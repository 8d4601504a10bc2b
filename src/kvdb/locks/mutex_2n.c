/*
 * 2n-mutex: OpenPMIx gds/ds21's scheme. Per reader slot x a signal mutex LS[x] and a main
 * mutex LP[x] (each alone on its line).
 *   reader x: lock LS[x]; lock LP[x]; unlock LS[x]; ... read ...; unlock LP[x]
 *   writer:   lock LS[0..N-1] (in order); then lock LP[0..N-1];
 *             ... write ...; for each i: unlock LS[i], unlock LP[i]
 *
 * Correctness: read and write sections both hold LP[x]. The signal mutexes give the
 * writer priority: once it holds LS[x], reader x cannot start a new section, so the writer
 * only waits for sections already inside. Cost: the reader does three mutex operations
 * that are atomic RMWs (lock LS, lock LP, unlock LS; unlock LP is a fourth), the writer
 * 2N lock/unlock pairs. Dead holders are recovered by EOWNERDEAD (robust mutexes).
 */
#include "lock.h"

static size_t stride(size_t line)
{
    return nc_round_up(sizeof(pthread_mutex_t), line);
}
static pthread_mutex_t *ls(nc_kvlock_t *l, int i)
{
    return (pthread_mutex_t *)(l->area + (size_t)(2 * i) * stride(l->line));
}
static pthread_mutex_t *lp(nc_kvlock_t *l, int i)
{
    return (pthread_mutex_t *)(l->area + (size_t)(2 * i + 1) * stride(l->line));
}

static size_t m2_bytes(int nslots, size_t line)
{
    return 2 * (size_t)nslots * stride(line);
}

static int m2_init(nc_kvlock_t *l)
{
    for (int i = 0; i < l->nslots; i++) {
        int rc = nc_kvlock_mutex_init(ls(l, i), "2n-mutex signal mutex");
        if (!rc) rc = nc_kvlock_mutex_init(lp(l, i), "2n-mutex main mutex");
        if (rc) return rc;
    }
    return NUMACOLL_OK;
}

static void m2_fini(nc_kvlock_t *l)
{
    for (int i = 0; i < l->nslots; i++) {
        pthread_mutex_destroy(ls(l, i));
        pthread_mutex_destroy(lp(l, i));
    }
}

static int m2_rd_lock(nc_kvlock_t *l, uint64_t *token)
{
    (void)token;
    int x = l->slot;
    int rc = nc_kvlock_mutex_lock(l, ls(l, x), NULL, "2n-mutex signal mutex");
    if (rc) return rc;
    rc = nc_kvlock_mutex_lock(l, lp(l, x), NULL, "2n-mutex main mutex");
    pthread_mutex_unlock(ls(l, x));
    return rc;
}

static int m2_rd_unlock(nc_kvlock_t *l, uint64_t token)
{
    (void)token;
    pthread_mutex_unlock(lp(l, l->slot));
    return NUMACOLL_OK;
}

static int m2_wr_lock(nc_kvlock_t *l)
{
    int i, rc = NUMACOLL_OK;
    for (i = 0; i < l->nslots && !rc; i++)
        rc = nc_kvlock_mutex_lock(l, ls(l, i), NULL, "2n-mutex signal mutex");
    if (rc) {
        for (int j = 0; j < i - 1; j++)
            pthread_mutex_unlock(ls(l, j));
        return rc;
    }
    for (i = 0; i < l->nslots && !rc; i++)
        rc = nc_kvlock_mutex_lock(l, lp(l, i), NULL, "2n-mutex main mutex");
    if (rc) {
        for (int j = 0; j < l->nslots; j++)
            pthread_mutex_unlock(ls(l, j));
        for (int j = 0; j < i - 1; j++)
            pthread_mutex_unlock(lp(l, j));
        return rc;
    }
    return NUMACOLL_OK;
}

static int m2_wr_unlock(nc_kvlock_t *l)
{
    for (int i = 0; i < l->nslots; i++) {
        pthread_mutex_unlock(ls(l, i));
        pthread_mutex_unlock(lp(l, i));
    }
    return NUMACOLL_OK;
}

const nc_kvlock_ops_t nc_kvlock_2n_mutex = {
    .name = "2n-mutex",
    .description = "OpenPMIx ds21: per reader a signal and a main robust mutex; the writer "
                   "locks all signals, then all mains",
    .area_bytes = m2_bytes,
    .init = m2_init,
    .fini = m2_fini,
    .rd_lock = m2_rd_lock,
    .rd_unlock = m2_rd_unlock,
    .wr_lock = m2_wr_lock,
    .wr_unlock = m2_wr_unlock,
};
