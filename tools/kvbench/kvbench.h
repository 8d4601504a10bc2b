/*
 * numacoll-kvbench's parts shared between the lock microbenchmark (numacoll-kvbench.c)
 * and the Get profiler (profile.c): CPU placement, the start-up waits, sorting.
 */
#ifndef NC_KVBENCH_H
#define NC_KVBENCH_H

#include "kvdb/kvdb_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define MAX_READERS 256

/* CPU placement: the parent (the server) runs on the first allowed CPU, reader i on the
 * allowed CPUs round-robin from the second */
void kvb_get_cpus(void);
void kvb_bind_cpu(int cpu);
int kvb_cpu_count(void);
int kvb_writer_cpu(void);
int kvb_reader_cpu(int i);

int kvb_cmp_u64(const void *a, const void *b); /* qsort of uint64_t, ascending */

/* Wait until *@p flag >= @p want, watching the @p n processes in @p pids (member @p me is
 * the caller): non-zero, with the reason printed, when one of them exited or
 * NUMACOLL_TIMEOUT expired. */
int kvb_wait_at_least(_Atomic int *flag, int want, const pid_t *pids, int n, int me,
                      const char *what);
/* The parent's start-up wait for @p n readers (each adds 1 to *@p ready); on failure the
 * readers are killed. */
int kvb_wait_for_readers(_Atomic int *ready, pid_t *pids, int n);

/* profile.c: the Get profile of lock @p lock with @p N readers (paper 4, Table 1), printed
 * and, with @p csv, written as two rows (mean, median); 0 or -1 */
int kvb_run_profile(const char *lock, int N, int iters, int keylen, FILE *csv,
                    const char *clock_name);
/* what the profile's points and columns are, each line prefixed with @p pfx */
void kvb_profile_legend(FILE *f, const char *pfx);

#endif
