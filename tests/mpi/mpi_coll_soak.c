/*
 * mpi_coll_test, soak (mode soak): seeded random barriers, broadcasts, allreduces and
 * reduces (soak_reduce.h), reduce-scatters and scans (soak_scatter_scan.h), the gather
 * family (soak_move.h) and alltoalls (soak_alltoall.h) on overlapping communicators, one
 * re-created now and then.
 */
#define _GNU_SOURCE 1
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpi_coll_test.h"
#include "soak_move.h"
#include "soak_alltoall.h"
#include "soak_reduce.h"
#include "soak_scatter_scan.h"

/* ---- soak: random calls on overlapping communicators ---------------------------------- */

static uint64_t soak_next(uint64_t *x) /* splitmix64: the same stream on every rank */
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* a message size from size class @p cls (0-15) and random bits @p v: 0 B (1 in 16), up to
 * 1 KiB (inline, 8 in 16), up to 256 KiB (queue, 5 in 16), up to 4 MiB (1 in 16), under
 * 64 B (1 in 16) */
static size_t soak_size(int cls, uint64_t v)
{
    if (cls == 0) return 0;
    if (cls < 9) return 1 + (size_t)(v % 1024);
    if (cls < 14) return 1024 + (size_t)(v % (255 * 1024));
    if (cls == 14) return ((size_t)256 << 10) + (size_t)(v % ((size_t)15 << 18));
    return (size_t)(v % 64);
}

/* the MPI_COMM_WORLD ranks of @p comm's members, in its rank order; returns the size */
static int soak_members(MPI_Comm comm, int *out)
{
    if (comm == MPI_COMM_NULL) return 0;
    MPI_Group g, w;
    int p;
    MPI_Comm_size(comm, &p);
    MPI_Comm_group(comm, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &w);
    int *in = malloc((size_t)p * sizeof *in);
    for (int i = 0; i < p; i++)
        in[i] = i;
    MPI_Group_translate_ranks(g, p, in, w, out);
    free(in);
    MPI_Group_free(&g);
    MPI_Group_free(&w);
    return p;
}

/* @p steps calls drawn from one seeded stream (NC_SOAK_SEED, else rank 0's clock, printed
 * for a rerun): barriers, allreduces and reduces (soak_reduce.h: 1 in 8 calls, up to
 * 192 KiB; a quarter of them MPI_Reduce_scatter(_block), MPI_Scan or MPI_Exscan instead,
 * soak_scatter_scan.h), allgathers, gathers, scatters and their v-forms (soak_move.h: 1 in
 * 16 calls, blocks up to 64 KiB; a quarter of them MPI_Alltoall(v) instead,
 * soak_alltoall.h) and broadcasts of 0 B to 4 MiB from random roots, some with a type pair
 * (contiguous doubles at the root, every other double on the receivers), on six
 * communicators whose member sets and rank orders differ (world, a dup, parity halves,
 * reversed ranks, all but the last rank, and one freed and duplicated again now and
 * then). The calls on one communicator
 * interleave with the others' in each process, and the deferred set-up
 * (NUMACOLL_MPI_SETUP_AFTER) ends at a different step for each. Every receiver checks
 * every byte and the canary bytes past its message. Barriers: before each, a rank stores
 * the step number into its slot for that communicator (a shared window on the node), and
 * after it every member's slot must hold at least that step (a member cannot store a
 * later one before this barrier has let it out). NC_SOAK_NOOP=1 replaces the barriers
 * by no-ops; then the check must find members left behind (proof that it can fail). */
void test_soak(int steps)
{
    enum { NCOMM = 6, CANARY = 64 };
    const size_t maxb = (size_t)4 << 20;
    uint64_t seed = 0;
    const char *e = getenv("NC_SOAK_SEED");
    if (g_rank == 0) seed = e ? strtoull(e, NULL, 0) : (uint64_t)time(NULL) * 2654435761u;
    PMPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (g_rank == 0) printf("soak: seed %llu (NC_SOAK_SEED to rerun)\n", (unsigned long long)seed);
    fflush(stdout);
    MPI_Comm comms[NCOMM];
    comms[0] = MPI_COMM_WORLD;
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_rank, &comms[2]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, g_size - g_rank, &comms[3]);
    MPI_Comm_split(MPI_COMM_WORLD, g_rank == g_size - 1 ? MPI_UNDEFINED : 0, g_rank, &comms[4]);
    MPI_Comm_dup(comms[3], &comms[5]);
    unsigned char *buf = malloc(2 * maxb + CANARY); /* room for a strided receive */
    if (!buf) { /* a rank that left the loop would leave the others waiting */
        fprintf(stderr, "[rank %d] soak: out of memory\n", g_rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Datatype dbl2r; /* a double followed by a gap of one: every other double */
    MPI_Type_create_resized(MPI_DOUBLE, 0, 2 * (MPI_Aint)sizeof(double), &dbl2r);
    MPI_Type_commit(&dbl2r);
    int *wr[NCOMM], np[NCOMM];
    for (int k = 0; k < NCOMM; k++) {
        wr[k] = malloc((size_t)g_size * sizeof(int));
        np[k] = soak_members(comms[k], wr[k]);
    }
    const int noop = getenv("NC_SOAK_NOOP") && atoi(getenv("NC_SOAK_NOOP")) == 1;
    MPI_Win bwin = MPI_WIN_NULL;
    long *bmine = NULL, **bslot = calloc((size_t)g_size, sizeof *bslot);
    if (MPI_Win_allocate_shared(NCOMM * (MPI_Aint)sizeof(long), (int)sizeof(long), MPI_INFO_NULL,
                                MPI_COMM_WORLD, &bmine, &bwin) == MPI_SUCCESS) {
        for (int q = 0; q < g_size; q++) {
            MPI_Aint sz;
            int du;
            MPI_Win_shared_query(bwin, q, &sz, &du, &bslot[q]);
        }
        MPI_Win_lock_all(MPI_MODE_NOCHECK, bwin);
        for (int k = 0; k < NCOMM; k++)
            __atomic_store_n(&bmine[k], -1L, __ATOMIC_SEQ_CST);
        MPI_Win_sync(bwin);
        PMPI_Barrier(MPI_COMM_WORLD); /* native: every slot initialised before the first use */
    } else {
        CHECK(0, "MPI_Win_allocate_shared failed: no barrier check");
    }
    long early = 0;
    FILE *trace = NULL; /* NC_SOAK_TRACE=PREFIX: each rank logs its steps to PREFIX.<rank> */
    if (getenv("NC_SOAK_TRACE")) {
        char tn[512];
        snprintf(tn, sizeof tn, "%s.%d", getenv("NC_SOAK_TRACE"), g_rank);
        trace = fopen(tn, "w");
    }
    stats_t s0 = get_stats();
    uint64_t x = seed;
    long nbar = 0, nbc = 0, npair = 0, nchurn = 0, nred = 0, nred_got = 0, nmove = 0, nmove_got = 0;
    long na2a = 0, na2a_got = 0, nss = 0, nss_got = 0;
    /* calls on a communicator of one member: the MPI library's (docs/mpi.md), so left out
     * of the shares numacoll must take */
    long alone_bar = 0, alone_bc = 0, alone_red = 0, alone_move = 0, alone_a2a = 0;
    stats_t alone = {0}, alone_at = {0}; /* the counters' growth in those steps */
    int in_alone = 0;
    soak_ss_tally_t sst = {0};
    double mib = 0;
    for (int st = 0; st < steps; st++) {
        /* every draw happens on every rank, members of the chosen communicator or not */
        uint64_t a = soak_next(&x), b = soak_next(&x), c = soak_next(&x);
        if (in_alone) stats_add_since(&alone, &alone_at);
        in_alone = 0;
        int k = (int)(a % NCOMM), op = (int)((a >> 8) % 16), cls = (int)(b % 16);
        size_t n = soak_size(cls, b >> 8);
        if (op == 15) { /* churn: comms[5] freed and duplicated from another communicator */
            int from = (int)(c % 4);
            if (comms[5] != MPI_COMM_NULL) MPI_Comm_free(&comms[5]);
            MPI_Comm_dup(comms[from], &comms[5]);
            np[5] = soak_members(comms[5], wr[5]);
            nchurn++;
            continue;
        }
        MPI_Comm cm = comms[k];
        if (cm == MPI_COMM_NULL) continue;
        int r, p;
        MPI_Comm_rank(cm, &r);
        MPI_Comm_size(cm, &p);
        if (p == 1) {
            alone_at = get_stats();
            in_alone = 1;
        }
        if (trace) {
            fprintf(trace, "step %d comm %d (rank %d of %d) op %d n %zu root %d t %.3f\n", st, k, r,
                    p, op, n, (int)(c % (uint64_t)p), MPI_Wtime());
            fflush(trace);
        }
        if (op < 4) {
            if (bwin != MPI_WIN_NULL) {
                __atomic_store_n(&bmine[k], (long)st, __ATOMIC_SEQ_CST);
                MPI_Win_sync(bwin);
            }
            int rc = noop ? MPI_SUCCESS : MPI_Barrier(cm);
            CHECK(rc == MPI_SUCCESS, "step %d: barrier on communicator %d: rc %d", st, k, rc);
            if (bwin != MPI_WIN_NULL) {
                MPI_Win_sync(bwin);
                for (int m = 0; m < np[k]; m++) {
                    long v = __atomic_load_n(&bslot[wr[k][m]][k], __ATOMIC_SEQ_CST);
                    if (v < st) {
                        early++;
                        if (!noop)
                            CHECK(0,
                                  "step %d: left the barrier on communicator %d while "
                                  "world rank %d had not entered it (its last: step %ld)",
                                  st, k, wr[k][m], v);
                    }
                }
            }
            nbar++;
            alone_bar += p == 1;
            continue;
        }
        if (op == 10 && (c >> 24) % 4 == 0) { /* alltoall(v), blocks under 64 KiB a pair */
            na2a++;
            alone_a2a += p == 1;
            na2a_got += soak_alltoall_step(cm, wr[k], r, p, st, c, n % 65536, buf);
            continue;
        }
        if (op == 10) { /* the gather family, blocks under 64 KiB */
            nmove++;
            alone_move += p == 1;
            nmove_got += soak_move_step(cm, wr[k], r, p, st, c, n % 65536, buf);
            continue;
        }
        if ((op == 11 || op == 12) && (a >> 16) % 4 == 0) { /* reduce-scatter or scan */
            nss++;
            nss_got += soak_scatter_scan_step(cm, wr[k], r, p, st, c, n % (192 << 10), buf, &sst);
            continue;
        }
        if (op == 11 || op == 12) { /* a reduction of up to 3 fragments (192 KiB) */
            nred++;
            alone_red += p == 1;
            nred_got += soak_reduce_step(cm, wr[k], r, p, st, c, n % (192 << 10), buf);
            continue;
        }
        int root = (int)(c % (uint64_t)p);
        unsigned key = (unsigned)(st * 31 + k);
        if (op >= 13 && n >= sizeof(double)) {
            /* n / 8 doubles: contiguous at the root, every other double on the receivers */
            int cnt = (int)(n / sizeof(double));
            size_t span = 2 * (size_t)cnt * sizeof(double);
            if (r == root) {
                fill(buf, (size_t)cnt * sizeof(double), key);
            } else {
                memset(buf, 0xEE, span + CANARY);
            }
            int rc = r == root ? MPI_Bcast(buf, cnt, MPI_DOUBLE, root, cm)
                               : MPI_Bcast(buf, cnt, dbl2r, root, cm);
            CHECK(rc == MPI_SUCCESS, "step %d: pair broadcast rc %d", st, rc);
            if (r != root) {
                size_t bad = 0, gap = 0;
                unsigned char tmp[sizeof(double)];
                for (int i = 0; i < cnt; i++) {
                    memcpy(tmp, buf + 2 * (size_t)i * sizeof(double), sizeof tmp);
                    for (size_t j = 0; j < sizeof tmp; j++)
                        bad += tmp[j] != pattern((long)((size_t)i * sizeof tmp + j), (int)key);
                    for (size_t j = 0; j < sizeof(double); j++)
                        gap += buf[(2 * (size_t)i + 1) * sizeof(double) + j] != 0xEE;
                }
                for (size_t j = 0; j < CANARY; j++)
                    gap += buf[span + j] != 0xEE;
                CHECK(bad == 0 && gap == 0,
                      "step %d: %d doubles from root %d on communicator %d into a strided "
                      "type: %zu wrong bytes, %zu bytes written outside the elements",
                      st, cnt, root, k, bad, gap);
            }
            npair++;
        } else {
            fill_for(buf, n, key, r == root);
            memset(buf + n, 0xEE, CANARY);
            int rc = MPI_Bcast(buf, (int)n, MPI_BYTE, root, cm);
            CHECK(rc == MPI_SUCCESS, "step %d: broadcast rc %d", st, rc);
            size_t bad = r == root ? 0 : wrong_bytes(buf, n, key), over = 0;
            for (size_t j = 0; j < CANARY; j++)
                over += buf[n + j] != 0xEE;
            CHECK(bad == 0 && over == 0,
                  "step %d: %zu bytes from root %d on communicator %d (size %d): %zu wrong, "
                  "%zu canary bytes past the message overwritten",
                  st, n, root, k, p, bad, over);
        }
        nbc++;
        alone_bc += p == 1;
        mib += (double)n / (1 << 20);
    }
    if (in_alone) stats_add_since(&alone, &alone_at);
    stats_t s1 = get_stats();
    if (bwin != MPI_WIN_NULL) {
        MPI_Win_unlock_all(bwin);
        MPI_Win_free(&bwin);
    }
    free(bslot);
    for (int k = 0; k < NCOMM; k++)
        free(wr[k]);
    for (int k = 1; k < NCOMM; k++)
        if (comms[k] != MPI_COMM_NULL) MPI_Comm_free(&comms[k]);
    MPI_Type_free(&dbl2r);
    soak_ss_fini();
    free(buf);
    if (trace) fclose(trace);
    long nb = (long)(s1.bcast_numacoll - s0.bcast_numacoll);
    long nr = (long)(s1.barrier_numacoll - s0.barrier_numacoll);
    long nrd = (long)(s1.allreduce_numacoll - s0.allreduce_numacoll + s1.reduce_numacoll -
                      s0.reduce_numacoll);
    long nmv = (long)(s1.allgather_numacoll - s0.allgather_numacoll + s1.allgatherv_numacoll -
                      s0.allgatherv_numacoll + s1.gather_numacoll - s0.gather_numacoll +
                      s1.gatherv_numacoll - s0.gatherv_numacoll + s1.scatter_numacoll -
                      s0.scatter_numacoll + s1.scatterv_numacoll - s0.scatterv_numacoll);
    long na = (long)(s1.alltoall_numacoll - s0.alltoall_numacoll + s1.alltoallv_numacoll -
                     s0.alltoallv_numacoll);
    /* pseudo-nodes: hierarchical communicators run alltoall, gatherv and scatterv natively
     * (docs/mpi.md), so the gather family's share is taken over the other four there */
    const int hier = getenv("NUMACOLL_FAKE_NODES") && atoi(getenv("NUMACOLL_FAKE_NODES")) > 0;
    long nmove_elig = nmove - alone_move;
    if (hier)
        nmove_elig = (long)(s1.allgather_calls - s0.allgather_calls - alone.allgather_calls +
                            s1.allgatherv_calls - s0.allgatherv_calls -
                            alone.allgatherv_calls + s1.gather_calls - s0.gather_calls -
                            alone.gather_calls + s1.scatter_calls - s0.scatter_calls -
                            alone.scatter_calls);
    const long na2a_elig = na2a - alone_a2a, nbc_elig = nbc - alone_bc;
    const long nbar_elig = nbar - alone_bar, nred_elig = nred - alone_red;
    if (expect_numacoll() && g_stats_fn && !g_fail && !hier)
        CHECK(na2a_elig == 0 || na > na2a_elig / 2,
              "numacoll ran only %ld of %ld alltoall(v) calls it takes", na, na2a_elig);
    if (expect_numacoll() && g_stats_fn && !g_fail)
        CHECK(nb > nbc_elig / 2 && (noop || nr > nbar_elig / 2) &&
                  (nred_elig == 0 || nrd > nred_elig / 2) &&
                  (nmove_elig == 0 || nmv > nmove_elig / 2),
              "numacoll ran only %ld of %ld broadcasts, %ld of %ld barriers, %ld of %ld "
              "reductions and %ld of %ld gather-family calls it takes",
              nb, nbc_elig, nr, nbar_elig, nrd, nred_elig, nmv, nmove_elig);
    long tot[11] = {nbc, nb, nbar, nr, early, nred, nrd, nred_got, nmove, nmv, nmove_got}, all[11];
    PMPI_Allreduce(tot, all, 11, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (noop) {
        CHECK(all[4] > 0, "no-op barriers: the check found no member left behind");
        if (g_rank == 0)
            printf("soak: no-op barriers: %ld exits before a member had entered\n", all[4]);
    }
    if (g_rank == 0)
        printf("soak: %d steps, %ld communicator re-creations; over the ranks %ld broadcast "
               "calls (%ld numacoll's, %ld type pairs here), %ld barrier calls (%ld "
               "numacoll's), %ld allreduce/reduce calls (%ld numacoll's, %ld results "
               "checked), %ld gather-family calls (%ld numacoll's, %ld receptions checked), "
               "%.0f MiB of broadcasts here\n",
               steps, nchurn, all[0], all[1], npair, all[2], all[3], all[5], all[6], all[7],
               all[8], all[9], all[10], mib);
    /* reduce-scatters and scans: numacoll's where it takes them (not the user-defined op;
     * on pseudo-nodes the scans of communicators whose nodes interleave go to the MPI
     * library, so the share is taken over the reduce-scatters there) */
    long nsso = 0, ss_elig = 0, ss_user = 0;
    for (int kd = 0; kd < SOAK_SS_KINDS; kd++) {
        nsso += sst.ours[kd];
        ss_user += sst.user[kd];
        if (!hier || kd < SOAK_SS_SCAN) ss_elig += sst.calls[kd] - sst.user[kd] - sst.alone[kd];
    }
    if (expect_numacoll() && g_stats_fn && !g_fail)
        CHECK(ss_elig == 0 || nsso > ss_elig / 2,
              "numacoll ran only %ld of %ld reduce-scatter/scan calls it takes", nsso, ss_elig);
    long sl[16] = {sst.calls[0], sst.calls[1], sst.calls[2], sst.calls[3], sst.ours[0],
                   sst.ours[1], sst.ours[2],  sst.ours[3],  ss_user,      sst.exact,
                   sst.near,     sst.unchecked, sst.rank0_kept, nss, nss_got, 0},
         sa[16];
    PMPI_Allreduce(sl, sa, 16, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (g_rank == 0)
        printf("soak: %ld reduce-scatter/scan calls over the ranks: %s %ld (numacoll %ld), %s %ld "
               "(numacoll %ld), %s %ld (numacoll %ld), %s %ld (numacoll %ld); %ld with a "
               "user-defined op (the MPI library's); results checked: %ld bitwise against the "
               "rank-order fold, %ld within epsilons, %ld left unchecked (a known fault of the "
               "MPI library's op); %ld exscans left rank 0's recvbuf untouched\n",
               sa[13], soak_ss_names[0], sa[0], sa[4], soak_ss_names[1], sa[1], sa[5],
               soak_ss_names[2], sa[2], sa[6], soak_ss_names[3], sa[3], sa[7], sa[8], sa[9],
               sa[10], sa[11], sa[12]);
    long at[3] = {na2a, na, na2a_got}, aall[3];
    PMPI_Allreduce(at, aall, 3, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (g_rank == 0)
        printf("soak: %ld alltoall(v) calls over the ranks (%ld numacoll's, %ld receptions "
               "checked)\n",
               aall[0], aall[1], aall[2]);
}

