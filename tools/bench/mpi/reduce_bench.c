/*
 * numacoll-bench --mpi allreduce|reduce|reduce_scatter_block|scan: MPI_Allreduce /
 * MPI_Reduce / MPI_Reduce_scatter_block / MPI_Scan of MPI_DOUBLE with MPI_SUM under
 * numacoll against the MPI's own, with the method and the CSV schema of the barrier and
 * broadcast modes (mpibench.c). The size of a reduce_scatter_block row is each member's
 * block (its input is np blocks), of a scan row the message:
 *
 *   numacoll-bench --mpi allreduce|reduce [--csv FILE] [--iters N] [--reps R]
 *                  [--target-ms T] [--min-bytes B] [--max-bytes B] [--root R]
 *                  [--variants LIST] [--native-label NAME] [--quiet]
 *
 * Variants, measured alternately inside every repetition (order reversed every other
 * repetition): `native` (PMPI_Allreduce / PMPI_Reduce on the communicator), `native-sm`
 * (Open MPI only: the same on a duplicate whose collectives Open MPI's coll/sm provides,
 * as in mpibench.c), `default` (MPI_Allreduce / MPI_Reduce as an application calls them,
 * i.e. numacoll's when its library intercepts them), every reduction algorithm by name
 * (numacoll_reduce_with on numacoll_mpi_comm_team(comm); left out, with the reason on
 * stderr, when the communicator is not one flat numacoll team), `core` when named in
 * --variants (numacoll_reduce_with with "auto": the MPI call minus the interposition
 * layer), and two physical references (reduce_limits.c):
 *   limit:inline (up to RB_INLINE_MAX bytes, np <= CPUs as it spins): each member stores
 *     its input and a sequence number into its own lines of a shared window and every
 *     reader folds all inputs: the least a small reduction can cost;
 *   limit:fold (every size): each member folds np slices of ceil(count / np) doubles of a
 *     buffer no call has touched for 64 MiB of other traffic: the time one core needs to
 *     combine its share of the inputs out of memory, the bandwidth floor of a
 *     reduce-scatter (reduce_scatter_block: np slices of its block; scan: 2 slices of the
 *     message, the previous member's prefix and its own input).
 * reduce_scatter_block and scan have no algorithm rows and no limit:inline; their core row
 * is numacoll_reduce_scatter_block / numacoll_scan on the communicator's team.
 *
 * Buffers: every call uses the next pair (input, result) of a pool of min(64, 64 MiB /
 * (2 n)) page-aligned pairs of one 64 MiB region per rank (n: the message, rounded up to
 * pages), the same for every variant (limit:fold reads its own 64 MiB region, advancing
 * through it call by call). Before each timed call every member writes new content into
 * its whole input (untimed: as an application's just computed data, hot in its cache);
 * after it every member that gets the result checks its first, middle and last element
 * against the exact sum (untimed; a wrong element is counted and fails the run).
 *
 * Timing as OSU's osu_allreduce / osu_reduce: each rank times each call alone, with
 * numacoll's MPI_Barrier between calls (outside the timed region, the same for every
 * variant); one sample is the mean over the ranks of their mean time per call (--csv) and
 * the slowest rank's mean (the table's slowest_med_us). Calls per run are scaled so that
 * a run lasts about --target-ms. Output: a table on stdout and CSV rows
 *   collective,algorithm,procs,bytes,latency_us_median,latency_us_min,latency_us_max,mpi
 */
#include "reduce_bench.h"

#include "cli_parse.h"
#include "numacoll_mpi.h"

#include <numacoll/numacoll.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef NC_MPI_NAME
#define NC_MPI_NAME "mpi"
#endif

enum { RB_MAXV = 16, RB_MAXREPS = 1000, RB_POOL_MAX = 64 };
#define RB_REGION ((size_t)64 << 20) /* per rank: twice the reference VM's 32 MB L3 */
#define RB_TOOL "numacoll-bench --mpi"

typedef enum rb_kind {
    RB_NATIVE,
    RB_NATIVE_SM,
    RB_DEFAULT,
    RB_CORE,
    RB_ALGORITHM,
    RB_LIMIT_INLINE,
    RB_LIMIT_FOLD
} rb_kind_t;

typedef struct rb_variant {
    const char *name; /* the CSV's algorithm column */
    rb_kind_t kind;
    const char *alg;                 /* RB_CORE, RB_ALGORITHM: numacoll_reduce_with's name */
    double mean_of_ranks[RB_MAXREPS]; /* per sample: the mean over the ranks */
    double slowest[RB_MAXREPS];       /* per sample: the slowest rank's mean */
    int n;
    long iters;
    int skip; /* not measured at this size */
} rb_variant_t;

typedef struct rb_opts {
    const char *coll; /* "allreduce", "reduce", "reduce_scatter_block" or "scan" */
    const char *csv, *variants, *native_label;
    long iters;
    int reps;
    double target_ms;
    size_t min_bytes, max_bytes;
    int root; /* reduce only */
    int quiet;
} rb_opts_t;

static rb_call_t g_call; /* the run's communicator and the current call's buffers */
static MPI_Comm g_comm_sm = MPI_COMM_NULL;
static numacoll_team_t *g_team;
static bench_watch_t g_watch;
static _Atomic int32_t *g_pids;
static unsigned char *g_pool_base, *g_fold_base; /* RB_REGION each */
static double *g_send_pool[RB_POOL_MAX], *g_recv_pool[RB_POOL_MAX];
static int g_npool;
static size_t g_fold_stride; /* limit:fold's input advances by this much per call */
static size_t g_fold_next;   /* offset of its next input in g_fold_base */
static double g_fold_sink;               /* keeps the folds alive */
static unsigned g_key;                   /* the current call's content (same on every rank) */
static long g_bad;                       /* checked elements with a wrong sum */
enum { RB_REDUCE = 0, RB_RSB = 1, RB_SCAN = 2 };
static int g_coll;                       /* RB_REDUCE (allreduce, reduce), RB_RSB, RB_SCAN */

static const char *const g_fixed_names[] = {"native", "native-sm", "default",
                                            "core",   "limit:inline", "limit:fold"};
enum { RB_NFIXED = sizeof g_fixed_names / sizeof *g_fixed_names };

/* The @p i-th name --variants may hold (the algorithms after the fixed names), NULL past
 * the last */
static const char *variant_name(int i)
{
    if (i < RB_NFIXED) return g_fixed_names[i];
    int na = 0;
    const numacoll_algorithm_info_t *al = numacoll_reduce_algorithms(&na);
    return i - RB_NFIXED < na ? al[i - RB_NFIXED].name : NULL;
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

/* Every name of --variants is measured, or known and said (rank 0, stderr) not to be
 * measurable in this run; an unknown name is an error listing the allowed ones (returns 1
 * on every rank). */
static int check_variants(const rb_opts_t *o, const rb_variant_t *vs, int nv)
{
    int bad = 0;
    for (const char *p = o->variants; p && *p;) {
        const char *e = strchr(p, ',');
        int l = (int)(e ? (size_t)(e - p) : strlen(p));
        int found = 0, known = (size_t)l == strlen(o->native_label) &&
                               !strncmp(p, o->native_label, (size_t)l);
        for (int i = 0; i < nv && !found; i++)
            found = ((size_t)l == strlen(vs[i].name) && !strncmp(p, vs[i].name, (size_t)l)) ||
                    (vs[i].kind == RB_NATIVE && l == 6 && !strncmp(p, "native", 6));
        const char *vn;
        for (int i = 0; !found && !known && (vn = variant_name(i)); i++)
            known = (size_t)l == strlen(vn) && !strncmp(p, vn, (size_t)l);
        if (!found && known && g_call.rank == 0)
            fprintf(stderr, RB_TOOL ": variant '%.*s' is not measured in this run (not "
                            "available with this MPI, process count or communicator)\n",
                    l, p);
        if (!found && !known) {
            bad = 1;
            if (g_call.rank == 0) {
                fprintf(stderr, RB_TOOL ": unknown variant '%.*s'; allowed:", l, p);
                if (strcmp(o->native_label, "native")) fprintf(stderr, " %s,", o->native_label);
                for (int i = 0; (vn = variant_name(i)); i++)
                    fprintf(stderr, "%s %s", i ? "," : "", vn);
                fprintf(stderr, "\n");
            }
        }
        p = e ? e + 1 : NULL;
    }
    return bad;
}

/* A size like 64, 4K, 16M that is a whole number of doubles, 8 B .. 1 GiB */
static int parse_size(const char *opt, const char *s, size_t *out)
{
    char *end;
    double x = strtod(s, &end);
    if (end != s && (*end == 'K' || *end == 'k')) x *= 1024, end++;
    else if (end != s && (*end == 'M' || *end == 'm')) x *= 1024 * 1024, end++;
    if (end == s || *end || !(x >= 8 && x <= (double)(1u << 30)) || x != (double)(size_t)x ||
        (size_t)x % sizeof(double)) {
        fprintf(stderr, RB_TOOL ": %s '%s' is not valid; allowed: a multiple of 8 bytes (whole "
                        "MPI_DOUBLEs) from 8 to 1G, like 64, 4K, 16M\n",
                opt, s);
        return 0;
    }
    *out = (size_t)x;
    return 1;
}

/* Options after the collective's name; 0, or 2 after a message (no MPI needed). */
static int parse_options(int argc, char **argv, rb_opts_t *o)
{
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n = 0;
        int ok = 1;
        if (!strcmp(a, "--quiet")) {
            o->quiet = 1;
            continue;
        }
        if (!v && in_list("--csv,--variants,--native-label,--iters,--reps,--root,--target-ms,"
                          "--min-bytes,--max-bytes",
                          a)) {
            fprintf(stderr, RB_TOOL ": option %s needs a value\n", a);
            return 2;
        }
        i++;
        if (!strcmp(a, "--csv"))
            o->csv = v;
        else if (!strcmp(a, "--variants"))
            o->variants = v;
        else if (!strcmp(a, "--native-label"))
            o->native_label = v;
        else if (!strcmp(a, "--iters")) {
            ok = !nc_cli_long(RB_TOOL, a, v, 1, 1000000000, &n);
            o->iters = n;
        } else if (!strcmp(a, "--reps")) {
            ok = !nc_cli_long(RB_TOOL, a, v, 1, RB_MAXREPS, &n);
            o->reps = (int)n;
        } else if (!strcmp(a, "--root") && !strcmp(o->coll, "reduce")) {
            ok = !nc_cli_long(RB_TOOL, a, v, 0, 1 << 20, &n);
            o->root = (int)n;
        } else if (!strcmp(a, "--root")) {
            fprintf(stderr, RB_TOOL ": --root is an option of reduce (an allreduce has no "
                            "root)\n");
            return 2;
        } else if (!strcmp(a, "--target-ms")) {
            char *end;
            o->target_ms = strtod(v, &end);
            ok = end != v && !*end && o->target_ms > 0 && o->target_ms <= 60000;
            if (!ok)
                fprintf(stderr, RB_TOOL ": --target-ms '%s' is not valid; allowed: a number of "
                                "milliseconds above 0, at most 60000\n",
                        v);
        } else if (!strcmp(a, "--min-bytes"))
            ok = parse_size(a, v, &o->min_bytes);
        else if (!strcmp(a, "--max-bytes"))
            ok = parse_size(a, v, &o->max_bytes);
        else {
            fprintf(stderr, RB_TOOL ": unknown option '%s' for %s; allowed: --csv, --iters, "
                            "--reps, --target-ms, --min-bytes, --max-bytes, %s--variants, "
                            "--native-label, --quiet\n",
                    a, o->coll, strcmp(o->coll, "reduce") ? "" : "--root, ");
            return 2;
        }
        if (!ok) return 2;
    }
    if (o->min_bytes > o->max_bytes) {
        fprintf(stderr, RB_TOOL ": --min-bytes %zu is above --max-bytes %zu\n", o->min_bytes,
                o->max_bytes);
        return 2;
    }
    return 0;
}

static int gets_result(void)
{
    return g_call.root < 0 || g_call.rank == g_call.root;
}

/* elements of this member's input: np blocks (reduce_scatter_block) or the message */
static size_t input_count(void)
{
    return g_coll == RB_RSB ? g_call.count * (size_t)g_call.size : g_call.count;
}

/* run_once of reduce_scatter_block and scan */
static int run_once_other(const rb_variant_t *v)
{
    const rb_call_t *c = &g_call;
    int count = (int)c->count, rsb = g_coll == RB_RSB;
    MPI_Comm comm = v->kind == RB_NATIVE_SM ? g_comm_sm : c->comm;
    switch (v->kind) {
    case RB_NATIVE:
    case RB_NATIVE_SM:
        return rsb ? PMPI_Reduce_scatter_block(c->send, c->recv, count, MPI_DOUBLE, MPI_SUM, comm)
                   : PMPI_Scan(c->send, c->recv, count, MPI_DOUBLE, MPI_SUM, comm);
    case RB_DEFAULT:
        return rsb ? MPI_Reduce_scatter_block(c->send, c->recv, count, MPI_DOUBLE, MPI_SUM, comm)
                   : MPI_Scan(c->send, c->recv, count, MPI_DOUBLE, MPI_SUM, comm);
    case RB_CORE: {
        int rc = rsb ? numacoll_reduce_scatter_block(g_team, c->send, c->recv, c->count,
                                                     NUMACOLL_DOUBLE, NUMACOLL_OP_SUM)
                     : numacoll_scan(g_team, c->send, c->recv, c->count, NUMACOLL_DOUBLE,
                                     NUMACOLL_OP_SUM);
        return rc == NUMACOLL_OK ? MPI_SUCCESS : MPI_ERR_OTHER;
    }
    case RB_LIMIT_FOLD:
        rb_fold_run(c->send, c->recv, c->count, rsb ? c->size : 2);
        g_fold_sink += c->recv[c->count - 1]; /* the fold is not dead code */
        return MPI_SUCCESS;
    default:
        return MPI_ERR_OTHER;
    }
}

/* One call of variant @p v on the current buffers: an MPI error code. */
static int run_once(const rb_variant_t *v)
{
    const rb_call_t *c = &g_call;
    int count = (int)c->count;
    if (g_coll != RB_REDUCE) return run_once_other(v);
    switch (v->kind) {
    case RB_NATIVE:
    case RB_NATIVE_SM: {
        MPI_Comm comm = v->kind == RB_NATIVE ? c->comm : g_comm_sm;
        return c->root < 0
                   ? PMPI_Allreduce(c->send, c->recv, count, MPI_DOUBLE, MPI_SUM, comm)
                   : PMPI_Reduce(c->send, c->recv, count, MPI_DOUBLE, MPI_SUM, c->root, comm);
    }
    case RB_DEFAULT:
        return c->root < 0
                   ? MPI_Allreduce(c->send, c->recv, count, MPI_DOUBLE, MPI_SUM, c->comm)
                   : MPI_Reduce(c->send, c->recv, count, MPI_DOUBLE, MPI_SUM, c->root, c->comm);
    case RB_CORE:
    case RB_ALGORITHM:
        return numacoll_reduce_with(g_team, c->send, c->recv, c->count, NUMACOLL_DOUBLE,
                                    NUMACOLL_OP_SUM, c->root, v->alg) == NUMACOLL_OK
                   ? MPI_SUCCESS
                   : MPI_ERR_OTHER;
    case RB_LIMIT_INLINE:
        rb_inline_run(c);
        return MPI_SUCCESS;
    case RB_LIMIT_FOLD: {
        size_t share = rb_fold_share(c->count, c->size);
        rb_fold_run(c->send, c->recv, share, c->size);
        g_fold_sink += c->recv[share - 1]; /* the fold is not dead code */
        return MPI_SUCCESS;
    }
    }
    return MPI_ERR_OTHER;
}

/* Before call @p i (untimed): the next buffers; new content in the input (limit:fold: the
 * next untouched part of its region, no new content) */
static void prepare_call(const rb_variant_t *v, long i)
{
    rb_call_t *c = &g_call;
    c->recv = g_recv_pool[i % g_npool];
    g_key = (g_key + 1) & 255;
    if (v->kind == RB_LIMIT_FOLD) {
        if (g_fold_next + g_fold_stride > RB_REGION) g_fold_next = 0;
        c->send = (const double *)(g_fold_base + g_fold_next);
        g_fold_next += g_fold_stride;
        return;
    }
    double *in = g_send_pool[i % g_npool];
    for (size_t k = 0, n = input_count(); k < n; k++)
        in[k] = (double)(g_key + (unsigned)c->rank + (k & 7));
    c->send = in;
}

/* The result's elements k = 0, count / 2, count - 1 against the exact sum over the ranks of
 * key + rank + (k & 7) (small integers: every order of the additions gives it exactly) */
static void check_result(void)
{
    const rb_call_t *c = &g_call;
    size_t ks[3] = {0, c->count / 2, c->count - 1};
    /* reduce_scatter_block: our block of the vector; scan: the ranks 0..rank */
    size_t first = g_coll == RB_RSB ? (size_t)c->rank * c->count : 0;
    double p = g_coll == RB_SCAN ? (double)(c->rank + 1) : (double)c->size;
    for (int j = 0; j < 3; j++) {
        double want = p * (double)(g_key + ((first + ks[j]) & 7)) + p * (p - 1) / 2;
        if (c->recv[ks[j]] != want) g_bad++;
    }
}

/* Mean seconds per call of @p iters calls over the ranks (the slowest rank's in *slow).
 * Collective. */
static double timed_run(const rb_variant_t *v, long iters, int *err, double *slow)
{
    PMPI_Barrier(g_call.comm);
    /* untimed warm-up calls of the variant: they absorb the ranks' skew in leaving the
     * native barrier above (as in mpibench.c) */
    long warm = iters / 10 < 2 ? 2 : iters / 10;
    for (long i = 0; i < warm; i++)
        if (run_once(v) != MPI_SUCCESS) *err = 1;
    double dt = 0, mx = 0, sum = 0;
    prepare_call(v, 0);
    MPI_Barrier(g_call.comm);
    for (long i = 0; i < iters; i++) {
        double t0 = PMPI_Wtime();
        if (run_once(v) != MPI_SUCCESS) *err = 1;
        dt += PMPI_Wtime() - t0;
        if (v->kind != RB_LIMIT_FOLD && gets_result()) check_result();
        prepare_call(v, i + 1);
        MPI_Barrier(g_call.comm);
    }
    dt /= (double)iters;
    /* untimed cool-down call: a rank that is done waits in it, not in the native
     * reductions below (as in mpibench.c) */
    if (run_once(v) != MPI_SUCCESS) *err = 1;
    PMPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, g_call.comm);
    PMPI_Allreduce(&dt, &sum, 1, MPI_DOUBLE, MPI_SUM, g_call.comm);
    if (slow) *slow = mx;
    return sum / g_call.size;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* median, min, max of @p n samples (sorted in place) */
static void median_min_max(double *x, int n, double *med, double *mn, double *mx)
{
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    *med = n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
    *mn = x[0];
    *mx = x[n - 1];
}

static void report(const rb_opts_t *o, FILE *csv, rb_variant_t *vs, int nv)
{
    size_t bytes = g_call.count * sizeof(double);
    for (int i = 0; i < nv && g_call.rank == 0; i++) {
        rb_variant_t *v = &vs[i];
        double med, mn, mx, smed, smn, smx;
        if (v->skip) continue;
        median_min_max(v->mean_of_ranks, v->n, &med, &mn, &mx);
        median_min_max(v->slowest, v->n, &smed, &smn, &smx);
        if (!o->quiet)
            printf("%-9s %-14s %5d %10zu %12.3f %12.3f %12.3f %14.3f %8ld %s\n", o->coll,
                   v->name, g_call.size, bytes, med * 1e6, mn * 1e6, mx * 1e6, smed * 1e6,
                   v->iters, NC_MPI_NAME);
        if (csv)
            fprintf(csv, "%s,%s,%d,%zu,%.4f,%.4f,%.4f,%s\n", o->coll, v->name, g_call.size,
                    bytes, med * 1e6, mn * 1e6, mx * 1e6, NC_MPI_NAME);
    }
    if (g_call.rank == 0) {
        fflush(stdout);
        if (csv) fflush(csv);
    }
}

/* Measure every variant at the current size: calibrate, then interleave repetitions. */
static int measure(const rb_opts_t *o, FILE *csv, rb_variant_t *vs, int nv)
{
    int err = 0;
    for (int i = 0; i < nv; i++) {
        vs[i].skip = vs[i].kind == RB_LIMIT_INLINE &&
                     g_call.count * sizeof(double) > RB_INLINE_MAX;
        if (vs[i].skip) continue;
        timed_run(&vs[i], 3, &err, NULL); /* warm-up (team and buffers set up) */
        /* grow the run until it lasts a quarter of the target, so that the per-call
         * estimate is not dominated by the start/stop skew of a short run */
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
        PMPI_Bcast(&it, 1, MPI_LONG, 0, g_call.comm);
        vs[i].iters = it;
        vs[i].n = 0;
    }
    for (int r = 0; r < o->reps; r++) {
        for (int k = 0; k < nv; k++) {
            rb_variant_t *v = &vs[r % 2 ? nv - 1 - k : k];
            if (v->skip) continue;
            v->mean_of_ranks[v->n] = timed_run(v, v->iters, &err, &v->slowest[v->n]);
            v->n++;
        }
    }
    report(o, csv, vs, nv);
    return err;
}

/* The variants of this run, in measuring order (collective: sets limit:inline up) */
static int add_variants(const rb_opts_t *o, rb_variant_t *vs, int mode)
{
    int nv = 0;
    const char *vl = o->variants;
    if (in_list(vl, "native") || in_list(vl, o->native_label))
        vs[nv++] = (rb_variant_t){.name = o->native_label, .kind = RB_NATIVE};
#ifdef OPEN_MPI
    if (in_list(vl, "native-sm")) {
        /* a duplicate whose collectives come from coll/sm (tuned underneath for those
         * coll/sm lacks), as mpibench.c measures the barrier and the broadcast */
        MPI_Info info;
        PMPI_Info_create(&info);
        PMPI_Info_set(info, "ompi_comm_coll_preference", "sm,tuned");
        int n = 0;
        if (PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, info, &g_comm_sm) ==
                MPI_SUCCESS &&
            g_comm_sm != MPI_COMM_NULL)
            PMPI_Comm_size(g_comm_sm, &n);
        if (n == g_call.size)
            vs[nv++] = (rb_variant_t){.name = "native-sm", .kind = RB_NATIVE_SM};
        else if (g_comm_sm != MPI_COMM_NULL)
            PMPI_Comm_free(&g_comm_sm);
        PMPI_Info_free(&info);
    }
#endif
    if (in_list(vl, "default")) vs[nv++] = (rb_variant_t){.name = "default", .kind = RB_DEFAULT};
    g_team = mode == 1 ? numacoll_mpi_comm_team(g_call.comm) : NULL;
    int na = 0;
    const numacoll_algorithm_info_t *al = numacoll_reduce_algorithms(&na);
    if (g_coll != RB_REDUCE) na = 0; /* no algorithm rows */
    if (g_team) {
        for (int i = 0; i < na && nv < RB_MAXV - 3; i++)
            if (in_list(vl, al[i].name))
                vs[nv++] = (rb_variant_t){.name = al[i].name, .kind = RB_ALGORITHM,
                                          .alg = al[i].name};
        if (vl && in_list(vl, "core"))
            vs[nv++] = (rb_variant_t){.name = "core", .kind = RB_CORE, .alg = "auto"};
    } else if (g_call.rank == 0) {
        fprintf(stderr, RB_TOOL ": the algorithm rows (numacoll_reduce_with) are left out: "
                        "the communicator is not one flat numacoll team (mode %d: %s)\n",
                mode, mode == 2 ? "hierarchical" : "numacoll not active");
    }
    /* limit:inline spins: only when every rank has a CPU of its own */
    int spin_ok = g_call.size <= (int)sysconf(_SC_NPROCESSORS_ONLN), all_ok = 0;
    PMPI_Allreduce(&spin_ok, &all_ok, 1, MPI_INT, MPI_MIN, g_call.comm);
    if (all_ok && g_coll == RB_REDUCE && in_list(vl, "limit:inline")) {
        if (rb_inline_setup(&g_call)) PMPI_Abort(MPI_COMM_WORLD, 2);
        vs[nv++] = (rb_variant_t){.name = "limit:inline", .kind = RB_LIMIT_INLINE};
    }
    if (in_list(vl, "limit:fold"))
        vs[nv++] = (rb_variant_t){.name = "limit:fold", .kind = RB_LIMIT_FOLD};
    return nv;
}

static void *map_region(const char *what)
{
    void *p = mmap(NULL, RB_REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, RB_TOOL ": cannot map %zu bytes for %s\n", RB_REGION, what);
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(p, 1, RB_REGION); /* every page faulted in before timing */
    return p;
}

/* The pool's pairs and limit:fold's stride for messages of @p bytes; 0 when one pair does
 * not fit the region (reduce_scatter_block's np blocks) */
static int set_size(size_t bytes)
{
    size_t page = 4096, stride = (bytes + page - 1) / page * page;
    g_call.count = bytes / sizeof(double);
    size_t sstride = (input_count() * sizeof(double) + page - 1) / page * page;
    if (sstride + stride > RB_REGION) return 0;
    g_npool = (int)(RB_REGION / (sstride + stride) < RB_POOL_MAX ? RB_REGION / (sstride + stride)
                                                                 : RB_POOL_MAX);
    for (int i = 0; i < g_npool; i++) {
        g_send_pool[i] = (double *)(g_pool_base + (size_t)i * (sstride + stride));
        g_recv_pool[i] = (double *)(g_pool_base + (size_t)i * (sstride + stride) + sstride);
    }
    g_call.send = g_send_pool[0];
    g_call.recv = g_recv_pool[0];
    /* limit:fold reads size slices of its share: at most bytes + size doubles
     * (reduce_scatter_block: size blocks; scan: 2 messages) */
    size_t in = g_coll == RB_RSB    ? input_count() * sizeof(double)
                : g_coll == RB_SCAN ? 2 * bytes
                                    : rb_fold_share(g_call.count, g_call.size) *
                                          (size_t)g_call.size * sizeof(double);
    g_fold_stride = (in + page - 1) / page * page;
    g_fold_next = 0;
    return g_fold_stride <= RB_REGION;
}

int nc_reduce_bench_main(int argc, char **argv)
{
    rb_opts_t o = {.coll = argv[1], .iters = 2000, .reps = 11, .target_ms = 20,
                   .min_bytes = 8, .max_bytes = 4u << 20, .native_label = "native"};
    if (parse_options(argc, argv, &o)) {
        fprintf(stderr, "usage: numacoll-bench --mpi allreduce|reduce|reduce_scatter_block|scan "
                        "[options]; "
                        "numacoll-bench --mpi --help lists them\n");
        return 2;
    }
    g_coll = !strcmp(o.coll, "reduce_scatter_block") ? RB_RSB
             : !strcmp(o.coll, "scan")               ? RB_SCAN
                                                     : RB_REDUCE;
    MPI_Init(&argc, &argv);
    PMPI_Comm_dup(MPI_COMM_WORLD, &g_call.comm);
    PMPI_Comm_set_name(g_call.comm, "bench");
    PMPI_Comm_rank(g_call.comm, &g_call.rank);
    PMPI_Comm_size(g_call.comm, &g_call.size);
    g_call.root = strcmp(o.coll, "reduce") ? -1 : o.root;
    if (g_call.root >= g_call.size) {
        if (g_call.rank == 0)
            fprintf(stderr, RB_TOOL ": --root %d is not valid with %d processes; allowed: "
                            "0..%d\n",
                    g_call.root, g_call.size, g_call.size - 1);
        PMPI_Comm_free(&g_call.comm);
        MPI_Finalize();
        return 2;
    }
    g_pids = calloc((size_t)g_call.size, sizeof *g_pids);
    rb_variant_t *vs = calloc(RB_MAXV, sizeof *vs);
    if (!g_pids || !vs) {
        fprintf(stderr, RB_TOOL ": out of memory\n");
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
    int32_t my_pid = (int32_t)getpid();
    PMPI_Allgather(&my_pid, 1, MPI_INT32_T, (int32_t *)g_pids, 1, MPI_INT32_T, g_call.comm);
    bench_watch_pids(&g_watch, g_pids, g_call.size, g_call.rank,
                     "a reference loop of the MPI reduction benchmark");
    g_call.watch = &g_watch;

    int mode = numacoll_mpi_comm_mode(g_call.comm);
    int nv = add_variants(&o, vs, mode);
    int err = 0, any = 0;
    long nbad = 0;
    FILE *csv = NULL;
    if (o.variants && check_variants(&o, vs, nv)) {
        any = 2;
        goto out;
    }
    if (g_call.rank == 0) {
        if (mode == 0)
            fprintf(stderr, RB_TOOL ": numacoll is not active on this communicator "
                                    "(NUMACOLL_DISABLE, size 1 or set-up failure): 'default' is "
                                    "native\n");
        if (o.csv && !(csv = fopen(o.csv, "a")))
            perror(o.csv);
        else if (csv && ftell(csv) == 0)
            fprintf(csv, "collective,algorithm,procs,bytes,latency_us_median,latency_us_min,"
                         "latency_us_max,mpi\n");
        if (!o.quiet)
            printf("%-9s %-14s %5s %10s %12s %12s %12s %14s %8s %s\n", "coll", "algorithm",
                   "procs", "bytes", "mean_med_us", "min_us", "max_us", "slowest_med_us",
                   "iters", "mpi");
    }
    g_pool_base = map_region("the buffers");
    for (int i = 0; i < nv; i++)
        if (vs[i].kind == RB_LIMIT_FOLD) g_fold_base = map_region("limit:fold's inputs");
    for (size_t b = o.min_bytes; b <= o.max_bytes; b *= 2) {
        if (!set_size(b)) {
            if (g_call.rank == 0)
                fprintf(stderr, RB_TOOL ": %zu bytes and above left out: %d blocks of input "
                                "do not fit the benchmark's %zu MiB region\n",
                        b, g_call.size, RB_REGION >> 20);
            break;
        }
        err |= measure(&o, csv, vs, nv);
    }
    munmap(g_pool_base, RB_REGION);
    if (g_fold_base) munmap(g_fold_base, RB_REGION);
    if (csv) fclose(csv);
    PMPI_Allreduce(&err, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    PMPI_Allreduce(&g_bad, &nbad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (any && g_call.rank == 0) fprintf(stderr, RB_TOOL ": some calls returned errors\n");
    if (nbad && g_call.rank == 0)
        fprintf(stderr, RB_TOOL ": %ld checked result elements had a wrong sum\n", nbad);
    any = any || nbad;
out:
    rb_inline_free();
    if (g_comm_sm != MPI_COMM_NULL) PMPI_Comm_free(&g_comm_sm);
    free(vs);
    PMPI_Comm_free(&g_call.comm);
    MPI_Finalize();
    return any;
}
