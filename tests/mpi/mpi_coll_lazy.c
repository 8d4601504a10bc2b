/*
 * mpi_coll_test, deferred set-up and per-process settings (modes lazy, bcastenv,
 * disableenv, badenv, checkenv): NUMACOLL_MPI_SETUP_AFTER, and one rank whose environment
 * differs from the others'.
 */
#define _GNU_SOURCE 1
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_coll_test.h"

/* ---- deferred set-up (NUMACOLL_MPI_SETUP_AFTER) ----------------------------------------- */

/* The documented rule: a communicator with no reusable idle team whose every call weighs
 * @p units is set up at its first call if that reaches the threshold @p T, otherwise at the
 * first call numbered c = 2, 4, 8, ... with c * units >= T. Returns that call number. */
static long setup_call(uint64_t T, uint64_t units)
{
    if (units >= T) return 1;
    long c = 2;
    while ((uint64_t)c * units < T)
        c *= 2;
    return c;
}

/* The documented rule for a node with more processes than CPUs: this rank's NUMACOLL_
 * OVERSUBSCRIBED (yes, no), else the job's processes here (the launcher's count, or all of
 * MPI_COMM_WORLD on one node) against the online CPUs. */
static int crowded_here(void)
{
    const char *mode = getenv("NUMACOLL_OVERSUBSCRIBED");
    if (mode && !strcmp(mode, "yes")) return 1;
    if (mode && !strcmp(mode, "no")) return 0;
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    if (!local) local = getenv("MPI_LOCALNRANKS");
    long procs = local ? atol(local) : g_size;
    return procs > sysconf(_SC_NPROCESSORS_ONLN);
}

void test_lazy(void)
{
    const char *e = getenv("NUMACOLL_MPI_SETUP_AFTER");
    const char *eo = getenv("NUMACOLL_MPI_SETUP_AFTER_OVERSUB");
    uint64_t T2[2] = {e ? strtoull(e, NULL, 10) : 2048, eo ? strtoull(eo, NULL, 10) : 32};
    /* the members' largest applies (mode lazyenv: the last rank's is smaller), and the
     * crowded node's threshold when any member's node is crowded */
    PMPI_Allreduce(MPI_IN_PLACE, T2, 2, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    int crowded = crowded_here();
    PMPI_Allreduce(MPI_IN_PLACE, &crowded, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    const uint64_t T = crowded && T2[1] < T2[0] ? T2[1] : T2[0];
    CHECK(g_size >= 2 && T >= 2, "lazy needs >= 2 processes and NUMACOLL_MPI_SETUP_AFTER >= 2");
    if (g_size < 2 || T < 2 || !g_stats_fn || !expect_numacoll()) return;
    int (*mode_fn)(MPI_Comm) = NULL;
    *(void **)&mode_fn = dlsym(RTLD_DEFAULT, "numacoll_mpi_comm_mode");
    unsigned char small[8];
    size_t big_n = 256 * 1024;
    unsigned char *big = malloc(big_n);
    CHECK(big != NULL, "out of memory");
    if (!big) return;

    /* 1. a communicator freed before its calls reach T: every call native, no team */
    stats_t s0 = get_stats();
    MPI_Comm a;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    long n1 = (long)T - 1;
    size_t bad = 0;
    for (long i = 0; i < n1; i++) {
        if (i % 2) {
            MPI_Barrier(a);
            continue;
        }
        int root = (int)(i / 2 % g_size);
        if (g_rank == root)
            fill(small, sizeof small, (unsigned)i);
        else
            memset(small, 0, sizeof small);
        MPI_Bcast(small, (int)sizeof small, MPI_BYTE, root, a); /* 1 + 8/1024 = 1 unit */
        bad += wrong_bytes(small, sizeof small, (unsigned)i);
    }
    MPI_Comm_free(&a);
    stats_t s1 = get_stats();
    CHECK(bad == 0, "%zu wrong bytes in the deferred broadcasts", bad);
    CHECK(s1.barrier_numacoll == s0.barrier_numacoll && s1.bcast_numacoll == s0.bcast_numacoll,
          "numacoll ran %llu barriers and %llu broadcasts of a communicator below the threshold",
          (unsigned long long)(s1.barrier_numacoll - s0.barrier_numacoll),
          (unsigned long long)(s1.bcast_numacoll - s0.bcast_numacoll));
    CHECK(s1.teams_created == s0.teams_created && s1.comms_set_up == s0.comms_set_up,
          "a communicator below the threshold got %llu teams",
          (unsigned long long)(s1.teams_created - s0.teams_created));
    CHECK(s1.comms_deferred == s0.comms_deferred + 1 && s1.comms_promoted == s0.comms_promoted,
          "deferred %llu, promoted %llu (expected 1, 0)",
          (unsigned long long)(s1.comms_deferred - s0.comms_deferred),
          (unsigned long long)(s1.comms_promoted - s0.comms_promoted));

    /* 2. barriers only (1 unit each): numacoll from call setup_call(T, 1) on, and the
     * barrier still holds afterwards (epoch check through the promoted communicator) */
    MPI_Comm b;
    MPI_Comm_dup(MPI_COMM_WORLD, &b);
    long c2 = setup_call(T, 1), n2 = c2 + 9;
    for (long i = 0; i < n2; i++)
        MPI_Barrier(b);
    stats_t s2 = get_stats();
    CHECK((long)(s2.barrier_numacoll - s1.barrier_numacoll) == n2 - c2 + 1,
          "%llu of %ld barriers went through numacoll; expected those from call %ld on",
          (unsigned long long)(s2.barrier_numacoll - s1.barrier_numacoll), n2, c2);
    CHECK(s2.comms_deferred == s1.comms_deferred + 1 && s2.comms_promoted == s1.comms_promoted + 1,
          "deferred %llu, promoted %llu (expected 1, 1)",
          (unsigned long long)(s2.comms_deferred - s1.comms_deferred),
          (unsigned long long)(s2.comms_promoted - s1.comms_promoted));
    CHECK(epoch_check(b, 30, MPI_Barrier) == 0, "the promoted communicator's barrier is broken");
    int flat = mode_fn ? mode_fn(b) == 1 : 0;

    /* 3. 256 KiB broadcasts (1 + 256 = 257 units each) from changing roots */
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    long c3 = setup_call(T, 1 + big_n / 1024), n3 = c3 + 2;
    bad = 0;
    for (long i = 0; i < n3; i++) {
        int root = (int)(i % g_size);
        if (g_rank == root)
            fill(big, big_n, (unsigned)(i + 1000));
        else
            memset(big, 0, big_n);
        MPI_Bcast(big, (int)big_n, MPI_BYTE, root, c);
        bad += wrong_bytes(big, big_n, (unsigned)(i + 1000));
    }
    stats_t s3 = get_stats();
    CHECK(bad == 0, "%zu wrong bytes in the 256 KiB broadcasts", bad);
    CHECK((long)(s3.bcast_numacoll - s2.bcast_numacoll) == n3 - c3 + 1,
          "%llu of %ld 256 KiB broadcasts went through numacoll; expected those from call %ld on",
          (unsigned long long)(s3.bcast_numacoll - s2.bcast_numacoll), n3, c3);

    /* 4. an explicit numacoll call sets a communicator up at once */
    stats_t s4 = get_stats();
    MPI_Comm f;
    MPI_Comm_dup(MPI_COMM_WORLD, &f);
    MPI_Barrier(f); /* deferred: b and c hold the teams with these members, none is idle */
    int m = mode_fn ? mode_fn(f) : -1;
    stats_t s7 = get_stats();
    CHECK(m == 1 || m == 2, "numacoll_mpi_comm_mode gave %d for a deferred communicator", m);
    CHECK(s7.comms_deferred == s4.comms_deferred + 1 && s7.comms_promoted == s4.comms_promoted + 1,
          "explicit set-up: deferred %llu, promoted %llu (expected 1, 1)",
          (unsigned long long)(s7.comms_deferred - s4.comms_deferred),
          (unsigned long long)(s7.comms_promoted - s4.comms_promoted));
    MPI_Barrier(f);
    stats_t s8 = get_stats();
    CHECK(s8.barrier_numacoll == s7.barrier_numacoll + 1,
          "the barrier after it was not numacoll's");
    MPI_Comm_free(&f);
    MPI_Comm_free(&c);

    /* 5. flat teams: a communicator with the members of an idle team takes it at once */
    if (flat) {
        MPI_Comm_free(&b); /* its team goes idle (NUMACOLL_MPI_TEAM_CACHE) */
        MPI_Comm d;
        MPI_Comm_dup(MPI_COMM_WORLD, &d);
        stats_t s5 = get_stats();
        MPI_Barrier(d);
        stats_t s6 = get_stats();
        CHECK(s6.teams_reused >= s5.teams_reused + 1 &&
                  s6.barrier_numacoll == s5.barrier_numacoll + 1 &&
                  s6.comms_deferred == s5.comms_deferred,
              "a communicator with an idle team's members was not set up at its first call "
              "(reused %llu, numacoll barriers %llu, deferred %llu)",
              (unsigned long long)(s6.teams_reused - s5.teams_reused),
              (unsigned long long)(s6.barrier_numacoll - s5.barrier_numacoll),
              (unsigned long long)(s6.comms_deferred - s5.comms_deferred));
        b = d;
    }
    MPI_Comm_free(&b);
    free(big);
    if (g_rank == 0)
        printf("lazy: threshold %llu%s; barriers from call %ld, 256 KiB broadcasts from call "
               "%ld; %s team\n",
               (unsigned long long)T, crowded ? " (crowded node)" : "", c2, c3,
               flat ? "flat" : "hierarchical");
}

/* One call of kind @p kind (0 allreduce, 1 scan, 2 allgather, 3 alltoall, 4
 * reduce_scatter_block, 5 gather) on @p c with inputs from @p key; the number of wrong
 * result elements */
static size_t env_call(MPI_Comm c, int kind, unsigned key)
{
    enum { N = 64 };
    long in[N * 8] = {0}, out[N * 8];
    int P = g_size, me = g_rank;
    size_t bad = 0;
    if (P > 8) return 0; /* the buffers hold 8 blocks (the tests run 3 ranks) */
    for (int i = 0; i < N * P; i++)
        in[i] = (long)(key * 1000 + (unsigned)me * 100 + (unsigned)i);
    memset(out, 0, sizeof out);
    switch (kind) {
    case 0:
        MPI_Allreduce(in, out, N, MPI_LONG, MPI_SUM, c);
        for (int i = 0; i < N; i++) {
            long want = 0;
            for (int r = 0; r < P; r++)
                want += (long)(key * 1000 + (unsigned)r * 100 + (unsigned)i);
            bad += out[i] != want;
        }
        break;
    case 1:
        MPI_Scan(in, out, N, MPI_LONG, MPI_SUM, c);
        for (int i = 0; i < N; i++) {
            long want = 0;
            for (int r = 0; r <= me; r++)
                want += (long)(key * 1000 + (unsigned)r * 100 + (unsigned)i);
            bad += out[i] != want;
        }
        break;
    case 2:
        MPI_Allgather(in, N, MPI_LONG, out, N, MPI_LONG, c);
        for (int r = 0; r < P; r++)
            for (int i = 0; i < N; i++)
                bad += out[r * N + i] != (long)(key * 1000 + (unsigned)r * 100 + (unsigned)i);
        break;
    case 3:
        MPI_Alltoall(in, N, MPI_LONG, out, N, MPI_LONG, c);
        for (int r = 0; r < P; r++)
            for (int i = 0; i < N; i++)
                bad += out[r * N + i] !=
                       (long)(key * 1000 + (unsigned)r * 100 + (unsigned)(me * N + i));
        break;
    case 4:
        MPI_Reduce_scatter_block(in, out, N, MPI_LONG, MPI_SUM, c);
        for (int i = 0; i < N; i++) {
            long want = 0;
            for (int r = 0; r < P; r++)
                want += (long)(key * 1000 + (unsigned)r * 100 + (unsigned)(me * N + i));
            bad += out[i] != want;
        }
        break;
    default:
        MPI_Gather(in, N, MPI_LONG, out, N, MPI_LONG, 0, c);
        if (me == 0)
            for (int r = 0; r < P; r++)
                for (int i = 0; i < N; i++)
                    bad += out[r * N + i] != (long)(key * 1000 + (unsigned)r * 100 + (unsigned)i);
        break;
    }
    return bad;
}

/* numacoll's calls of every collective so far */
static unsigned long long ran_total(const stats_t *s)
{
    return s->barrier_numacoll + s->bcast_numacoll + s->allreduce_numacoll + s->reduce_numacoll +
           s->reduce_scatter_block_numacoll + s->reduce_scatter_numacoll + s->scan_numacoll +
           s->exscan_numacoll + s->allgather_numacoll + s->allgatherv_numacoll +
           s->gather_numacoll + s->gatherv_numacoll + s->scatter_numacoll +
           s->scatterv_numacoll + s->alltoall_numacoll + s->alltoallv_numacoll;
}

/* Members that differ in their configuration (the last rank, before its first collective,
 * turns NUMACOLL_MPI_BCAST off, or sets NUMACOLL_DISABLE=1, or an invalid value, or another
 * NUMACOLL_BARRIER, which the team's creation compares): the
 * agreement must notice and leave the communicator native on every member, with the right
 * bytes and no hang, whether its first call is a barrier, a broadcast, a reduction, a scan
 * or a data-movement call, and across the deferral's checkpoints. */
void test_bcast_env(const char *mode)
{
    unsigned char buf[300];
    stats_t s0 = get_stats();
    for (int first = 0; first < 2; first++) {
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        size_t bad = 0;
        for (int i = 0; i < 40; i++) {
            if ((i + first) % 3 == 0) {
                MPI_Barrier(c);
                continue;
            }
            int root = i % g_size;
            if (g_rank == root)
                fill(buf, sizeof buf, (unsigned)i);
            else
                memset(buf, 0, sizeof buf);
            MPI_Bcast(buf, (int)sizeof buf, MPI_BYTE, root, c);
            bad += wrong_bytes(buf, sizeof buf, (unsigned)i);
        }
        CHECK(bad == 0, "%zu wrong bytes (first call a %s)", bad, first ? "broadcast" : "barrier");
        MPI_Comm_free(&c);
    }
    /* first calls of the other kinds, then a mix of all of them and broadcasts */
    static const char *const kinds[] = {"allreduce", "scan", "allgather", "alltoall",
                                        "reduce_scatter_block", "gather"};
    for (int first = 0; first < 6; first++) {
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        size_t bad = 0;
        for (int i = 0; i < 12; i++) {
            if (i > 0 && i % 4 == 0) {
                int root = i % g_size;
                fill_for(buf, sizeof buf, (unsigned)i, g_rank == root);
                MPI_Bcast(buf, (int)sizeof buf, MPI_BYTE, root, c);
                bad += wrong_bytes(buf, sizeof buf, (unsigned)i);
                continue;
            }
            bad += env_call(c, i == 0 ? first : (first + i) % 6, (unsigned)i);
        }
        CHECK(bad == 0, "%zu wrong results (first call a %s)", bad, kinds[first]);
        MPI_Comm_free(&c);
    }
    stats_t s1 = get_stats();
    CHECK(ran_total(&s1) == ran_total(&s0),
          "numacoll ran %llu calls on communicators whose members differ in their "
          "configuration",
          ran_total(&s1) - ran_total(&s0));
    if (g_rank == 0) printf("%s: 8 communicators, 152 calls, bytes right, native\n", mode);
}


/* A data-movement setting that differs between the members (the last rank sets
 * NUMACOLL_MOVE_CMA_MIN=4K): the communicator's agreement passes (it covers the layers'
 * switches only), the data-movement set-up fails with NUMACOLL_ERR_CONFIG on every member,
 * whose calls then go to the MPI with the right bytes; the warning naming the setting is
 * printed without NUMACOLL_VERBOSE (the test's expectation) */
void test_move_env(void)
{
    stats_t s0 = get_stats();
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    size_t bad = 0;
    for (int i = 0; i < 12; i++)
        bad += env_call(c, i % 2 ? 2 : 3, (unsigned)i); /* allgather, alltoall */
    CHECK(bad == 0, "%zu wrong results", bad);
    MPI_Comm_free(&c);
    stats_t s1 = get_stats();
    unsigned long long ran = (s1.allgather_numacoll - s0.allgather_numacoll) +
                             (s1.alltoall_numacoll - s0.alltoall_numacoll);
    CHECK(ran == 0, "numacoll ran %llu data-movement calls whose members' settings differ", ran);
    if (g_rank == 0) printf("moveenv: 12 calls, bytes right, native\n");
}
