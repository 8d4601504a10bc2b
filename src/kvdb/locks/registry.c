/* The lock-scheme registry of the key-value store (one row per scheme, each in its own
 * file) and the helpers the schemes share (robust mutexes, waits on plain flags). */
#include "lock.h"

#include <numacoll/kvdb.h>

#include <errno.h>
#include <string.h>
#include <time.h>

extern const nc_kvlock_ops_t nc_kvlock_rwlock;
extern const nc_kvlock_ops_t nc_kvlock_1n_mutex;
extern const nc_kvlock_ops_t nc_kvlock_2n_mutex;
extern const nc_kvlock_ops_t nc_kvlock_n_mutex_signal;
extern const nc_kvlock_ops_t nc_kvlock_seqlock;
extern const nc_kvlock_ops_t nc_kvlock_reader_flags;

const nc_kvlock_ops_t *const nc_kvlock_registry[] = {
    &nc_kvlock_rwlock,         &nc_kvlock_1n_mutex, &nc_kvlock_2n_mutex,
    &nc_kvlock_n_mutex_signal, &nc_kvlock_seqlock,  &nc_kvlock_reader_flags,
};
const int nc_kvlock_registry_count =
    (int)(sizeof nc_kvlock_registry / sizeof nc_kvlock_registry[0]);

const nc_kvlock_ops_t *nc_kvlock_find(const char *name)
{
    for (int i = 0; name && i < nc_kvlock_registry_count; i++)
        if (strcmp(nc_kvlock_registry[i]->name, name) == 0) return nc_kvlock_registry[i];
    return NULL;
}

const char *nc_kvlock_allowed_names(void)
{
    static char buf[512];
    if (!buf[0]) {
        size_t o = 0;
        for (int i = 0; i < nc_kvlock_registry_count && o < sizeof buf; i++)
            o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", i ? "|" : "",
                                  nc_kvlock_registry[i]->name);
    }
    return buf;
}

const numacoll_algorithm_info_t *numacoll_kvdb_locks(int *count)
{
    static numacoll_algorithm_info_t info[32];
    for (int i = 0; i < nc_kvlock_registry_count && i < 32; i++) {
        info[i].name = nc_kvlock_registry[i]->name;
        info[i].description = nc_kvlock_registry[i]->description;
    }
    if (count) *count = nc_kvlock_registry_count;
    return info;
}

int nc_kvlock_slot_dead(const nc_kvlock_t *l, int i)
{
    /* relaxed: a pid is either ours to see or stale; kill() decides */
    pid_t pid = atomic_load_explicit(&nc_kvlock_slot(l, i)->pid, memory_order_relaxed);
    return nc_pid_gone(pid);
}

int nc_kvlock_mutex_init(pthread_mutex_t *m, const char *what)
{
    pthread_mutexattr_t a;
    int rc = pthread_mutexattr_init(&a);
    if (!rc) rc = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    if (!rc) rc = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    if (!rc) rc = pthread_mutex_init(m, &a);
    pthread_mutexattr_destroy(&a);
    if (rc)
        return nc_error(NUMACOLL_ERR_SYS, "cannot create the process-shared robust mutex %s: %s",
                        what, strerror(rc));
    return NUMACOLL_OK;
}

int nc_kvlock_mutex_lock(nc_kvlock_t *l, pthread_mutex_t *m, int *owner_died, const char *what)
{
    int rc;
    if (owner_died) *owner_died = 0;
    if (NC_LIKELY(l->timeout_ns == 0)) {
        rc = pthread_mutex_lock(m);
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t ns = (uint64_t)ts.tv_nsec + l->timeout_ns;
        ts.tv_sec += (time_t)(ns / 1000000000ull);
        ts.tv_nsec = (long)(ns % 1000000000ull);
        rc = pthread_mutex_timedlock(m, &ts);
    }
    if (NC_LIKELY(rc == 0)) return NUMACOLL_OK;
    if (rc == EOWNERDEAD) {
        /* The holder died inside its critical section. Readers never modify the store, so
         * a dead reader leaves nothing to repair: mark the mutex usable again. */
        pthread_mutex_consistent(m);
        if (l->slot >= 0 && nc_pid_gone(l->server_pid)) {
            /* we are a reader and the dead holder was the server, possibly in the middle of
             * a write: the store may be inconsistent and nobody will ever write it again */
            pthread_mutex_unlock(m);
            return nc_error(NUMACOLL_ERR_PEER_DEAD,
                            "kvdb: the server (pid %d) died while holding %s", (int)l->server_pid,
                            what);
        }
        l->recovered++;
        if (owner_died) *owner_died = 1;
        nc_log(1, l->slot, l->nslots, "kvdb: recovered %s from a dead holder", what);
        return NUMACOLL_OK;
    }
    if (rc == ETIMEDOUT)
        return nc_error(NUMACOLL_ERR_TIMEOUT,
                        "kvdb: %s still held after %.3f s (NUMACOLL_TIMEOUT) by a live process",
                        what, (double)l->timeout_ns / 1e9);
    return nc_error(NUMACOLL_ERR_SYS, "kvdb: locking %s failed: %s", what, strerror(rc));
}

void nc_kvwait_init(nc_kvwait_t *kw, const nc_kvlock_t *l, pid_t peer, const char *op)
{
    nc_wait_init_standalone(&kw->w, op, l->timeout_ns);
    kw->w.spin_limit = l->spin_limit;
    kw->last_check_ns = 0;
    kw->peer = peer;
}

int nc_kvwait_slow(nc_kvwait_t *kw)
{
    int rc = nc_wait_slow(&kw->w);
    if (rc) return rc;
    uint64_t now = nc_now_ns();
    if (kw->last_check_ns == 0) kw->last_check_ns = now;
    if (kw->peer > 0 && now - kw->last_check_ns > 20000000ull) {
        kw->last_check_ns = now;
        if (nc_pid_gone(kw->peer))
            return nc_error(NUMACOLL_ERR_PEER_DEAD,
                            "kvdb: %s: process %d, which this wait depends on, has exited",
                            kw->w.op, (int)kw->peer);
    }
    return NUMACOLL_OK;
}
