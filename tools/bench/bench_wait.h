/*
 * The library's wait policy for the benchmark's own reference loops: the waits that do not
 * go through a numacoll collective (the cache-line ping-pong of `numacoll-bench barrier`,
 * the LogP probes of `--logp`).
 *
 *     bench_watch_t b;
 *     bench_watch_team(&b, team, "cache-line ping-pong: rank 0 waiting for rank 1");
 *     for (each round) {
 *         int rc = bench_watch_round(&b);          // every 20 ms: are all members alive?
 *         bench_wait_begin(&b);
 *         while (!flag) if ((rc = bench_wait_step(&b))) return rc;
 *     }
 *
 * A wait follows the library's policy for waits without a team (nc_wait_init_standalone):
 * it spins NUMACOLL_WAIT_SPIN times (default 4096, also when oversubscribed: the reference
 * is the cache-line round trip, not the scheduler's), then yields, then naps
 * (nc_wait_slow), and fails with NUMACOLL_ERR_TIMEOUT after NUMACOLL_TIMEOUT seconds
 * (0 = never). Every 20 ms, in a long wait and across rounds
 * whose waits are short, the watched members' processes are checked: one that has exited
 * (a zombie included, nc_pid_gone) fails the loop with NUMACOLL_ERR_PEER_DEAD naming it,
 * so that a loop between two live members does not outlive a dead third one either.
 */
#ifndef NC_BENCH_WAIT_H
#define NC_BENCH_WAIT_H

#include "core/nc_internal.h"

typedef struct bench_watch {
    const char *what;            /* the loop, for messages */
    int rank, size;              /* our rank; the watched members are ranks 0..size-1 */
    const numacoll_team_t *team; /* members' pids from the team's control lines, or NULL */
    _Atomic int32_t *pids;       /* without a team: size pids (0 = not known yet) */
    nc_wait_t w;                 /* the current wait: spin limit, timeout, naps */
    uint64_t last_check_ns;      /* last look at the members' processes */
    uint32_t rounds;             /* bench_watch_round calls since the last clock read */
} bench_watch_t;

/** Watch the members of @p t (whose pids it holds). */
void bench_watch_team(bench_watch_t *b, const numacoll_team_t *t, const char *what);
/** Watch @p n processes whose pids are in shared memory (rank @p rank is the caller). */
void bench_watch_pids(bench_watch_t *b, _Atomic int32_t *pids, int n, int rank,
                      const char *what);

/** Look at the members' processes if 20 ms have passed since the last look: NUMACOLL_OK,
 *  or NUMACOLL_ERR_PEER_DEAD with a message naming the members that exited. */
int bench_watch_check(bench_watch_t *b);
int bench_wait_slow(bench_watch_t *b);

/** Call once per round of a loop: reads the clock every 1024 calls (the rounds of a
 *  ping-pong take 0.1-10 us) and looks at the members every 20 ms. */
static inline int bench_watch_round(bench_watch_t *b)
{
    if (NC_LIKELY(++b->rounds < 1024)) return NUMACOLL_OK;
    b->rounds = 0;
    return bench_watch_check(b);
}

/** Start one wait (for one flag value). */
static inline void bench_wait_begin(bench_watch_t *b)
{
    b->w.iter = 0;
    b->w.start_ns = 0;
    b->w.naps = 0;
}

/** One step of the current wait: NUMACOLL_OK to look at the flag again, else the error
 *  (timeout or a dead member, message set). */
static inline int bench_wait_step(bench_watch_t *b)
{
    if (NC_LIKELY(b->w.iter < b->w.spin_limit)) {
        b->w.iter++;
        nc_cpu_relax();
        return NUMACOLL_OK;
    }
    return bench_wait_slow(b);
}

#endif
