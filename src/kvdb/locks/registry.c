/* The lock-scheme registry of the key-value store (one row per scheme, each in its own
 * file) and the helpers the schemes share (dead slots, waits on plain flags; the pid lock
 * words are in pidlock.c). */
#include "lock.h"

#include <numacoll/kvdb.h>

#include <string.h>

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
