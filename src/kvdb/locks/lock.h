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
 * Robustness: the mutexes of the 1n-mutex, 2n-mutex and n-mutex-signal schemes are pid lock
 * words (nc_pidlock_t, pidlock.c): 0 or the holder's pid, waited on with futexes in
 * bounded slices, taken over by CAS when the holder is dead (nc_pid_gone) or the word
 * holds no pid at all. Waits that are not on a lock word go through nc_kvwait_step (the
 * core wait policy + a check that the process we wait for is still alive).
 *
 * Trust: the area is in the lock segment, which every reader maps writable. The writer
 * keeps a private copy of whatever state of its own it would otherwise read back
 * (wstate, and the pid it writes into lock words), and no scheme keeps a pointer in
 * shared memory, so a reader that overwrites lock words cannot change what the writer
 * stores, make any process follow what it wrote, or crash the writer (test_kvdb_hostile,
 * test_lock_area). It can stall the others and the writer: NUMACOLL_TIMEOUT bounds the
 * waits (a write then fails with NUMACOLL_ERR_TIMEOUT); a pid lock word holding a dead
 * pid or no pid at all is recovered, one holding a live process's pid is waited for; a
 * reader-flags busy flag set on a free slot is waited for until the timeout, at every
 * write. It can let sections overlap (a scribble frees a held lock) or let readers copy
 * data while it changes (their bounds checks keep that from crashing them). The rwlock
 * scheme is the exception to the bounded waits: its area is glibc's pthread_rwlock_t,
 * and with some values written over it pthread_rwlock_timedwrlock spins inside glibc
 * past its deadline, so there a scribbling reader can hang the writer.
 */
#ifndef NC_KVDB_LOCK_H
#define NC_KVDB_LOCK_H

#include "../../core/nc_internal.h"

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
    uint32_t self;       /* getpid() of the process using the handle: its lock words' value */
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

/* ---- pid lock words (pidlock.c) ------------------------------------------------------ */

/* A lock word, alone on its line: 0 = free, else the holder's pid (1..NC_PIDLOCK_PID_MAX),
 * with NC_PIDLOCK_WAITERS set once somebody sleeps on it (FUTEX_WAIT). Any other value
 * (bit 31 set, a pid above the limit) was written by no holder and is recovered at once. */
typedef struct nc_pidlock {
    _Atomic uint32_t v;
} nc_pidlock_t;

#define NC_PIDLOCK_WAITERS 0x40000000u /* a process sleeps on the word: unlock must wake */
#define NC_PIDLOCK_PID 0x3fffffffu     /* the holder's pid */
#define NC_PIDLOCK_PID_MAX 4194304u    /* Linux's PID_MAX_LIMIT: no pid is larger */

static inline void nc_pidlock_init(nc_pidlock_t *w)
{
    atomic_store_explicit(&w->v, 0, memory_order_relaxed); /* before any reader attaches */
}

int nc_pidlock_lock_slow(nc_kvlock_t *l, nc_pidlock_t *w, const char *what);
/**
 * Lock word @p w as this process (l->self). A holder that died, or a word holding no pid,
 * is recovered and counted in l->recovered. Errors: NUMACOLL_ERR_TIMEOUT (held by a live
 * process longer than NUMACOLL_TIMEOUT), NUMACOLL_ERR_PEER_DEAD (a reader whose server has
 * exited). @p what names the lock in messages.
 */
static inline int nc_pidlock_lock(nc_kvlock_t *l, nc_pidlock_t *w, const char *what)
{
    uint32_t v = 0;
    /* acquire: pairs with the previous holder's release in nc_pidlock_unlock */
    if (NC_LIKELY(atomic_compare_exchange_strong_explicit(&w->v, &v, l->self,
                                                          memory_order_acquire,
                                                          memory_order_relaxed)))
        return NUMACOLL_OK;
    return nc_pidlock_lock_slow(l, w, what);
}

void nc_pidlock_unlock_slow(nc_kvlock_t *l, nc_pidlock_t *w, uint32_t v, const char *what);
/** Unlock word @p w held by this process; wakes sleepers. A word overwritten while we held
 *  it is left alone (logged at NUMACOLL_VERBOSE=1). */
static inline void nc_pidlock_unlock(nc_kvlock_t *l, nc_pidlock_t *w, const char *what)
{
    uint32_t v = l->self;
    /* release: our section happens before the next holder's acquire */
    if (NC_LIKELY(atomic_compare_exchange_strong_explicit(&w->v, &v, 0, memory_order_release,
                                                          memory_order_relaxed)))
        return;
    nc_pidlock_unlock_slow(l, w, v, what);
}

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
