/*
 * Reader/writer lock schemes of the key-value store: one file per scheme, one row each
 * in registry.c, selected by NUMACOLL_KVDB_LOCK.
 *
 * Model: one writer (the server) and up to nslots readers; reader i uses slot i (its own
 * lines of the lock area). A scheme's shared area lives in the store's lock segment,
 * starts zero-filled, and is initialised once by the server (init) before any reader
 * can attach.
 *
 * Optimistic schemes (ops->optimistic) let read sections overlap a write: the reader
 * copies what it needs, then rd_unlock() says whether the copy is valid (NUMACOLL_OK) or
 * must be redone (NC_KVLOCK_RETRY). Everything a reader reads inside an optimistic section
 * must be bounds-checked against the mapping before use, since it may be garbage.
 *
 * Robustness: every mutex is PTHREAD_PROCESS_SHARED + PTHREAD_MUTEX_ROBUST; EOWNERDEAD is
 * repaired with pthread_mutex_consistent (nc_kvlock_mutex_lock). Waits that are not in a
 * mutex go through nc_kvlock_wait_step (the core wait policy + a check that the process
 * we wait for is still alive).
 *
 * Trust: the area is in the lock segment, which every reader maps writable. The writer
 * keeps a private copy of whatever state of its own it would otherwise read back
 * (wstate), so a reader that overwrites a lock word cannot change what the writer stores.
 * Such a reader can still stall the others and the writer (NUMACOLL_TIMEOUT bounds the
 * waits) or let readers copy data while it changes (their bounds checks keep that from
 * crashing them), and with the robust-mutex schemes (1n-mutex, 2n-mutex, n-mutex-signal) it can
 * crash the writer: glibc's unlock of a robust mutex follows the list links stored in the
 * mutex itself. The seqlock, reader-flags and rwlock schemes keep no pointer in shared
 * memory.
 */
#ifndef NC_KVDB_LOCK_H
#define NC_KVDB_LOCK_H

#include "../../core/nc_internal.h"

#include <pthread.h>

#define NC_KVLOCK_RETRY 1 /* rd_unlock of an optimistic scheme: the read must be redone */

/* One reader slot's bookkeeping line in the lock segment (written by its owner, and
 * by a process that takes over the slot of a dead owner). */
typedef struct nc_kv_slot {
    _Atomic int32_t pid;       /* owner's pid, 0 = free */
    _Atomic uint32_t attaches; /* monotonic: how often the slot was taken (tests, stats) */
} nc_kv_slot_t;

typedef struct nc_kvlock {
    char *area;          /* the scheme's area in the lock segment */
    int nslots;          /* reader slots */
    size_t line;         /* padding unit */
    char *slots;         /* nc_kv_slot_t lines, stride line */
    int slot;            /* this process's reader slot, -1 on the server */
    pid_t server_pid;    /* readers check it while waiting */
    uint64_t timeout_ns; /* NUMACOLL_TIMEOUT (0 = none) */
    uint32_t spin_limit; /* pause spins before yielding (small when oversubscribed) */
    uint64_t recovered;  /* locks/flags recovered from dead owners by this process */
    uint64_t wstate;     /* writer: its private copy of the scheme's own state (seqlock:
                            the sequence number; rwlock: whether the reader count is
                            readable), never read back from the shared area */
    void *priv;          /* scheme's process-private state */
} nc_kvlock_t;

typedef struct nc_kvlock_ops {
    const char *name;
    const char *description;
    int optimistic;
    size_t (*area_bytes)(int nslots, size_t line);
    int (*init)(nc_kvlock_t *l);  /* server, once, on zeroed memory */
    void (*fini)(nc_kvlock_t *l); /* server, at destroy (optional) */
    int (*rd_lock)(nc_kvlock_t *l, uint64_t *token);
    int (*rd_unlock)(nc_kvlock_t *l, uint64_t token);
    int (*wr_lock)(nc_kvlock_t *l);
    int (*wr_unlock)(nc_kvlock_t *l);
    /* optional: a reader leaves its slot (detach) or takes over a dead reader's slot */
    void (*slot_reset)(nc_kvlock_t *l, int slot);
} nc_kvlock_ops_t;

extern const nc_kvlock_ops_t *const nc_kvlock_registry[];
extern const int nc_kvlock_registry_count;

/** Registered scheme by name, NULL if unknown. */
const nc_kvlock_ops_t *nc_kvlock_find(const char *name);
/** "name|name|..." for the NUMACOLL_KVDB_LOCK row of the config table. */
const char *nc_kvlock_allowed_names(void);

static inline nc_kv_slot_t *nc_kvlock_slot(const nc_kvlock_t *l, int i)
{
    return (nc_kv_slot_t *)(l->slots + (size_t)i * l->line);
}

/** True if slot @p i has an owner that no longer exists. */
int nc_kvlock_slot_dead(const nc_kvlock_t *l, int i);

/** Initialise a process-shared robust mutex. */
int nc_kvlock_mutex_init(pthread_mutex_t *m, const char *what);

/**
 * Lock a robust mutex: EOWNERDEAD (its holder died) is repaired with
 * pthread_mutex_consistent and counted in l->recovered. With NUMACOLL_TIMEOUT set, a
 * mutex held longer than that gives NUMACOLL_ERR_TIMEOUT.
 * @p owner_died receives 1 if the previous holder had died (may be NULL).
 */
int nc_kvlock_mutex_lock(nc_kvlock_t *l, pthread_mutex_t *m, int *owner_died, const char *what);

/** Wait state for waits on plain flags (spin -> yield -> nap, timeout, dead peer). */
typedef struct nc_kvwait {
    nc_wait_t w;
    uint64_t last_check_ns;
    pid_t peer; /* process whose death ends the wait with NUMACOLL_ERR_PEER_DEAD, or 0 */
} nc_kvwait_t;

void nc_kvwait_init(nc_kvwait_t *kw, const nc_kvlock_t *l, pid_t peer, const char *op);
int nc_kvwait_slow(nc_kvwait_t *kw);
static inline int nc_kvwait_step(nc_kvwait_t *kw)
{
    if (NC_LIKELY(kw->w.iter < kw->w.spin_limit)) {
        kw->w.iter++;
        nc_cpu_relax();
        return 0;
    }
    return nc_kvwait_slow(kw);
}

/** Tests only: @p hook (NULL: none) is called by readers of the rwlock scheme at point 0
 *  (its slot shows IN, before pthread_rwlock_tryrdlock), 1 (it holds the lock) and 2 (it
 *  has unlocked, before its slot shows OUT). */
void nc_kvlock_rw_set_test_hook(void (*hook)(int point));
#endif
