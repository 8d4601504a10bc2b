/*
 * MPI-level tests of libnumacoll_mpi's team identity and thread contract. Run under
 * numacoll-run (tests/mpi/run_mpi.sh); a plain MPI program that finds the layer's counters
 * with dlsym.
 *
 *   mpi_thread_test threadchurn [iters]  MPI_THREAD_MULTIPLE: three threads, each looping
 *                                        MPI_Comm_dup of its own duplicate of
 *                                        MPI_COMM_WORLD, MPI_Bcast (seeded random root and
 *                                        size, 8 B - 70 KB, every byte checked),
 *                                        MPI_Barrier, MPI_Comm_free
 *   mpi_thread_test freeorder [rounds]   one thread: two communicators with the same
 *                                        members freed in opposite orders on even and odd
 *                                        ranks, then two new duplicates used with different
 *                                        roots (their idle teams must be matched by identity)
 *   mpi_thread_test level [LEVEL]        MPI_Init_thread at LEVEL (single, funneled,
 *                                        serialized, multiple); prints the provided level and
 *                                        checks that numacoll runs the calls of the main
 *                                        thread at every level
 *
 * Exit status 0 iff every check passed on every rank.
 */
#define _GNU_SOURCE 1
#include <mpi.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_test_util.h"

/* splitmix64: the same stream on every rank for the same state */
static uint64_t next_rand(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static unsigned char pattern(size_t i, uint64_t key)
{
    return (unsigned char)((i * 131u + key * 7u) ^ (i >> 8));
}

/* One broadcast of @p n bytes from @p root on @p comm, content keyed by @p key; returns the
 * number of wrong bytes on this rank. */
static size_t bcast_checked(MPI_Comm comm, unsigned char *buf, size_t n, int root, uint64_t key)
{
    int me;
    MPI_Comm_rank(comm, &me);
    for (size_t i = 0; i < n; i++)
        buf[i] = me == root ? pattern(i, key) : 0xEE;
    MPI_Bcast(buf, (int)n, MPI_BYTE, root, comm);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += buf[i] != pattern(i, key);
    return bad;
}

/* ---- threadchurn ---------------------------------------------------------------------- */

enum { CHURN_THREADS = 3, CHURN_MAX_BYTES = 70000 };

typedef struct churn_arg {
    int id, iters;
    MPI_Comm base;
    long bad_bytes;
} churn_arg_t;

static void *churn_thread(void *p)
{
    churn_arg_t *a = p;
    unsigned char *buf = malloc(CHURN_MAX_BYTES);
    if (!buf) {
        a->bad_bytes = -1;
        return NULL;
    }
    uint64_t rng = 0x1234 + (uint64_t)a->id * 0x10001;
    for (int i = 0; i < a->iters; i++) {
        MPI_Comm c;
        MPI_Comm_dup(a->base, &c);
        uint64_t v = next_rand(&rng);
        int root = (int)(v % (uint64_t)g_size);
        size_t n = 8 + (size_t)((v >> 16) % (CHURN_MAX_BYTES - 8));
        size_t bad = bcast_checked(c, buf, n, root, v);
        if (bad) {
            fprintf(stderr, "[rank %d] thread %d call %d: %zu of %zu bytes wrong (root %d)\n",
                    g_rank, a->id, i, bad, n, root);
            a->bad_bytes += (long)bad;
        }
        MPI_Barrier(c);
        MPI_Comm_free(&c);
    }
    free(buf);
    return NULL;
}

static void test_threadchurn(int provided, int iters)
{
    CHECK(provided == MPI_THREAD_MULTIPLE, "the MPI provides thread level %d, not MULTIPLE",
          provided);
    if (provided != MPI_THREAD_MULTIPLE) return;
    stats_t s0 = get_stats();
    churn_arg_t a[CHURN_THREADS];
    pthread_t th[CHURN_THREADS];
    for (int t = 0; t < CHURN_THREADS; t++) {
        a[t] = (churn_arg_t){.id = t, .iters = iters, .bad_bytes = 0};
        MPI_Comm_dup(MPI_COMM_WORLD, &a[t].base);
    }
    for (int t = 0; t < CHURN_THREADS; t++)
        pthread_create(&th[t], NULL, churn_thread, &a[t]);
    for (int t = 0; t < CHURN_THREADS; t++)
        pthread_join(th[t], NULL);
    for (int t = 0; t < CHURN_THREADS; t++) {
        CHECK(a[t].bad_bytes == 0, "thread %d: %ld wrong bytes", t, a[t].bad_bytes);
        MPI_Comm_free(&a[t].base);
    }
    stats_t s1 = get_stats();
    uint64_t calls = s1.bcast_calls - s0.bcast_calls, ours = s1.bcast_numacoll - s0.bcast_numacoll;
    CHECK(ours == calls && calls == (uint64_t)CHURN_THREADS * (uint64_t)iters,
          "numacoll ran %llu of %llu broadcasts, expected all %d", (unsigned long long)ours,
          (unsigned long long)calls, CHURN_THREADS * iters);
    if (g_rank == 0)
        printf("threadchurn: %d threads x %d dup/bcast/barrier/free, teams created %llu, reused "
               "%llu on rank 0\n",
               CHURN_THREADS, iters, (unsigned long long)(s1.teams_created - s0.teams_created),
               (unsigned long long)(s1.teams_reused - s0.teams_reused));
}

/* ---- freeorder ------------------------------------------------------------------------ */

static void test_freeorder(int rounds)
{
    enum { BYTES = 5000 };
    unsigned char buf[BYTES];
    stats_t s0 = get_stats();
    for (int r = 0; r < rounds; r++) {
        MPI_Comm a, b, c, d;
        MPI_Comm_dup(MPI_COMM_WORLD, &a);
        MPI_Comm_dup(MPI_COMM_WORLD, &b);
        /* give both a team (NUMACOLL_MPI_SETUP_AFTER=0: set up at the first call) */
        CHECK(bcast_checked(a, buf, 64, 0, 1) == 0, "round %d: bcast on a", r);
        CHECK(bcast_checked(b, buf, 64, 0, 2) == 0, "round %d: bcast on b", r);
        MPI_Barrier(a);
        MPI_Barrier(b);
        /* opposite free orders: the idle-team caches list the two teams in opposite orders */
        if (g_rank % 2 == 0) {
            MPI_Comm_free(&a);
            MPI_Comm_free(&b);
        } else {
            MPI_Comm_free(&b);
            MPI_Comm_free(&a);
        }
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        MPI_Comm_dup(MPI_COMM_WORLD, &d);
        size_t bad_c = bcast_checked(c, buf, 100, 0, 3 + (uint64_t)r);
        size_t bad_d = bcast_checked(d, buf, BYTES, g_size - 1, 4 + (uint64_t)r);
        CHECK(bad_c == 0 && bad_d == 0, "round %d: %zu wrong bytes on c (root 0), %zu on d "
              "(root %d)", r, bad_c, bad_d, g_size - 1);
        MPI_Barrier(c);
        MPI_Barrier(d);
        MPI_Comm_free(&c);
        MPI_Comm_free(&d);
    }
    stats_t s1 = get_stats();
    uint64_t reused = s1.teams_reused - s0.teams_reused;
    /* every communicator after the first round's two finds a team all members kept */
    CHECK(reused >= (uint64_t)(4 * rounds - 2), "only %llu of %d set-ups reused an idle team",
          (unsigned long long)reused, 4 * rounds - 2);
    CHECK(s1.bcast_numacoll - s0.bcast_numacoll == (uint64_t)(4 * rounds),
          "numacoll ran %llu of %d broadcasts",
          (unsigned long long)(s1.bcast_numacoll - s0.bcast_numacoll), 4 * rounds);
    if (g_rank == 0)
        printf("freeorder: %d rounds, %llu teams created, %llu reused on rank 0\n", rounds,
               (unsigned long long)(s1.teams_created - s0.teams_created),
               (unsigned long long)reused);
}

/* ---- level ---------------------------------------------------------------------------- */

static int level_of(const char *name)
{
    if (!strcmp(name, "single")) return MPI_THREAD_SINGLE;
    if (!strcmp(name, "funneled")) return MPI_THREAD_FUNNELED;
    if (!strcmp(name, "serialized")) return MPI_THREAD_SERIALIZED;
    if (!strcmp(name, "multiple")) return MPI_THREAD_MULTIPLE;
    return -1;
}

static void test_level(int provided)
{
    stats_t s0 = get_stats();
    unsigned char buf[256];
    for (int i = 0; i < 20; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK(bcast_checked(MPI_COMM_WORLD, buf, sizeof buf, i % g_size, (uint64_t)i) == 0,
              "call %d: wrong bytes", i);
    }
    stats_t s1 = get_stats();
    CHECK(s1.bcast_numacoll - s0.bcast_numacoll == 20 &&
              s1.barrier_numacoll - s0.barrier_numacoll == 20,
          "numacoll ran %llu of 20 broadcasts and %llu of 20 barriers at thread level %d",
          (unsigned long long)(s1.bcast_numacoll - s0.bcast_numacoll),
          (unsigned long long)(s1.barrier_numacoll - s0.barrier_numacoll), provided);
    /* a barrier on the communicator's team (the benchmark's algorithm rows:
     * numacoll_mpi_comm_team, then numacoll_barrier_with) is no MPI_Barrier call: neither
     * counter moves (numacoll's count is "of the MPI_Barrier calls, those numacoll ran") */
    void *(*comm_team)(MPI_Comm);
    int (*barrier_with)(void *, const char *);
    *(void **)&comm_team = dlsym(RTLD_DEFAULT, "numacoll_mpi_comm_team");
    *(void **)&barrier_with = dlsym(RTLD_DEFAULT, "numacoll_barrier_with");
    CHECK(comm_team && barrier_with, "numacoll_mpi_comm_team or numacoll_barrier_with not found");
    void *team = comm_team ? comm_team(MPI_COMM_WORLD) : NULL;
    CHECK(team != NULL, "MPI_COMM_WORLD has no flat numacoll team");
    for (int i = 0; i < 5 && team && barrier_with; i++)
        CHECK(barrier_with(team, "dissemination") == 0, "numacoll_barrier_with");
    stats_t s2 = get_stats();
    CHECK(s2.barrier_calls == s1.barrier_calls && s2.barrier_numacoll == s1.barrier_numacoll,
          "numacoll_barrier_with moved the MPI_Barrier counters: calls %llu -> %llu, "
          "numacoll's %llu -> %llu",
          (unsigned long long)s1.barrier_calls, (unsigned long long)s2.barrier_calls,
          (unsigned long long)s1.barrier_numacoll, (unsigned long long)s2.barrier_numacoll);
    if (g_rank == 0) printf("level: provided %d, numacoll ran every call\n", provided);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "freeorder";
    const char *arg = argc > 2 ? argv[2] : "";
    int provided = -1, want = MPI_THREAD_MULTIPLE;
    find_stats_fn();
    if (!strcmp(mode, "level")) want = level_of(arg);
    if (want < 0) {
        fprintf(stderr, "unknown thread level '%s' (single, funneled, serialized, multiple)\n",
                arg);
        return 2;
    }
    MPI_Init_thread(&argc, &argv, want, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    CHECK(g_stats_fn != NULL, "numacoll_mpi_stats not found: is libnumacoll_mpi preloaded?");
    int n = atoi(arg);
    if (!strcmp(mode, "threadchurn"))
        test_threadchurn(provided, n > 0 ? n : 200);
    else if (!strcmp(mode, "freeorder"))
        test_freeorder(n > 0 ? n : 10);
    else if (!strcmp(mode, "level"))
        test_level(provided);
    else {
        if (g_rank == 0) fprintf(stderr, "unknown mode '%s'\n", mode);
        g_fail++;
    }
    int total = total_failures(MPI_COMM_WORLD);
    if (g_rank == 0) printf("%s: %s (%d failed checks)\n", mode, total ? "FAIL" : "PASS", total);
    MPI_Finalize();
    return total ? 1 : 0;
}
