/*
 * What the MPI test programs share: the layer's counters (found with dlsym, so that the
 * programs stay plain MPI programs that do not link numacoll; the header gives only their
 * type) and the CHECK macro, which counts failed checks in g_fail.
 */
#ifndef NC_MPI_TEST_UTIL_H
#define NC_MPI_TEST_UTIL_H

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "numacoll_mpi.h"

typedef numacoll_mpi_stats_t stats_t;

/* mpi_test_util.c (every program built by nc_mpi_program links it) */
extern int g_rank, g_size;
extern _Atomic int g_fail; /* failed checks of this rank (threads may check at once) */
extern size_t (*g_stats_fn)(stats_t *, size_t);

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            g_fail++;                                                                              \
            fprintf(stderr, "[rank %d] CHECK FAILED %s:%d: %s: ", g_rank, __FILE__, __LINE__,      \
                    #cond);                                                                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
        }                                                                                          \
    } while (0)

/* Look up numacoll_mpi_stats_sized in the process (NULL without the preload). */
static inline void find_stats_fn(void)
{
    *(void **)&g_stats_fn = dlsym(RTLD_DEFAULT, "numacoll_mpi_stats_sized");
}

/* The layer's counters now (zeros without the preload). */
static inline stats_t get_stats(void)
{
    stats_t s;
    memset(&s, 0, sizeof s);
    if (g_stats_fn) g_stats_fn(&s, sizeof s);
    return s;
}

/* *sum += the counters now - *since (every field of stats_t is a uint64_t counter) */
static inline void stats_add_since(stats_t *sum, const stats_t *since)
{
    stats_t now = get_stats();
    uint64_t *acc = (uint64_t *)sum;
    const uint64_t *from = (const uint64_t *)since, *to = (const uint64_t *)&now;
    for (size_t i = 0; i < sizeof now / sizeof(uint64_t); i++)
        acc[i] += to[i] - from[i];
}

/* The failed checks of all ranks (collective over MPI_COMM_WORLD). */
static inline int total_failures(MPI_Comm comm)
{
    int mine = g_fail, total = 0;
    PMPI_Allreduce(&mine, &total, 1, MPI_INT, MPI_SUM, comm);
    return total;
}

#endif
