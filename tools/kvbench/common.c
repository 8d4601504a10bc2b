/* numacoll-kvbench: CPU placement, start-up waits and sorting shared by its parts. */
#include "kvbench.h"
#include "../bench/bench_wait.h"

#include <sched.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static int cpus[1024], ncpus; /* the CPUs we may run on (kvb_get_cpus) */

void kvb_get_cpus(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        cpus[0] = 0;
        ncpus = 1;
        return;
    }
    for (int c = 0; c < CPU_SETSIZE && ncpus < 1024; c++)
        if (CPU_ISSET(c, &set)) cpus[ncpus++] = c;
}

void kvb_bind_cpu(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
}
int kvb_cpu_count(void)
{
    return ncpus;
}
int kvb_writer_cpu(void)
{
    return cpus[0];
}
/* reader i: CPUs round-robin starting after the writer's */
int kvb_reader_cpu(int i)
{
    return cpus[(i + 1) % ncpus];
}

int kvb_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* ---- start-up waits ----------------------------------------------------------------- */

/* Wait until *@p flag >= @p want under the benchmark tools' wait policy (bench_wait.h: the
 * library's standalone waits, spin, yield, nap, NUMACOLL_TIMEOUT, and a look every 20 ms at
 * the @p n processes in @p pids, member @p me being the caller: member 0 is the parent, 1..N
 * the readers): print why and return non-zero when one of them has exited or the timeout
 * expired, instead of waiting forever. */
int kvb_wait_at_least(_Atomic int *flag, int want, const pid_t *pids, int n, int me,
                         const char *what)
{
    _Atomic int32_t watched[MAX_READERS + 1];
    for (int i = 0; i < n; i++)
        atomic_init(&watched[i], (int32_t)pids[i]);
    bench_watch_t b;
    bench_watch_pids(&b, watched, n, me, what);
    bench_wait_begin(&b);
    int rc = NUMACOLL_OK;
    while (atomic_load_explicit(flag, memory_order_acquire) < want && rc == NUMACOLL_OK)
        rc = bench_wait_step(&b);
    if (rc != NUMACOLL_OK) fprintf(stderr, "numacoll-kvbench: %s\n", numacoll_last_error());
    return rc;
}

/* The parent's start-up wait for @p n readers; on failure the readers are killed. */
int kvb_wait_for_readers(_Atomic int *ready, pid_t *pids, int n)
{
    pid_t all[MAX_READERS + 1];
    all[0] = getpid();
    memcpy(all + 1, pids, (size_t)n * sizeof *pids);
    int rc = kvb_wait_at_least(ready, n, all, n + 1, 0,
                           "the parent (member 0) waiting for the readers to attach");
    if (rc)
        for (int i = 0; i < n; i++)
            kill(pids[i], SIGKILL);
    return rc;
}

