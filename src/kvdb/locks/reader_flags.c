/*
 * reader-flags (our own scheme): each reader announces itself with a flag on its own
 * line; the writer raises its flag and waits until no reader is inside.
 *
 *   reader x: loop { busy[x] = 1 (seq_cst); if (W == 0) break;   // inside
 *                    busy[x] = 0 (release); wait while W != 0 }
 *             ... read ...; busy[x] = 0 (release)
 *   writer:   W = 1 (seq_cst); for each x: wait while busy[x] != 0 (acquire);
 *             ... write ...; W = 0 (release)
 *
 * Correctness (Dekker): the reader's store busy[x]=1 and load of W, and the writer's store
 * W=1 and load of busy[x], are all seq_cst, so at least one of them sees the other's
 * store: either the reader sees W == 1 and backs off, or the writer sees busy[x] == 1 and
 * waits until the reader's release store of 0, after which every read of that section
 * happened before the write.
 *
 * Cost: the reader writes only its own line (no line bouncing between readers, no atomic
 * RMW); the seq_cst store is a full fence (mfence/xchg on x86) on a line the reader owns.
 * The writer sets one flag and then reads N reader lines (N cache misses) and waits for
 * the readers inside; writers have priority (new readers back off while W is set). A
 * reader killed inside leaves busy[x] = 1: the writer sees that the slot's owner is dead
 * and clears the flag (the only store the writer makes to a reader's line).
 */
#include "lock.h"

typedef struct rf_flag {
    _Atomic uint32_t v;
} rf_flag_t;

static rf_flag_t *wflag(nc_kvlock_t *l)
{
    return (rf_flag_t *)l->area;
}
static rf_flag_t *busy(nc_kvlock_t *l, int i)
{
    return (rf_flag_t *)(l->area + (size_t)(i + 1) * l->line);
}
static size_t rf_bytes(int nslots, size_t line)
{
    return (size_t)(nslots + 1) * line;
}
static int rf_init(nc_kvlock_t *l)
{
    return NUMACOLL_OK;
}

static int rf_rd_lock(nc_kvlock_t *l, uint64_t *token)
{
    (void)token;
    rf_flag_t *b = busy(l, l->slot);
    while (1) {
        atomic_store_explicit(&b->v, 1, memory_order_seq_cst);
        if (NC_LIKELY(atomic_load_explicit(&wflag(l)->v, memory_order_seq_cst) == 0))
            return NUMACOLL_OK;
        atomic_store_explicit(&b->v, 0, memory_order_release);
        nc_kvwait_t kw;
        nc_kvwait_init(&kw, l, l->server_pid, "kvdb reader-flags read (write in progress)");
        /* W is written by the writer only; once it is 0 we may announce ourselves again */
        while (atomic_load_explicit(&wflag(l)->v, memory_order_relaxed)) {
            int rc = nc_kvwait_step(&kw);
            if (rc) return rc;
        }
    }
}

static int rf_rd_unlock(nc_kvlock_t *l, uint64_t token)
{
    (void)token;
    /* release: our reads of the section happen before the writer's next write */
    atomic_store_explicit(&busy(l, l->slot)->v, 0, memory_order_release);
    return NUMACOLL_OK;
}

static int rf_wr_lock(nc_kvlock_t *l)
{
    atomic_store_explicit(&wflag(l)->v, 1, memory_order_seq_cst);
    for (int i = 0; i < l->nslots; i++) {
        rf_flag_t *b = busy(l, i);
        if (NC_LIKELY(atomic_load_explicit(&b->v, memory_order_seq_cst) == 0)) continue;
        nc_kvwait_t kw;
        nc_kvwait_init(&kw, l, 0, "kvdb reader-flags write (waiting for a reader)");
        uint32_t polls = 0;
        /* busy[i] is written by reader i; 0 (acquire) means its section is over and its
         * reads happened before anything we write next */
        while (atomic_load_explicit(&b->v, memory_order_acquire)) {
            if ((++polls & 1023) == 0 && nc_kvlock_slot_dead(l, i)) {
                atomic_store_explicit(&b->v, 0, memory_order_relaxed);
                l->recovered++;
                nc_log(1, -1, l->nslots, "kvdb reader-flags: cleared dead reader slot %d", i);
                break;
            }
            int rc = nc_kvwait_step(&kw);
            if (rc) {
                atomic_store_explicit(&wflag(l)->v, 0, memory_order_release);
                return rc;
            }
        }
    }
    return NUMACOLL_OK;
}

static int rf_wr_unlock(nc_kvlock_t *l)
{
    atomic_store_explicit(&wflag(l)->v, 0, memory_order_release);
    return NUMACOLL_OK;
}

static void rf_slot_reset(nc_kvlock_t *l, int slot)
{
    atomic_store_explicit(&busy(l, slot)->v, 0, memory_order_release);
}

const nc_kvlock_ops_t nc_kvlock_reader_flags = {
    .name = "reader-flags",
    .description = "a flag per reader on its own line (no RMW on the read path); the writer "
                   "raises its flag and waits for the readers inside",
    .optimistic = 0,
    .area_bytes = rf_bytes,
    .init = rf_init,
    .rd_lock = rf_rd_lock,
    .rd_unlock = rf_rd_unlock,
    .wr_lock = rf_wr_lock,
    .wr_unlock = rf_wr_unlock,
    .slot_reset = rf_slot_reset,
};
