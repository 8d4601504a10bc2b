/*
 * numacoll-bench --mpi allgather|allgatherv|gather|gatherv|scatter|scatterv|alltoall|
 * alltoallv: the gather family and alltoall in MPI_BYTE blocks (the v-forms with uniform
 * counts) under numacoll against the
 * MPI's own, with the method and the CSV schema of the reductions' mode (reduce_bench.c):
 *
 *   numacoll-bench --mpi allgather|... [--csv FILE] [--iters N] [--reps R] [--target-ms T]
 *                  [--min-bytes B] [--max-bytes B] [--root R] [--variants LIST]
 *                  [--native-label NAME] [--default-label NAME] [--quiet]
 *
 * Sizes are the bytes of one member's block. Variants, measured alternately inside every
 * repetition (order reversed every other repetition): `native` (the PMPI_ call on the
 * communicator), `native-sm` (Open MPI only: the same on a duplicate that prefers coll/sm,
 * as in mpibench.c), `default` (the MPI_ call as an application makes it: numacoll's when
 * its library intercepts it; --default-label renames it, for runs under NUMACOLL_MOVE=copy
 * or cma, which set the copy mode of a whole process),
 * `core` (named only: numacoll_gather & co. on numacoll_mpi_comm_team(comm), without the MPI
 * wrapper; default minus core is the preload's cost), and the floor:
 *   limit:xcore: every member copies, with memcpy, the bytes it must receive from the
 *     members that own them (allgather: the other P-1 blocks; gather: the root, P-1
 *     blocks; scatter: each non-root, its block; alltoall: the P-1 blocks the others send
 *     it) out of a shared window where the owners
 *     have just written them (untimed, before the barrier that precedes each call). It is
 *     the single copy between cores that any implementation must make, with the same
 *     contention; no synchronisation, no control traffic.
 *   limit:cma: the same bytes from the same window, each copied by the member that must
 *     receive it with one process_vm_readv from the owner's process (the single copy
 *     without a mapping of the owner's memory, as a library's single-copy path makes it:
 *     the kernel pins the owner's pages for every call); no synchronisation either.
 *
 * Buffers: each call uses the next pair (send, receive) of a pool of page-aligned pairs in
 * one region per rank (at least 64 MiB: twice the reference VM's L3), the same for every
 * variant. Before each timed call the owners write new content into what they send
 * (untimed: as an application's just computed data); after it every member checks the
 * first, middle and last byte of every block it received (untimed; a wrong byte is counted
 * and fails the run). Timing as reduce_bench.c: each rank times each call alone, with
 * numacoll's MPI_Barrier between calls; one sample is the mean over the ranks (the CSV,
 * mean_med_us) and the slowest rank's mean (slowest_med_us).
 */
#define _GNU_SOURCE 1 /* process_vm_readv */
#include "move_bench.h"

#include "cli_parse.h"
#include "numacoll_mpi.h"

#include <numacoll/numacoll.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef NC_MPI_NAME
#define NC_MPI_NAME "mpi"
#endif

enum { MB_MAXV = 8, MB_MAXREPS = 1000, MB_POOL_MAX = 64 };
#define MB_REGION_MIN ((size_t)64 << 20)
#define MB_TOOL "numacoll-bench --mpi"

enum {
    C_ALLGATHER, C_ALLGATHERV, C_GATHER, C_GATHERV, C_SCATTER, C_SCATTERV, C_ALLTOALL,
    C_ALLTOALLV, C_COUNT
};
static const char *const g_colls[C_COUNT] = {"allgather", "allgatherv", "gather",  "gatherv",
                                             "scatter",   "scatterv",   "alltoall", "alltoallv"};

typedef enum mb_kind { MB_NATIVE, MB_NATIVE_SM, MB_DEFAULT, MB_XCORE, MB_CMA, MB_CORE } mb_kind_t;

typedef struct mb_variant {
    const char *name;
    mb_kind_t kind;
    double mean_of_ranks[MB_MAXREPS], slowest[MB_MAXREPS];
    int n;
    long iters;
} mb_variant_t;

typedef struct mb_opts {
    const char *coll_name, *csv, *variants, *native_label, *default_label;
    int coll;
    long iters;
    int reps;
    double target_ms;
    size_t min_bytes, max_bytes;
    int root;
    int quiet;
} mb_opts_t;

static struct {
    MPI_Comm comm, comm_sm;
    int rank, size, root, coll;
    size_t bytes; /* one block */
    unsigned char *region;
    size_t region_size, stride_send, stride_recv;
    int npool, cur;
    unsigned char *send, *recv; /* the current pair */
    int *counts, *displs;       /* the v-forms' uniform counts */
    MPI_Win win;
    unsigned char *win_mine, **win_of; /* limit:xcore: what each rank owns */
    uint64_t *win_addr_of;             /* limit:cma: win_mine in each rank's process */
    int *pid_of;                       /* limit:cma: each rank's pid */
    unsigned key;
    long bad;
} g;

static const char *const g_fixed[] = {"native", "native-sm", "default", "limit:xcore",
                                      "limit:cma", "core"};
static numacoll_team_t *g_team; /* core: the communicator's flat team */

int nc_move_bench_is(const char *name)
{
    for (int c = 0; c < C_COUNT; c++)
        if (!strcmp(name, g_colls[c])) return 1;
    return 0;
}

static int in_list(const char *list, const char *name)
{
    if (!list) return 1;
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == n && !strncmp(p, name, n)) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

static int gathers(void) { return g.coll <= C_GATHERV; }
/* every rank sends and receives P blocks */
static int a2a(void) { return g.coll >= C_ALLTOALL; }
static int rooted(int coll) { return coll >= C_GATHER && coll <= C_SCATTERV; }
static int all(void) { return g.coll <= C_ALLGATHERV; }
/* this rank sends the P blocks (a scatter's root) / receives P blocks (gathers' roots) */
static int owns_many(void) { return !gathers() && g.rank == g.root; }
static int gets_many(void) { return gathers() && (all() || g.rank == g.root); }

/* byte @p i of rank @p r's block in the current call (alltoall: @p r is owner * P + reader) */
static inline unsigned char content(int r, size_t i)
{
    return (unsigned char)(g.key * 7u + (unsigned)r * 31u + (unsigned)(i % 251));
}

static void fill_blocks(unsigned char *base)
{
    const size_t b = g.bytes;
    if (a2a()) {
        for (int d = 0; d < g.size; d++)
            for (size_t i = 0; i < b; i++)
                base[(size_t)d * b + i] = content(g.rank * g.size + d, i);
    } else if (gathers()) {
        for (size_t i = 0; i < b; i++)
            base[i] = content(g.rank, i);
    } else if (owns_many()) {
        for (int r = 0; r < g.size; r++)
            for (size_t i = 0; i < b; i++)
                base[(size_t)r * b + i] = content(r, i);
    }
}

/* untimed, before call @p i: the next pair; new content where this rank owns blocks
 * (limit:xcore: in the shared window) */
static void prepare_call(const mb_variant_t *v, long i)
{
    g.cur = (int)(i % g.npool);
    g.send = g.region + (size_t)g.cur * (g.stride_send + g.stride_recv);
    g.recv = g.send + g.stride_send;
    g.key = (g.key + 1) & 255;
    fill_blocks(v->kind == MB_XCORE || v->kind == MB_CMA ? g.win_mine : g.send);
}

static void check_block(const unsigned char *p, int r)
{
    const size_t b = g.bytes;
    if (!b) return;
    size_t at[3] = {0, b / 2, b - 1};
    for (int j = 0; j < 3; j++)
        if (p[at[j]] != content(r, at[j])) g.bad++;
}

/* @p own: the own block was received too (limit:xcore copies only the others') */
static void check_result(int own)
{
    if (a2a()) {
        for (int r = 0; r < g.size; r++)
            if (own || r != g.rank) check_block(g.recv + (size_t)r * g.bytes, r * g.size + g.rank);
    } else if (gets_many()) {
        for (int r = 0; r < g.size; r++)
            if (own || r != g.rank) check_block(g.recv + (size_t)r * g.bytes, r);
    } else if (!gathers() && g.rank != g.root)
        check_block(g.recv, g.rank);
}

/* limit:xcore: copy what this rank must receive from its owners' window parts */
static void xcore_run(void)
{
    const size_t b = g.bytes;
    if (a2a()) {
        for (int r = 0; r < g.size; r++)
            if (r != g.rank) memcpy(g.recv + (size_t)r * b, g.win_of[r] + (size_t)g.rank * b, b);
    } else if (gets_many()) {
        for (int r = 0; r < g.size; r++)
            if (r != g.rank) memcpy(g.recv + (size_t)r * b, g.win_of[r], b);
    } else if (!gathers() && g.rank != g.root) {
        memcpy(g.recv, g.win_of[g.root] + (size_t)g.rank * b, b);
    }
}

/* limit:cma: read @p b bytes at offset @p off of rank @p r's window part into @p to with
 * process_vm_readv (-1 if the kernel refused or read short) */
static int cma_read(int r, size_t off, void *to, size_t b)
{
    struct iovec local = {.iov_base = to, .iov_len = b};
    struct iovec remote = {.iov_base = (void *)(uintptr_t)(g.win_addr_of[r] + off), .iov_len = b};
    return process_vm_readv(g.pid_of[r], &local, 1, &remote, 1, 0) == (ssize_t)b ? 0 : -1;
}

/* limit:cma: what xcore_run copies, each block read from its owner's process */
static int cma_run(void)
{
    const size_t b = g.bytes;
    int rc = 0;
    if (!b) return MPI_SUCCESS;
    if (a2a()) {
        for (int r = 0; r < g.size; r++)
            if (r != g.rank) rc |= cma_read(r, (size_t)g.rank * b, g.recv + (size_t)r * b, b);
    } else if (gets_many()) {
        for (int r = 0; r < g.size; r++)
            if (r != g.rank) rc |= cma_read(r, 0, g.recv + (size_t)r * b, b);
    } else if (!gathers() && g.rank != g.root) {
        rc = cma_read(g.root, (size_t)g.rank * b, g.recv, b);
    }
    return rc ? MPI_ERR_OTHER : MPI_SUCCESS;
}

static int run_once(const mb_variant_t *v)
{
    const int n = (int)g.bytes, root = g.root;
    MPI_Comm c = v->kind == MB_NATIVE_SM ? g.comm_sm : g.comm;
    void *s = g.send, *r = g.recv;
    if (v->kind == MB_XCORE) {
        xcore_run();
        return MPI_SUCCESS;
    }
    if (v->kind == MB_CMA) return cma_run();
    if (v->kind == MB_CORE) {
        const size_t b = g.bytes;
        int rc;
        switch (g.coll) {
        case C_ALLGATHER: rc = numacoll_allgather(g_team, s, r, b); break;
        case C_ALLGATHERV: {
            size_t sz[g.size], dp[g.size];
            for (int i = 0; i < g.size; i++)
                sz[i] = b, dp[i] = (size_t)i * b;
            rc = numacoll_allgatherv(g_team, s, b, r, sz, dp);
            break;
        }
        case C_GATHER: rc = numacoll_gather(g_team, s, r, b, root); break;
        case C_GATHERV: {
            size_t sz[g.size], dp[g.size];
            for (int i = 0; i < g.size; i++)
                sz[i] = b, dp[i] = (size_t)i * b;
            rc = numacoll_gatherv(g_team, s, b, r, sz, dp, root);
            break;
        }
        case C_SCATTER: rc = numacoll_scatter(g_team, s, r, b, root); break;
        case C_SCATTERV: {
            size_t sz[g.size], dp[g.size];
            for (int i = 0; i < g.size; i++)
                sz[i] = b, dp[i] = (size_t)i * b;
            rc = numacoll_scatterv(g_team, s, sz, dp, r, b, root);
            break;
        }
        case C_ALLTOALL: rc = numacoll_alltoall(g_team, s, r, b); break;
        default: {
            size_t sz[g.size], dp[g.size];
            for (int i = 0; i < g.size; i++)
                sz[i] = b, dp[i] = (size_t)i * b;
            rc = numacoll_alltoallv(g_team, s, sz, dp, r, sz, dp);
            break;
        }
        }
        return rc == NUMACOLL_OK ? MPI_SUCCESS : MPI_ERR_OTHER;
    }
    if (v->kind == MB_DEFAULT) switch (g.coll) {
        case C_ALLGATHER: return MPI_Allgather(s, n, MPI_BYTE, r, n, MPI_BYTE, c);
        case C_ALLGATHERV:
            return MPI_Allgatherv(s, n, MPI_BYTE, r, g.counts, g.displs, MPI_BYTE, c);
        case C_GATHER: return MPI_Gather(s, n, MPI_BYTE, r, n, MPI_BYTE, root, c);
        case C_GATHERV:
            return MPI_Gatherv(s, n, MPI_BYTE, r, g.counts, g.displs, MPI_BYTE, root, c);
        case C_SCATTER: return MPI_Scatter(s, n, MPI_BYTE, r, n, MPI_BYTE, root, c);
        case C_ALLTOALL: return MPI_Alltoall(s, n, MPI_BYTE, r, n, MPI_BYTE, c);
        case C_ALLTOALLV:
            return MPI_Alltoallv(s, g.counts, g.displs, MPI_BYTE, r, g.counts, g.displs,
                                 MPI_BYTE, c);
        default: return MPI_Scatterv(s, g.counts, g.displs, MPI_BYTE, r, n, MPI_BYTE, root, c);
        }
    switch (g.coll) {
    case C_ALLGATHER: return PMPI_Allgather(s, n, MPI_BYTE, r, n, MPI_BYTE, c);
    case C_ALLGATHERV:
        return PMPI_Allgatherv(s, n, MPI_BYTE, r, g.counts, g.displs, MPI_BYTE, c);
    case C_GATHER: return PMPI_Gather(s, n, MPI_BYTE, r, n, MPI_BYTE, root, c);
    case C_GATHERV:
        return PMPI_Gatherv(s, n, MPI_BYTE, r, g.counts, g.displs, MPI_BYTE, root, c);
    case C_SCATTER: return PMPI_Scatter(s, n, MPI_BYTE, r, n, MPI_BYTE, root, c);
    case C_ALLTOALL: return PMPI_Alltoall(s, n, MPI_BYTE, r, n, MPI_BYTE, c);
    case C_ALLTOALLV:
        return PMPI_Alltoallv(s, g.counts, g.displs, MPI_BYTE, r, g.counts, g.displs, MPI_BYTE,
                              c);
    default: return PMPI_Scatterv(s, g.counts, g.displs, MPI_BYTE, r, n, MPI_BYTE, root, c);
    }
}

/* Mean seconds per call of @p iters calls over the ranks (the slowest rank's in *slow) */
static double timed_run(const mb_variant_t *v, long iters, int *err, double *slow)
{
    PMPI_Barrier(g.comm);
    long warm = iters / 10 < 2 ? 2 : iters / 10; /* absorbs the skew of the barrier above */
    prepare_call(v, 0);
    for (long i = 0; i < warm; i++)
        if (run_once(v) != MPI_SUCCESS) *err = 1;
    double dt = 0, mx = 0, sum = 0;
    prepare_call(v, 0);
    MPI_Barrier(g.comm);
    for (long i = 0; i < iters; i++) {
        double t0 = PMPI_Wtime();
        if (run_once(v) != MPI_SUCCESS) *err = 1;
        dt += PMPI_Wtime() - t0;
        long bad = g.bad;
        check_result(v->kind != MB_XCORE && v->kind != MB_CMA);
        if (g.bad > bad && bad == 0)
            fprintf(stderr, MB_TOOL ": rank %d: %s %s of %zu-byte blocks: a received byte is "
                            "wrong\n",
                    g.rank, v->name, g_colls[g.coll], g.bytes);
        /* the limits' readers copy straight from the owners' window: no owner writes the
         * next call's content before every reader is done with this one */
        if (v->kind == MB_XCORE || v->kind == MB_CMA) MPI_Barrier(g.comm);
        prepare_call(v, i + 1);
        MPI_Barrier(g.comm);
    }
    dt /= (double)iters;
    if (run_once(v) != MPI_SUCCESS) *err = 1; /* a rank that is done waits here */
    PMPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, g.comm);
    PMPI_Allreduce(&dt, &sum, 1, MPI_DOUBLE, MPI_SUM, g.comm);
    if (slow) *slow = mx;
    return sum / g.size;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void median_min_max(double *x, int n, double *med, double *mn, double *mx)
{
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    *med = n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
    *mn = x[0];
    *mx = x[n - 1];
}

static int measure(const mb_opts_t *o, FILE *csv, mb_variant_t *vs, int nv)
{
    int err = 0;
    for (int i = 0; i < nv; i++) {
        timed_run(&vs[i], 3, &err, NULL); /* set-up (teams, buffers) out of the way */
        long n = 5;
        double t = timed_run(&vs[i], n, &err, NULL);
        while (t * (double)n < o->target_ms * 0.25e-3 && n < o->iters) {
            n = n * 4 < o->iters ? n * 4 : o->iters;
            t = timed_run(&vs[i], n, &err, NULL);
        }
        t += 2e-6; /* the barrier between calls */
        long it = (long)(o->target_ms * 1e-3 / t);
        if (it > o->iters) it = o->iters;
        if (it < 3) it = 3;
        PMPI_Bcast(&it, 1, MPI_LONG, 0, g.comm);
        vs[i].iters = it;
        vs[i].n = 0;
    }
    for (int r = 0; r < o->reps; r++)
        for (int k = 0; k < nv; k++) {
            mb_variant_t *v = &vs[r % 2 ? nv - 1 - k : k];
            v->mean_of_ranks[v->n] = timed_run(v, v->iters, &err, &v->slowest[v->n]);
            v->n++;
        }
    for (int i = 0; i < nv && g.rank == 0; i++) {
        mb_variant_t *v = &vs[i];
        double med, mn, mx, smed, smn, smx;
        median_min_max(v->mean_of_ranks, v->n, &med, &mn, &mx);
        median_min_max(v->slowest, v->n, &smed, &smn, &smx);
        if (!o->quiet)
            printf("%-10s %-14s %5d %10zu %12.3f %12.3f %12.3f %14.3f %8ld %s\n", o->coll_name,
                   v->name, g.size, g.bytes, med * 1e6, mn * 1e6, mx * 1e6, smed * 1e6,
                   v->iters, NC_MPI_NAME);
        if (csv)
            fprintf(csv, "%s,%s,%d,%zu,%.4f,%.4f,%.4f,%s\n", o->coll_name, v->name, g.size,
                    g.bytes, med * 1e6, mn * 1e6, mx * 1e6, NC_MPI_NAME);
    }
    if (g.rank == 0) {
        fflush(stdout);
        if (csv) fflush(csv);
    }
    return err;
}

/* A size like 64, 4K, 16M: 1 B .. 256 MiB */
static int parse_size(const char *opt, const char *s, size_t *out)
{
    char *end;
    double x = strtod(s, &end);
    if (end != s && (*end == 'K' || *end == 'k')) x *= 1024, end++;
    else if (end != s && (*end == 'M' || *end == 'm')) x *= 1024 * 1024, end++;
    if (end == s || *end || !(x >= 1 && x <= (double)(1u << 28)) || x != (double)(size_t)x) {
        fprintf(stderr, MB_TOOL ": %s '%s' is not valid; allowed: a block size from 1 byte to "
                        "256M, like 64, 4K, 16M\n",
                opt, s);
        return 0;
    }
    *out = (size_t)x;
    return 1;
}

static int parse_options(int argc, char **argv, mb_opts_t *o)
{
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n = 0;
        int ok = 1, has_root = rooted(o->coll);
        if (!strcmp(a, "--quiet")) {
            o->quiet = 1;
            continue;
        }
        if (!v && in_list("--csv,--variants,--native-label,--default-label,--iters,--reps,"
                          "--root,--target-ms,--min-bytes,--max-bytes",
                          a)) {
            fprintf(stderr, MB_TOOL ": option %s needs a value\n", a);
            return 2;
        }
        i++;
        if (!strcmp(a, "--csv")) o->csv = v;
        else if (!strcmp(a, "--variants")) o->variants = v;
        else if (!strcmp(a, "--native-label")) o->native_label = v;
        else if (!strcmp(a, "--default-label")) o->default_label = v;
        else if (!strcmp(a, "--iters")) {
            ok = !nc_cli_long(MB_TOOL, a, v, 1, 1000000000, &n);
            o->iters = n;
        } else if (!strcmp(a, "--reps")) {
            ok = !nc_cli_long(MB_TOOL, a, v, 1, MB_MAXREPS, &n);
            o->reps = (int)n;
        } else if (!strcmp(a, "--root") && has_root) {
            ok = !nc_cli_long(MB_TOOL, a, v, 0, 1 << 20, &n);
            o->root = (int)n;
        } else if (!strcmp(a, "--root")) {
            fprintf(stderr, MB_TOOL ": --root is an option of gather, gatherv, scatter and "
                            "scatterv (an allgather or alltoall has no root)\n");
            return 2;
        } else if (!strcmp(a, "--target-ms")) {
            char *end;
            o->target_ms = strtod(v, &end);
            ok = end != v && !*end && o->target_ms > 0 && o->target_ms <= 60000;
            if (!ok)
                fprintf(stderr, MB_TOOL ": --target-ms '%s' is not valid; allowed: a number of "
                                "milliseconds above 0, at most 60000\n",
                        v);
        } else if (!strcmp(a, "--min-bytes")) ok = parse_size(a, v, &o->min_bytes);
        else if (!strcmp(a, "--max-bytes")) ok = parse_size(a, v, &o->max_bytes);
        else {
            fprintf(stderr, MB_TOOL ": unknown option '%s' for %s; allowed: --csv, --iters, "
                            "--reps, --target-ms, --min-bytes, --max-bytes, %s--variants, "
                            "--native-label, --default-label, --quiet\n",
                    a, o->coll_name, has_root ? "--root, " : "");
            return 2;
        }
        if (!ok) return 2;
    }
    if (o->min_bytes > o->max_bytes) {
        fprintf(stderr, MB_TOOL ": --min-bytes %zu is above --max-bytes %zu\n", o->min_bytes,
                o->max_bytes);
        return 2;
    }
    return 0;
}

/* An unknown name in --variants is an error listing the allowed ones (1 on every rank); a
 * known one this run cannot measure (native-sm with MPICH) is said on rank 0 */
static int check_variants(const mb_opts_t *o, const mb_variant_t *vs, int nv)
{
    int bad = 0;
    for (const char *p = o->variants; p && *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        int found = 0, known = 0;
        for (int i = 0; i < nv && !found; i++)
            found = l == strlen(vs[i].name) && !strncmp(p, vs[i].name, l);
        for (int i = 0; i < 5 && !known; i++)
            known = l == strlen(g_fixed[i]) && !strncmp(p, g_fixed[i], l);
        known |= (l == strlen(o->native_label) && !strncmp(p, o->native_label, l)) ||
                 (l == strlen(o->default_label) && !strncmp(p, o->default_label, l));
        if (!found && known && g.rank == 0)
            fprintf(stderr, MB_TOOL ": variant '%.*s' is not measured in this run (not "
                            "available with this MPI)\n",
                    (int)l, p);
        if (!found && !known) {
            bad = 1;
            if (g.rank == 0)
                fprintf(stderr, MB_TOOL ": unknown variant '%.*s'; allowed: native, native-sm, "
                                "default, core, limit:xcore, limit:cma\n",
                        (int)l, p);
        }
        p = e ? e + 1 : NULL;
    }
    return bad;
}

static int add_variants(const mb_opts_t *o, mb_variant_t *vs)
{
    int nv = 0;
    const char *vl = o->variants;
    if (in_list(vl, "native") || in_list(vl, o->native_label))
        vs[nv++] = (mb_variant_t){.name = o->native_label, .kind = MB_NATIVE};
#ifdef OPEN_MPI
    if (in_list(vl, "native-sm")) {
        /* a duplicate that prefers coll/sm (tuned for what coll/sm lacks), as mpibench.c */
        MPI_Info info;
        PMPI_Info_create(&info);
        PMPI_Info_set(info, "ompi_comm_coll_preference", "sm,tuned");
        int n = 0;
        if (PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, info, &g.comm_sm) ==
                MPI_SUCCESS &&
            g.comm_sm != MPI_COMM_NULL)
            PMPI_Comm_size(g.comm_sm, &n);
        if (n == g.size) vs[nv++] = (mb_variant_t){.name = "native-sm", .kind = MB_NATIVE_SM};
        else if (g.comm_sm != MPI_COMM_NULL) PMPI_Comm_free(&g.comm_sm);
        PMPI_Info_free(&info);
    }
#endif
    if (in_list(vl, "default") || in_list(vl, o->default_label))
        vs[nv++] = (mb_variant_t){.name = o->default_label, .kind = MB_DEFAULT};
    if (in_list(vl, "limit:xcore")) vs[nv++] = (mb_variant_t){.name = "limit:xcore", .kind = MB_XCORE};
    if (in_list(vl, "limit:cma")) vs[nv++] = (mb_variant_t){.name = "limit:cma", .kind = MB_CMA};
    if (vl && in_list(vl, "core")) vs[nv++] = (mb_variant_t){.name = "core", .kind = MB_CORE};
    return nv;
}

/* limit:xcore's window: what each rank owns at the largest size (collective) */
static int xcore_setup(size_t max_bytes)
{
    if (g.win_of) return 1; /* limit:xcore and limit:cma share it */
    MPI_Aint mine = (MPI_Aint)(gathers()                 ? max_bytes
                               : a2a() || owns_many() ? max_bytes * g.size
                                                      : 0);
    MPI_Comm node;
    PMPI_Comm_split_type(g.comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int n = 0;
    PMPI_Comm_size(node, &n);
    PMPI_Comm_free(&node);
    if (n != g.size) return 0; /* not one node: no shared window over the communicator */
    g.win_of = calloc((size_t)g.size, sizeof *g.win_of);
    if (!g.win_of || PMPI_Win_allocate_shared(mine ? mine : 1, 1, MPI_INFO_NULL, g.comm,
                                              &g.win_mine, &g.win) != MPI_SUCCESS)
        return 0;
    for (int r = 0; r < g.size; r++) {
        MPI_Aint sz;
        int du;
        PMPI_Win_shared_query(g.win, r, &sz, &du, &g.win_of[r]);
    }
    return 1;
}

/* limit:cma: the window as xcore_setup makes it, and every rank's pid and window address;
 * 0 where process_vm_readv from a neighbour fails (ptrace scope, containers; agreed) */
static int cma_setup(size_t max_bytes)
{
    if (!xcore_setup(max_bytes)) return 0;
    g.pid_of = calloc((size_t)g.size, sizeof *g.pid_of);
    g.win_addr_of = calloc((size_t)g.size, sizeof *g.win_addr_of);
    if (!g.pid_of || !g.win_addr_of) return 0;
    int pid = (int)getpid();
    uint64_t addr = (uint64_t)(uintptr_t)g.win_mine;
    PMPI_Allgather(&pid, 1, MPI_INT, g.pid_of, 1, MPI_INT, g.comm);
    PMPI_Allgather(&addr, 1, MPI_UINT64_T, g.win_addr_of, 1, MPI_UINT64_T, g.comm);
    int next = (g.rank + 1) % g.size, ok = 1, all = 0;
    unsigned char byte;
    if (g.size > 1 && max_bytes) ok = cma_read(next, 0, &byte, 1) == 0;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, g.comm);
    return all;
}

static void set_size(size_t bytes)
{
    const size_t page = 4096;
    size_t s = gathers() ? bytes : (size_t)g.size * bytes;
    size_t r = gathers() || a2a() ? (size_t)g.size * bytes : bytes;
    g.bytes = bytes;
    g.stride_send = (s + page - 1) / page * page;
    g.stride_recv = (r + page - 1) / page * page;
    size_t pair = g.stride_send + g.stride_recv;
    g.npool = (int)(g.region_size / pair < MB_POOL_MAX ? g.region_size / pair : MB_POOL_MAX);
    for (int q = 0; q < g.size; q++)
        g.counts[q] = (int)bytes, g.displs[q] = (int)((size_t)q * bytes);
}

int nc_move_bench_main(int argc, char **argv)
{
    mb_opts_t o = {.coll_name = argv[1], .coll = -1, .iters = 2000, .reps = 11,
                   .target_ms = 20, .min_bytes = 1, .max_bytes = 4u << 20,
                   .native_label = "native", .default_label = "default"};
    for (int c = 0; c < C_COUNT; c++)
        if (!strcmp(argv[1], g_colls[c])) o.coll = c;
    if (o.coll < 0 || parse_options(argc, argv, &o)) {
        fprintf(stderr, "usage: numacoll-bench --mpi allgather|allgatherv|gather|gatherv|"
                        "scatter|scatterv|alltoall|alltoallv [options]; numacoll-bench --mpi "
                        "--help lists them\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    PMPI_Comm_dup(MPI_COMM_WORLD, &g.comm);
    PMPI_Comm_set_name(g.comm, "bench");
    PMPI_Comm_rank(g.comm, &g.rank);
    PMPI_Comm_size(g.comm, &g.size);
    g.comm_sm = MPI_COMM_NULL;
    g.win = MPI_WIN_NULL;
    g.coll = o.coll;
    g.root = rooted(o.coll) ? o.root : -1;
    int any = 0;
    long nbad = 0;
    FILE *csv = NULL;
    mb_variant_t *vs = calloc(MB_MAXV, sizeof *vs);
    g.counts = calloc((size_t)g.size, sizeof(int));
    g.displs = calloc((size_t)g.size, sizeof(int));
    if (!vs || !g.counts || !g.displs) {
        fprintf(stderr, MB_TOOL ": out of memory\n");
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (g.root >= g.size || (size_t)g.size * o.max_bytes > INT_MAX) {
        if (g.rank == 0 && g.root >= g.size)
            fprintf(stderr, MB_TOOL ": --root %d is not valid with %d processes; allowed: "
                            "0..%d\n",
                    g.root, g.size, g.size - 1);
        else if (g.rank == 0)
            fprintf(stderr, MB_TOOL ": --max-bytes %zu x %d processes is more than the int "
                            "displacements of the MPI calls allow (%d bytes)\n",
                    o.max_bytes, g.size, INT_MAX);
        any = 2;
        goto out;
    }
    int nv = add_variants(&o, vs);
    if (o.variants && check_variants(&o, vs, nv)) {
        any = 2;
        goto out;
    }
    for (int i = 0; i < nv; i++)
        if (vs[i].kind == MB_XCORE && !xcore_setup(o.max_bytes)) {
            if (g.rank == 0)
                fprintf(stderr, MB_TOOL ": limit:xcore is left out: the ranks are not on one "
                                "node (no shared window)\n");
            vs[i] = vs[--nv];
        }
    for (int i = 0; i < nv; i++)
        if (vs[i].kind == MB_CMA && !cma_setup(o.max_bytes)) {
            if (g.rank == 0)
                fprintf(stderr, MB_TOOL ": limit:cma is left out: the ranks are not on one "
                                "node, or process_vm_readv between them is not permitted\n");
            vs[i] = vs[--nv];
        }
    int mode = numacoll_mpi_comm_mode(g.comm);
    g_team = mode == 1 ? numacoll_mpi_comm_team(g.comm) : NULL;
    for (int i = 0; i < nv; i++)
        if (vs[i].kind == MB_CORE && !g_team) {
            if (g.rank == 0)
                fprintf(stderr, MB_TOOL ": core is left out: the communicator is not one flat "
                                "numacoll team (mode %d)\n", mode);
            vs[i--] = vs[--nv];
        }
    if (g.rank == 0) {
        if (mode == 0)
            fprintf(stderr, MB_TOOL ": numacoll is not active on this communicator "
                                    "(NUMACOLL_DISABLE, size 1 or set-up failure): 'default' is "
                                    "native\n");
        if (o.csv && !(csv = fopen(o.csv, "a"))) perror(o.csv);
        else if (csv && ftell(csv) == 0)
            fprintf(csv, "collective,algorithm,procs,bytes,latency_us_median,latency_us_min,"
                         "latency_us_max,mpi\n");
        if (!o.quiet)
            printf("%-10s %-14s %5s %10s %12s %12s %12s %14s %8s %s\n", "coll", "algorithm",
                   "procs", "bytes", "mean_med_us", "min_us", "max_us", "slowest_med_us",
                   "iters", "mpi");
    }
    g.region_size = ((size_t)g.size + 1) * o.max_bytes + 2 * 4096;
    if (a2a()) g.region_size = 2 * (size_t)g.size * o.max_bytes + 2 * 4096;
    if (g.region_size < MB_REGION_MIN) g.region_size = MB_REGION_MIN;
    g.region = mmap(NULL, g.region_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                    -1, 0);
    if (g.region == MAP_FAILED) {
        fprintf(stderr, MB_TOOL ": cannot map %zu bytes for the buffers\n", g.region_size);
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(g.region, 1, g.region_size); /* every page faulted in before timing */
    int err = 0;
    for (size_t b = o.min_bytes; b <= o.max_bytes; b *= 2) {
        set_size(b);
        err |= measure(&o, csv, vs, nv);
    }
    munmap(g.region, g.region_size);
    if (csv) fclose(csv);
    PMPI_Allreduce(&err, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    PMPI_Allreduce(&g.bad, &nbad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (any && g.rank == 0) fprintf(stderr, MB_TOOL ": some calls returned errors\n");
    if (nbad && g.rank == 0)
        fprintf(stderr, MB_TOOL ": %ld checked bytes of received blocks were wrong\n", nbad);
    any = any || nbad;
out:
    if (g.win != MPI_WIN_NULL) PMPI_Win_free(&g.win);
    free(g.win_of);
    free(g.pid_of);
    free(g.win_addr_of);
    if (g.comm_sm != MPI_COMM_NULL) PMPI_Comm_free(&g.comm_sm);
    free(vs);
    free(g.counts);
    free(g.displs);
    PMPI_Comm_free(&g.comm);
    MPI_Finalize();
    return any;
}
