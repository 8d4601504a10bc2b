/*
 * A member without memory for the stage of a non-contiguous datatype (its address space
 * limited by RLIMIT_AS for one call) in MPI_Allgather, MPI_Allgatherv, MPI_Gather (at the
 * root; then a sender, to root 0), MPI_Scatter (at the root), MPI_Alltoall, MPI_Alltoallv
 * and MPI_Alltoallw: it gets MPI_ERR_NO_MEM; every member that reads a block of it gets MPI_ERR_ARG, and none waits for it
 * (NUMACOLL_TIMEOUT would turn a wait into a timeout); the next call of the same
 * collective, with the limit lifted, is right on every rank and numacoll's.
 *
 *   mpi_nomem_test [hier | pad]
 *
 * hier: a hierarchical communicator (NUMACOLL_FAKE_NODES=2): the gather family's
 * collectives with a hierarchical path (alltoall(v,w) are the MPI library's there), then
 * MPI_Reduce to rank 0, MPI_Reduce_scatter_block and MPI_Scan of plain ints, whose
 * hierarchical paths take scratch buffers (a reduce: every node leader but the root; the
 * others: every member). The last rank, the victim, is a node's leader or not depending on
 * the size (pseudo-nodes are blocks of consecutive ranks: rank r is on node r * 2 / size);
 * its stage and the scratch buffers of the node steps (the whole, a node's part, a
 * reduction's vector) are beyond the limit.
 *
 * pad: an MPI_Allreduce (MINLOC) of MPI_DOUBLE_INT, whose padding bytes the layer sets aside
 * in a buffer of its own for the call, without memory for that buffer on the victim: the
 * call must still succeed with the right result everywhere (NUMACOLL_VERBOSE=1 says the
 * padding may be written).
 *
 * The stage's datatype is 2 ints in an extent of 4 (not contiguous); each block holds
 * BLOCK_INTS ints of data, so that a stage of P blocks is far beyond the headroom the
 * limit leaves.
 */
#include <malloc.h>
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "mpi_test_util.h"

enum { BLOCK_INTS = 1 << 20, HEADROOM = 4 << 20, G0_INTS = 2 * BLOCK_INTS };
/* K_GATHER0: a gather to rank 0 whose send side (the victim's too) is staged: blocks of
 * G0_INTS ints, so that the victim's stage of one block is well beyond the headroom */
enum { K_ALLGATHER, K_ALLGATHERV, K_GATHER, K_GATHER0, K_SCATTER, K_ALLTOALL, K_ALLTOALLV,
       K_ALLTOALLW, K_REDUCE, K_REDUCE_SCATTER_BLOCK, K_SCAN, K_COUNT };
static const char *const k_names[K_COUNT] = {
        "MPI_Allgather", "MPI_Allgatherv", "MPI_Gather",    "MPI_Gather to rank 0",
        "MPI_Scatter",   "MPI_Alltoall",   "MPI_Alltoallv", "MPI_Alltoallw",
        "MPI_Reduce to rank 0", "MPI_Reduce_scatter_block", "MPI_Scan"};
/* the reductions' vectors, plain ints: a reduce's of RED_INTS, a reduce-scatter's block of
 * BLOCK_INTS (P blocks in all), a scan's of BLOCK_INTS */
enum { RED_INTS = 2 * BLOCK_INTS };

static MPI_Datatype g_pair; /* 2 ints, extent 4 ints */
static int g_victim;        /* the rank without memory (the root of gather and scatter) */

/* the layer's numacoll counter of collective @p k */
static uint64_t numacoll_count(int k)
{
    stats_t s = get_stats();
    const uint64_t v[K_COUNT] = {s.allgather_numacoll, s.allgatherv_numacoll, s.gather_numacoll,
                                 s.gather_numacoll,
                                 s.scatter_numacoll,   s.alltoall_numacoll,
                                 s.alltoallv_numacoll, s.alltoallw_numacoll,
                                 s.reduce_numacoll,    s.reduce_scatter_block_numacoll,
                                 s.scan_numacoll};
    return v[k];
}

/* this process's address space now, in bytes (/proc/self/statm) */
static size_t address_space(void)
{
    unsigned long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%lu", &pages) != 1) pages = 0;
        fclose(f);
    }
    return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
}

/* One call of collective @p k: the receive side (the send side of scatter) in pairs of
 * @p in ints of every 4, the other side plain ints; 0 on success or the MPI's error */
static int call(int k, MPI_Comm comm, int *plain, int *spread)
{
    const int P = g_size, n = BLOCK_INTS / 2; /* pairs per block */
    int counts[64], displs[64], bdispls[64];
    MPI_Datatype ptypes[64], itypes[64];
    for (int r = 0; r < P; r++) {
        counts[r] = n, displs[r] = r * n;
        bdispls[r] = r * n * 16; /* alltoallw: bytes */
        ptypes[r] = g_pair, itypes[r] = MPI_INT;
    }
    switch (k) {
    case K_REDUCE:
        return MPI_Reduce(plain, spread, RED_INTS, MPI_INT, MPI_SUM, 0, comm);
    case K_REDUCE_SCATTER_BLOCK:
        return MPI_Reduce_scatter_block(plain, spread, BLOCK_INTS, MPI_INT, MPI_SUM, comm);
    case K_SCAN:
        return MPI_Scan(plain, spread, BLOCK_INTS, MPI_INT, MPI_SUM, comm);
    case K_ALLGATHER:
        return MPI_Allgather(plain, BLOCK_INTS, MPI_INT, spread, n, g_pair, comm);
    case K_ALLGATHERV:
        return MPI_Allgatherv(plain, BLOCK_INTS, MPI_INT, spread, counts, displs, g_pair, comm);
    case K_GATHER:
        return MPI_Gather(plain, BLOCK_INTS, MPI_INT, spread, n, g_pair, g_victim, comm);
    case K_GATHER0:
        return MPI_Gather(spread, G0_INTS / 2, g_pair, plain, G0_INTS, MPI_INT, 0, comm);
    case K_SCATTER:
        return MPI_Scatter(spread, n, g_pair, plain, BLOCK_INTS, MPI_INT, g_victim, comm);
    case K_ALLTOALL:
        return MPI_Alltoall(plain, BLOCK_INTS, MPI_INT, spread, n, g_pair, comm);
    case K_ALLTOALLV: {
        int sc[64], sd[64];
        for (int r = 0; r < P; r++)
            sc[r] = BLOCK_INTS, sd[r] = r * BLOCK_INTS;
        return MPI_Alltoallv(plain, sc, sd, MPI_INT, spread, counts, displs, g_pair, comm);
    }
    default: {
        int sc[64], sd[64];
        for (int r = 0; r < P; r++)
            sc[r] = BLOCK_INTS, sd[r] = r * BLOCK_INTS * 4;
        return MPI_Alltoallw(plain, sc, sd, itypes, spread, counts, bdispls, ptypes, comm);
    }
    }
}

/* the ints rank @p from sends to rank @p to (the same for every destination where the
 * collective has one block per member) */
static int value(int k, int from, int to, int i)
{
    int per_dest = k == K_SCATTER || k >= K_ALLTOALL;
    return from * 1000003 + (per_dest ? to * 7919 : 0) + i;
}

/* int i of rank @p from's input to a reduction (small: no sum overflows) */
static int red_value(int from, size_t i)
{
    return from * 1009 + (int)(i % 4099);
}

static void fill(int k, int *plain, int *spread)
{
    const int P = g_size;
    if (k >= K_REDUCE) {
        const size_t n = k == K_REDUCE ? RED_INTS : k == K_SCAN ? BLOCK_INTS
                                                                : (size_t)BLOCK_INTS * P;
        for (size_t i = 0; i < n; i++)
            plain[i] = red_value(g_rank, i);
        return;
    }
    if (k == K_SCATTER) { /* the root's spread blocks, one per destination */
        for (int d = 0; d < P; d++)
            for (int i = 0; i < BLOCK_INTS; i++)
                spread[(size_t)d * BLOCK_INTS * 2 + (size_t)(i / 2) * 4 + i % 2] =
                        value(k, g_victim, d, i);
        return;
    }
    if (k == K_GATHER0) { /* this member's spread block */
        for (int i = 0; i < G0_INTS; i++)
            spread[(size_t)(i / 2) * 4 + i % 2] = value(k, g_rank, 0, i);
        return;
    }
    int per_dest = k >= K_ALLTOALL;
    for (int d = 0; d < (per_dest ? P : 1); d++)
        for (int i = 0; i < BLOCK_INTS; i++)
            plain[(size_t)d * BLOCK_INTS + i] = value(k, g_rank, d, i);
}

/* the received blocks right (a sample of each) */
static int right(int k, const int *plain, const int *spread)
{
    const int P = g_size;
    if (k >= K_REDUCE) { /* the sums, over every rank (a scan's: ranks 0 to this one) */
        if (k == K_REDUCE && g_rank != 0) return 1;
        const size_t n = k == K_REDUCE ? RED_INTS : BLOCK_INTS;
        const size_t at = k == K_REDUCE_SCATTER_BLOCK ? (size_t)g_rank * BLOCK_INTS : 0;
        const int last = k == K_SCAN ? g_rank : P - 1;
        for (size_t i = 0; i < n; i += 4099 / 3) {
            int sum = 0;
            for (int r = 0; r <= last; r++)
                sum += red_value(r, at + i);
            if (spread[i] != sum) return 0;
        }
        return 1;
    }
    if (k == K_SCATTER) {
        for (int i = 0; i < BLOCK_INTS; i += 4099)
            if (plain[i] != value(k, g_victim, g_rank, i)) return 0;
        return 1;
    }
    if (k == K_GATHER && g_rank != g_victim) return 1;
    if (k == K_GATHER0) {
        for (int o = 0; g_rank == 0 && o < P; o++)
            for (int i = 0; i < G0_INTS; i += 4099)
                if (plain[(size_t)o * G0_INTS + i] != value(k, o, 0, i)) return 0;
        return 1;
    }
    for (int o = 0; o < P; o++)
        for (int i = 0; i < BLOCK_INTS; i += 4099)
            if (spread[(size_t)o * BLOCK_INTS * 2 + (size_t)(i / 2) * 4 + i % 2] !=
                value(k, o, g_rank, i))
                return 0;
    return 1;
}

static void test_collective(int k, MPI_Comm comm)
{
    const int P = g_size;
    const size_t plain_ints = k == K_GATHER0 ? (size_t)G0_INTS * P
                              : k == K_REDUCE ? RED_INTS
                                              : (size_t)BLOCK_INTS * (k >= K_ALLTOALL ? P : 1);
    int *plain = malloc(plain_ints * sizeof(int));
    /* the spread side: P blocks, or one of G0_INTS in pairs */
    int *spread = calloc((size_t)(P > 2 ? P : 2) * BLOCK_INTS * 2, sizeof(int));
    if (!plain || !spread) {
        CHECK(0, "out of memory for the test's buffers");
        return;
    }
    fill(k, plain, spread);
    /* the call without memory on the victim */
    struct rlimit saved, low;
    int limited = 0;
    if (g_rank == g_victim && getrlimit(RLIMIT_AS, &saved) == 0) {
        low = saved;
        low.rlim_cur = address_space() + HEADROOM;
        limited = setrlimit(RLIMIT_AS, &low) == 0;
        CHECK(limited, "setrlimit(RLIMIT_AS) failed");
    }
    int rc = call(k, comm, plain, spread);
    if (limited) setrlimit(RLIMIT_AS, &saved);
    /* who must fail: the victim, and the members reading a block of it (a gather's
     * senders read nothing, its root reads the victim's) with MPI_ERR_ARG; a reduce needs
     * memory on a node leader only, so where the victim leads no node, nobody fails, and
     * otherwise the root fails with it */
    const int victim_leads = (g_victim - 1) * 2 / P != g_victim * 2 / P;
    int readers = k == K_GATHER ? 0 : k == K_GATHER0 || k == K_REDUCE ? g_rank == 0 : 1;
    int must_fail = g_rank == g_victim || readers, cls = MPI_SUCCESS;
    if (k == K_REDUCE && !victim_leads) must_fail = 0;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    CHECK((rc != MPI_SUCCESS) == must_fail, "%s without memory on rank %d: rank %d returned %d",
          k_names[k], g_victim, g_rank, rc);
    CHECK(!must_fail || g_rank == g_victim || cls == MPI_ERR_ARG,
          "%s without memory on rank %d: rank %d's error class is %d, not MPI_ERR_ARG",
          k_names[k], g_victim, g_rank, cls);
    CHECK(g_rank != g_victim || !must_fail || cls == MPI_ERR_NO_MEM,
          "%s without memory on rank %d: its error class is %d, not MPI_ERR_NO_MEM", k_names[k],
          g_victim, cls);
    /* the next call, with memory: right and numacoll's */
    fill(k, plain, spread);
    uint64_t before = numacoll_count(k);
    rc = call(k, comm, plain, spread);
    CHECK(rc == MPI_SUCCESS, "%s after the failed call: rank %d returned %d", k_names[k], g_rank,
          rc);
    CHECK(rc != MPI_SUCCESS || right(k, plain, spread), "%s after the failed call: wrong data on "
          "rank %d", k_names[k], g_rank);
    CHECK(numacoll_count(k) == before + 1, "%s after the failed call was not numacoll's on rank "
          "%d", k_names[k], g_rank);
    int fails = total_failures(comm);
    if (g_rank == 0 && !fails && k == K_REDUCE && !victim_leads)
        printf("nomem: %s: rank %d, no node's leader, needed nothing; the next call right\n",
               k_names[k], g_victim);
    else if (g_rank == 0 && !fails)
        printf("nomem: %s: rank %d failed%s, the next call right\n", k_names[k], g_victim,
               k == K_GATHER                     ? " alone"
               : k == K_GATHER0 || k == K_REDUCE ? ", and the root naming it"
                                                 : ", and its readers naming it");
    free(plain);
    free(spread);
}

/* mode pad (see the top) */
static void test_pad(MPI_Comm comm)
{
    typedef struct {
        double v;
        int i;
    } pair_t;
    const int n = BLOCK_INTS; /* 16 MiB of pairs, 4 MiB of padding */
    pair_t *in = malloc((size_t)n * sizeof *in), *out = malloc((size_t)n * sizeof *out);
    if (!in || !out) {
        CHECK(0, "out of memory for the test's buffers");
        return;
    }
    for (int k = 0; k < n; k++)
        in[k].v = (k + g_rank) % 7, in[k].i = g_rank;
    struct rlimit saved, low;
    int limited = 0;
    if (g_rank == g_victim && getrlimit(RLIMIT_AS, &saved) == 0) {
        low = saved;
        low.rlim_cur = address_space() + HEADROOM;
        limited = setrlimit(RLIMIT_AS, &low) == 0;
        CHECK(limited, "setrlimit(RLIMIT_AS) failed");
    }
    uint64_t before = get_stats().allreduce_numacoll;
    int rc = MPI_Allreduce(in, out, n, MPI_DOUBLE_INT, MPI_MINLOC, comm);
    if (limited) setrlimit(RLIMIT_AS, &saved);
    CHECK(rc == MPI_SUCCESS, "MPI_Allreduce of MPI_DOUBLE_INT without memory on rank %d: rank %d "
          "returned %d", g_victim, g_rank, rc);
    CHECK(get_stats().allreduce_numacoll == before + 1, "the allreduce was not numacoll's");
    long wrong = 0;
    for (int k = 0; rc == MPI_SUCCESS && k < n; k++) {
        double best = 1e9;
        int at = 0;
        for (int q = 0; q < g_size; q++)
            if ((k + q) % 7 < best) best = (k + q) % 7, at = q;
        wrong += out[k].v != best || out[k].i != at;
    }
    CHECK(wrong == 0, "%ld of %d MINLOC results wrong on rank %d", wrong, n, g_rank);
    const int fails = total_failures(comm);
    if (g_rank == 0 && !fails)
        printf("nomem: MPI_Allreduce of MPI_DOUBLE_INT: right everywhere without memory for "
               "the padding on rank %d\n", g_victim);
    free(in);
    free(out);
}

int main(int argc, char **argv)
{
    /* a fixed threshold: large blocks always mapped and unmapped again (glibc's dynamic
     * threshold would serve a later stage from heap memory a freed one left mapped, within
     * the limit) */
    mallopt(M_MMAP_THRESHOLD, 256 << 10);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    find_stats_fn();
    if (g_size > 64) MPI_Abort(MPI_COMM_WORLD, 2);
    const int hier = argc > 1 && !strcmp(argv[1], "hier");
    const int pad = argc > 1 && !strcmp(argv[1], "pad");
    g_victim = g_size - 1;
    MPI_Datatype two;
    MPI_Type_contiguous(2, MPI_INT, &two);
    MPI_Type_create_resized(two, 0, 4 * (MPI_Aint)sizeof(int), &g_pair);
    MPI_Type_commit(&g_pair);
    MPI_Type_free(&two);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    /* the communicator's and its data-movement set-up, before any limit */
    int one = g_rank, all[64];
    MPI_Allgather(&one, 1, MPI_INT, all, 1, MPI_INT, comm);
    MPI_Allreduce(&one, all, 1, MPI_INT, MPI_SUM, comm); /* the reductions' set-up */
    for (int k = 0; !pad && k < (hier ? K_COUNT : K_REDUCE); k++)
        if (!hier || k < K_ALLTOALL || k >= K_REDUCE) test_collective(k, comm);
    if (pad) test_pad(comm);
    int fails = total_failures(MPI_COMM_WORLD);
    if (g_rank == 0) printf("nomem: %s\n", fails ? "FAIL" : "PASS");
    MPI_Type_free(&g_pair);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return fails ? 1 : 0;
}
