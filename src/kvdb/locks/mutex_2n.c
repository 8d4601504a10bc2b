/*
 * 2n-mutex: OpenPMIx gds/ds21's scheme. Per reader slot x a signal mutex LS[x] and a main
 * mutex LP[x], pid lock words (pidlock.c), each alone on its line.
 *   reader x: lock LS[x]; lock LP[x]; unlock LS[x]; ... read ...; unlock LP[x]
 *   writer:   lock LS[0..N-1] (in order); then lock LP[0..N-1];
 *             ... write ...; for each i: unlock LS[i], unlock LP[i]
 *
 * Correctness: read and write sections both hold LP[x]. The signal mutexes give the
 * writer priority: once it holds LS[x], reader x cannot start a new section, so the writer
 * only waits for sections already inside. Cost: the reader does three mutex operations
 * that are atomic RMWs (lock LS, lock LP, unlock LS; unlock LP is a fourth), the writer
 * 2N lock/unlock pairs. A dead holder's mutex is taken over by whoever locks it next.
 */
#include "lock.h"

#define WHAT_LS "2n-mutex signal mutex"
#define WHAT_LP "2n-mutex main mutex"

static nc_pidlock_t *ls(nc_kvlock_t *l, int i)
{
    return (nc_pidlock_t *)(l->area + (size_t)(2 * i) * l->line);
}
static nc_pidlock_t *lp(nc_kvlock_t *l, int i)
{
    return (nc_pidlock_t *)(l->area + (size_t)(2 * i + 1) * l->line);
}

static size_t m2_bytes(int nslots, size_t line)
{
    return 2 * (size_t)nslots * line;
}

static int m2_init(nc_kvlock_t *l)
{
    for (int i = 0; i < l->nslots; i++) {
        nc_pidlock_init(ls(l, i));
        nc_pidlock_init(lp(l, i));
    }
    return NUMACOLL_OK;
}

static int m2_rd_lock(nc_kvlock_t *l, uint64_t *token)
{
    (void)token;
    int x = l->slot;
    int rc = nc_pidlock_lock(l, ls(l, x), WHAT_LS);
    if (rc) return rc;
    rc = nc_pidlock_lock(l, lp(l, x), WHAT_LP);
    nc_pidlock_unlock(l, ls(l, x), WHAT_LS);
    return rc;
}

static int m2_rd_unlock(nc_kvlock_t *l, uint64_t token)
{
    (void)token;
    nc_pidlock_unlock(l, lp(l, l->slot), WHAT_LP);
    return NUMACOLL_OK;
}

static int m2_wr_lock(nc_kvlock_t *l)
{
    int i, rc = NUMACOLL_OK;
    for (i = 0; i < l->nslots && !rc; i++)
        rc = nc_pidlock_lock(l, ls(l, i), WHAT_LS);
    if (rc) { /* LS[0..i-2] are held */
        for (int j = 0; j < i - 1; j++)
            nc_pidlock_unlock(l, ls(l, j), WHAT_LS);
        return rc;
    }
    for (i = 0; i < l->nslots && !rc; i++)
        rc = nc_pidlock_lock(l, lp(l, i), WHAT_LP);
    if (rc) { /* every LS and LP[0..i-2] are held */
        for (int j = 0; j < l->nslots; j++)
            nc_pidlock_unlock(l, ls(l, j), WHAT_LS);
        for (int j = 0; j < i - 1; j++)
            nc_pidlock_unlock(l, lp(l, j), WHAT_LP);
        return rc;
    }
    return NUMACOLL_OK;
}

static int m2_wr_unlock(nc_kvlock_t *l)
{
    for (int i = 0; i < l->nslots; i++) {
        nc_pidlock_unlock(l, ls(l, i), WHAT_LS);
        nc_pidlock_unlock(l, lp(l, i), WHAT_LP);
    }
    return NUMACOLL_OK;
}

const nc_kvlock_ops_t nc_kvlock_2n_mutex = {
    .name = "2n-mutex",
    .description = "OpenPMIx ds21: per reader a signal and a main mutex (pid lock words); the "
                   "writer locks all signals, then all mains",
    .area_bytes = m2_bytes,
    .init = m2_init,
    .rd_lock = m2_rd_lock,
    .rd_unlock = m2_rd_unlock,
    .wr_lock = m2_wr_lock,
    .wr_unlock = m2_wr_unlock,
};
