/*
 * mpi_coll_test commcost [n] [limit-kib]: what a communicator costs each member.
 *
 * n communicators (MPI_Comm_dup of WORLD) each run a barrier, an 8-byte broadcast and an
 * 8-byte allreduce (a communicator used for small messages only); then each runs a
 * 256 KiB broadcast and allreduce; then all are freed. After each phase every rank reads
 * its /proc/self/smaps_rollup: Pss_Anon (its private memory) and Pss_Shmem (its share of
 * the shared pages it maps: the members' sum is the shared memory in use). Rank 0 prints
 * per communicator and member: private KiB, shared KiB, and the phase's time per
 * communicator. With numacoll expected (NC_EXPECT) and @p limit-kib > 0, the small phase
 * must cost at most limit-kib of shared memory per member and communicator.
 */
#include "mpi_coll_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct mem_kb {
    double anon, shmem;
} mem_kb_t;

static mem_kb_t rollup(void)
{
    mem_kb_t m = {0, 0};
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    long v;
    while (f && fgets(line, sizeof line, f)) {
        if (sscanf(line, "Pss_Anon: %ld kB", &v) == 1) m.anon = (double)v;
        if (sscanf(line, "Pss_Shmem: %ld kB", &v) == 1) m.shmem = (double)v;
    }
    if (f) fclose(f);
    return m;
}

/* the members' mean private and summed shared growth since @p before, per communicator */
static void report(const char *phase, mem_kb_t before, int n, double seconds, double *shared_out)
{
    mem_kb_t now = rollup();
    double mine[3] = {now.anon - before.anon, now.shmem - before.shmem, seconds}, sum[3];
    PMPI_Allreduce(mine, sum, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double priv = sum[0] / g_size / n, shared = sum[1] / g_size / n;
    if (shared_out) *shared_out = shared;
    if (g_rank == 0)
        printf("commcost np %d, %s: per communicator and member %.1f KiB private, %.1f KiB "
               "shared; %.3f ms per communicator\n",
               g_size, phase, priv, shared, sum[2] / g_size / n * 1e3);
}

void test_commcost(int n, int limit_kib)
{
    if (n <= 0) n = 100;
    MPI_Comm *c = malloc((size_t)n * sizeof *c);
    char *big = malloc(256 << 10);
    double *x = malloc((256 << 10) / sizeof(double) * sizeof(double));
    CHECK(c && big && x, "no memory for %d communicators", n);
    if (!c || !big || !x) return;
    size_t nd = (256 << 10) / sizeof(double);
    MPI_Barrier(MPI_COMM_WORLD);
    mem_kb_t m0 = rollup();
    double t0 = now();
    for (int i = 0; i < n; i++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &c[i]);
        double v = g_rank, sum = 0;
        long w = g_rank == 0 ? 42 : 0;
        MPI_Barrier(c[i]);
        MPI_Bcast(&w, 1, MPI_LONG, 0, c[i]);
        MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, c[i]);
        CHECK(w == 42 && sum == (double)g_size * (g_size - 1) / 2, "communicator %d: %ld %g", i,
              w, sum);
    }
    double small_shared = 0;
    report("small messages only", m0, n, now() - t0, &small_shared);
    mem_kb_t m1 = rollup();
    t0 = now();
    for (int i = 0; i < n; i++) {
        memset(big, g_rank == 0 ? 7 : 0, 256 << 10);
        MPI_Bcast(big, 256 << 10, MPI_BYTE, 0, c[i]);
        CHECK(big[0] == 7 && big[(256 << 10) - 1] == 7, "communicator %d: broadcast wrong", i);
        for (size_t k = 0; k < nd; k++)
            x[k] = g_rank;
        MPI_Allreduce(MPI_IN_PLACE, x, (int)nd, MPI_DOUBLE, MPI_SUM, c[i]);
        CHECK(x[nd - 1] == (double)g_size * (g_size - 1) / 2, "communicator %d: %g", i,
              x[nd - 1]);
    }
    report("then 256 KiB messages", m1, n, now() - t0, NULL);
    report("both together", m0, n, 0, NULL);
    for (int i = 0; i < n; i++)
        MPI_Comm_free(&c[i]);
    if (expect_numacoll() && limit_kib > 0 && g_size > 1)
        CHECK(small_shared <= limit_kib,
              "a communicator used for small messages costs %.1f KiB of shared memory per "
              "member; allowed at most %d",
              small_shared, limit_kib);
    free(c), free(big), free(x);

}

/* mpi_coll_test shmmax [n]: run with a small NUMACOLL_SHM_MAX (tests/mpi.cmake). n live
 * communicators each broadcast and reduce: once a member's shared memory would pass the
 * bound, set-ups fail on every member alike and those calls run natively, every one with
 * the right result; freed communicators give their memory back (no team cache), so a new
 * one runs numacoll's collectives again. */
void test_shmmax(int n)
{
    if (n <= 0) n = 12;
    MPI_Comm *c = malloc((size_t)n * sizeof *c);
    CHECK(c != NULL, "no memory");
    if (!c) return;
    stats_t s0 = get_stats();
    for (int i = 0; i < n; i++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &c[i]);
        MPI_Comm_set_errhandler(c[i], MPI_ERRORS_RETURN);
        long w = g_rank == 0 ? 1000 + i : 0;
        double v = g_rank + i, sum = 0;
        int rc1 = MPI_Bcast(&w, 1, MPI_LONG, 0, c[i]);
        int rc2 = MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, c[i]);
        CHECK(rc1 == MPI_SUCCESS && rc2 == MPI_SUCCESS && w == 1000 + i &&
                  sum == (double)g_size * (g_size - 1) / 2 + (double)g_size * i,
              "communicator %d: rc %d/%d, %ld, %g", i, rc1, rc2, w, sum);
    }
    stats_t s1 = get_stats();
    unsigned long long nb = s1.bcast_numacoll - s0.bcast_numacoll,
                       na = s1.allreduce_numacoll - s0.allreduce_numacoll;
    if (expect_numacoll() && g_size > 1)
        CHECK(nb >= 1 && nb < (unsigned long long)n && na < (unsigned long long)n,
              "numacoll ran %llu broadcasts and %llu allreduces of %d each: expected the bound "
              "to stop some but not the first",
              nb, na, n);
    for (int i = 0; i < n; i++)
        MPI_Comm_free(&c[i]);
    MPI_Comm d;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    long w = g_rank == 0 ? 77 : 0;
    MPI_Bcast(&w, 1, MPI_LONG, 0, d);
    stats_t s2 = get_stats();
    CHECK(w == 77, "after freeing: broadcast got %ld", w);
    if (expect_numacoll() && g_size > 1)
        CHECK(s2.bcast_numacoll == s1.bcast_numacoll + 1,
              "after freeing every communicator, numacoll did not broadcast on a new one");
    MPI_Comm_free(&d);
    free(c);
    if (g_rank == 0)
        printf("shmmax: numacoll ran %llu of %d broadcasts and %llu of %d allreduces under the "
               "bound\n",
               nb, n, na, n);
}
