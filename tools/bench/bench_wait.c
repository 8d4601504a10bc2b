/* The benchmark's reference loops under the library's wait policy (see bench_wait.h). */
#include "bench_wait.h"

#define CHECK_NS 20000000ull /* look at the members' processes every 20 ms */

static void watch_init(bench_watch_t *b, const char *what, uint64_t timeout_ns)
{
    b->what = what;
    b->last_check_ns = nc_now_ns();
    b->rounds = 0;
    nc_wait_init_standalone(&b->w, what, timeout_ns);
}

void bench_watch_team(bench_watch_t *b, const numacoll_team_t *t, const char *what)
{
    watch_init(b, what, t->timeout_ns);
    b->team = t;
    b->pids = NULL;
    b->rank = t->rank;
    b->size = t->size;
    /* the spin limit stays the standalone one (NUMACOLL_WAIT_SPIN, default 4096), not the
     * team's 0 when oversubscribed: a reference measures the cache-line transfer, and with
     * a yield at every step it would measure the scheduler (P = 8 on 2 CPUs: 25-29 us per
     * round trip against 0.07 us; the barriers themselves 15-30 us) */
}

void bench_watch_pids(bench_watch_t *b, _Atomic int32_t *pids, int n, int rank, const char *what)
{
    watch_init(b, what, (uint64_t)(nc_cfg_double(NC_CFG_TIMEOUT) * 1e9));
    b->team = NULL;
    b->pids = pids;
    b->rank = rank;
    b->size = n;
}

int bench_watch_check(bench_watch_t *b)
{
    uint64_t now = nc_now_ns();
    if (now - b->last_check_ns < CHECK_NS) return NUMACOLL_OK;
    b->last_check_ns = now;
    if (b->team && !b->team->check_peers) return NUMACOLL_OK; /* pids not visible to us */
    char list[256];
    size_t o = 0;
    int ndead = 0;
    list[0] = 0;
    for (int r = 0; r < b->size; r++) {
        if (r == b->rank) continue;
        /* relaxed: a pid is stored once (team creation, or fork) before the loops begin;
         * 0 = not known yet, checked at a later look */
        pid_t pid = b->team ? atomic_load_explicit(&nc_team_ctl(b->team, r)->pid,
                                                   memory_order_relaxed)
                            : atomic_load_explicit(&b->pids[r], memory_order_relaxed);
        if (!nc_pid_gone(pid)) continue;
        if (o + 40 < sizeof list)
            o += (size_t)snprintf(list + o, sizeof list - o, "%s%d (pid %d)", ndead ? ", " : "",
                                  r, (int)pid);
        ndead++;
    }
    if (ndead == 0) return NUMACOLL_OK;
    return nc_error(NUMACOLL_ERR_PEER_DEAD, "%s (rank %d of %d): member(s) %s exited", b->what,
                    b->rank, b->size, list);
}

int bench_wait_slow(bench_watch_t *b)
{
    int rc = nc_wait_slow(&b->w); /* yield or nap; NUMACOLL_TIMEOUT */
    if (rc) return rc;
    return bench_watch_check(b);
}
