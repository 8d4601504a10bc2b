/*
 * numacoll-bench-mpi-<mpi>: the MPI mode of numacoll-bench (`numacoll-bench --mpi ...`
 * execs the binary built for the MPI it runs under). Linked against libnumacoll_mpi, so
 * MPI_Barrier / MPI_Bcast are numacoll's; PMPI_* are the MPI library's own.
 *
 *   numacoll-bench --mpi barrier|bcast [--csv FILE] [--iters N] [--reps R]
 *                  [--target-ms T] [--min-bytes B] [--max-bytes B] [--variants LIST]
 *                  [--native-label NAME] [--quiet]
 *
 * Variants (measured alternately inside every repetition, order reversed every other
 * repetition, because the machine's speed drifts): `native` (PMPI), `default` (numacoll's
 * MPI_Barrier / MPI_Bcast as an application sees them) and, for the barrier, every
 * registered algorithm by name (numacoll_barrier_with); `core` when named in --variants
 * (numacoll_barrier or numacoll_bcast: the MPI call minus the interposition layer); for the
 * broadcast, the variants tree:<name>, cma, copy:<mode>, demote:<on|off> and
 * prefetch:<on|off> when named in --variants (numacoll_bcast_variant_name,
 * numacoll_bcast_with). These run on the communicator's flat numacoll team
 * (numacoll_mpi_comm_team); a hierarchical communicator (several nodes, NUMACOLL_FAKE_NODES)
 * has none, and its run skips them with the reason on stderr.
 * Two more references: `native-sm` (Open MPI only: the native call on a duplicate of the
 * communicator whose collectives Open MPI's coll/sm provides, selected with the communicator
 * info key ompi_comm_coll_preference = "sm,tuned", so coll/sm is measured in the same run,
 * interleaved with the others) and, for the broadcast, `limit:memcpy` (rank 0 alone copies
 * the message from a source just given new content into the call's pool buffer: the
 * physical reference of the large-message target, measured like the core harness's),
 * `limit:signal` (a bare flag from the root to each receiver: the small-message floor) and
 * `limit:inline` (up to BCAST_LIMIT_INLINE_MAX bytes: the least an inline broadcast with its payload
 * can cost, a stamp and the payload stored straight into each receiver's block, one ack
 * line written per call and read only when a block comes round again; the floor of every
 * size the default sends inline, where the payload's extra lines add their transfers) and
 * `limit:xcore` (the root writes the message into a shared window, untimed, before the
 * barrier; then every receiver times one memcpy of it into its pool buffer: the least any
 * broadcast can cost when the data must cross from the root's core to another, with no
 * queue, no notification and no second copy; reported like limit:memcpy as the slowest
 * rank's mean; the floor beside the large-message target, which compares with memcpy) and
 * `limit:pipe` (a reference, not a floor: a bare pipelined broadcast with plain stores;
 * rank 0 copies the message from its buffer into a shared window in 64 KiB
 * fragments, releasing a counter after each, and every receiver copies each fragment out
 * once the counter shows it; no queue reuse, no tree, no checks; timed like a broadcast, as
 * the mean over the ranks: what numacoll's queue path adds to or saves over a naive
 * copy-in copy-out, whose plain stores its chosen copy modes may beat).
 *
 * Broadcast buffers (like IMB -off_cache and the core harness): every call uses the next
 * buffer of a pool of min(64, region / n) page-aligned buffers in one region of at least
 * 64 MiB per rank, the same for every variant; before each timed call the root writes new
 * content into the whole message (untimed), and after it every receiver checks the first
 * and last byte (untimed; a wrong byte is reported and fails the run).
 *
 * One barrier sample = the slowest rank's mean time per call over a run of iterations. One
 * broadcast sample is two figures of the same run: the mean over the ranks of their mean
 * time per call (OSU osu_bcast's "Avg Latency", the definition of the baselines in
 * MEASURING.md; --csv) and the slowest rank's mean (--csv-slowest; a receiver waits for the
 * root's data, so this is the time until the last rank has the message). Iterations per run
 * are scaled so that a run takes about --target-ms (slow collectives, e.g. MPICH
 * oversubscribed, get few iterations).
 * Output: a table on stdout and CSV rows
 *   collective,algorithm,procs,bytes,latency_us_median,latency_us_min,latency_us_max,mpi
 */
#include "numacoll_mpi.h"
#include "bcast_limits.h"
#include "bench/bench_wait.h"
#include "cli_parse.h"
#include "help.h"
#include "move_bench.h"
#include "reduce_bench.h"

#include <numacoll/numacoll.h>

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef NC_MPI_NAME
#define NC_MPI_NAME "mpi"
#endif

enum { MAXV = 64, MAXREPS = 1000 };

typedef struct opts {
    int barrier; /* 1 barrier, 0 bcast */
    const char *csv, *csv_slowest;
    const char *variants; /* comma list filter, NULL = all */
    const char *native_label;
    long iters; /* upper bound of iterations per run */
    int reps;
    double target_ms;
    size_t min_bytes, max_bytes;
    int quiet;
} opts_t;

typedef struct variant {
    const char *name; /* CSV algorithm column */
    int kind;         /* 0 native, 1 default, 2 named algorithm, 3 core (no wrapper), 4 native-sm,
                       * 5 limit:memcpy, 6 limit:signal, 7 limit:inline, 8 limit:xcore,
                       * 9 limit:pipe */
    const char *alg;
    double samples[MAXREPS];      /* bcast: mean over the ranks; barrier: slowest rank */
    double samples_slow[MAXREPS]; /* slowest rank */
    int n;
    long iters;
    int skip; /* not measured at this size (limit:inline beyond BCAST_LIMIT_INLINE_MAX) */
} variant_t;

static int g_rank, g_size;
static MPI_Comm g_comm;
/* the wait policy of the reference loops (bcast_limits.c): every rank's pid is watched */
static bench_watch_t g_watch;
static _Atomic int32_t *g_pids; /* every rank's pid (MPI_COMM_WORLD order) */
static MPI_Comm g_comm_sm = MPI_COMM_NULL; /* Open MPI: a duplicate served by coll/sm */
static unsigned char *g_src;               /* limit:memcpy source (new content before every copy) */
static numacoll_team_t *g_team; /* the flat team behind g_comm (variant "core") */
static unsigned char *g_buf;    /* this call's buffer: g_pool[i % g_npool] */
static size_t g_bytes;
/* the off-cache pool (as in the core harness and IMB -off_cache): a size-n run rotates
 * through min(64, region / n) page-aligned buffers of one region of at least 64 MiB, twice
 * the reference VM's 32 MB L3; the same on every rank and for every variant */
#define POOL_MIN ((size_t)64 << 20)
static unsigned char *g_pool_base, *g_pool[64];
static size_t g_pool_bytes;
static int g_npool;
static unsigned char g_key; /* content of the current iteration (same on all ranks) */
static int g_root_shift;    /* --root-shift: timed call i from root i mod np (bcast) */
static long g_bad;          /* receptions with wrong content (native and numacoll) */

static void usage(FILE *f)
{
    nc_bench_mpi_help(f); /* the front end prints the same text */
}

/* after a usage error (every rank prints it: keep it short) */
static void usage_hint(void)
{
    fprintf(stderr, "usage: numacoll-bench --mpi barrier|bcast|allreduce|reduce|"
                    "reduce_scatter_block|scan|allgather|gather|scatter|... [options]; "
                    "numacoll-bench --mpi --help lists them\n");
}

/* The next name of comma list @p p into @p out (at most @p n - 1 bytes of it); the rest of
 * the list, or NULL after its last name. */
static const char *next_name(const char *p, char *out, size_t n)
{
    const char *e = strchr(p, ',');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    snprintf(out, n, "%.*s", (int)(l < n ? l : n - 1), p);
    return e ? e + 1 : NULL;
}

static int in_list(const char *list, const char *name)
{
    if (!list) return 1;
    char item[64];
    for (const char *p = list; p && *p;) {
        p = next_name(p, item, sizeof item);
        if (!strcmp(item, name)) return 1;
    }
    return 0;
}

/* Variant names besides the native label and the barrier algorithms / broadcast variants
 * of the library (numacoll_barrier_algorithms, numacoll_bcast_variant_name) */
static const char *const g_fixed_names[] = {"native",       "default",      "native-sm",
                                            "core",         "limit:memcpy", "limit:signal",
                                            "limit:inline", "limit:xcore",  "limit:pipe"};
enum { NFIXED = sizeof g_fixed_names / sizeof *g_fixed_names };

/* The @p i-th name --variants may hold for the barrier (@p barrier) or the broadcast, NULL
 * past the last */
static const char *variant_name(int barrier, int i)
{
    if (i < NFIXED) return g_fixed_names[i];
    i -= NFIXED;
    if (!barrier) return numacoll_bcast_variant_name(i);
    int na = 0;
    const numacoll_algorithm_info_t *al = numacoll_barrier_algorithms(&na);
    return i < na ? al[i].name : NULL;
}

/* Why known variant @p name is not measured on a communicator of numacoll mode @p mode
 * (numacoll_mpi_comm_mode) with or without a flat team (g_team) */
static const char *unmeasured_reason(const char *name, int mode)
{
    if (!strcmp(name, "native-sm") || !strncmp(name, "limit:", 6))
        return "not available with this MPI, collective, process count or oversubscription";
    if (mode == 0) return "numacoll is not active on this communicator";
    if (!g_team)
        return "the communicator is hierarchical (several nodes or NUMACOLL_FAKE_NODES): named "
               "algorithms, variants and core run on one flat numacoll team";
    return "not available with this collective";
}

/* Every name of --variants either became a variant in @p vs or is a known name that this
 * run cannot measure (said on stderr, with the reason); an unknown name is an error
 * (returns 1, message on rank 0, the allowed names listed). Same result on every rank. */
static int check_variants(const opts_t *o, const variant_t *vs, int nv, int mode)
{
    int bad = 0;
    char name[64];
    for (const char *p = o->variants; p && *p;) {
        p = next_name(p, name, sizeof name);
        int found = 0, known = !strcmp(name, o->native_label);
        for (int i = 0; i < nv && !found; i++)
            found = !strcmp(vs[i].name, name) || (vs[i].kind == 0 && !strcmp(name, "native"));
        const char *vn;
        for (int i = 0; !found && !known && (vn = variant_name(o->barrier, i)); i++)
            known = !strcmp(vn, name);
        if (found || g_rank != 0) {
            bad |= !found && !known;
            continue;
        }
        if (known) {
            fprintf(stderr, "numacoll-bench --mpi: variant '%s' is not measured in this run (%s)\n",
                    name, unmeasured_reason(name, mode));
            continue;
        }
        bad = 1;
        fprintf(stderr, "numacoll-bench --mpi: unknown variant '%s'; allowed:", name);
        if (strcmp(o->native_label, "native")) fprintf(stderr, " %s,", o->native_label);
        for (int i = 0; (vn = variant_name(o->barrier, i)); i++)
            fprintf(stderr, "%s %s", i ? "," : "", vn);
        fprintf(stderr, "\n");
    }
    return bad;
}

static int parse_bytes(const char *s, size_t *out)
{
    char *end;
    double x = strtod(s, &end);
    if (end == s || x < 0) return 0;
    if (*end == 'K' || *end == 'k')
        x *= 1024, end++;
    else if (*end == 'M' || *end == 'm')
        x *= 1024 * 1024, end++;
    if (*end) return 0;
    *out = (size_t)x;
    return 1;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void oom(const char *what)
{
    fprintf(stderr, "numacoll-bench --mpi: out of memory setting up %s\n", what);
    PMPI_Abort(MPI_COMM_WORLD, 2);
}

/* The coll/sm duplicate and the windows of the limit:* references. Collective. */
static void free_references(void)
{
    if (g_comm_sm != MPI_COMM_NULL) PMPI_Comm_free(&g_comm_sm);
    bcast_limits_free();
}

/* The MPI code of numacoll status @p rc of variant @p v; a failure's message goes to stderr
 * (the run then ends with "some calls returned errors") */
static int core_result(const variant_t *v, int rc)
{
    if (rc == NUMACOLL_OK) return MPI_SUCCESS;
    fprintf(stderr, "numacoll-bench --mpi (rank %d): %s: %s\n", g_rank, v->name,
            numacoll_last_error());
    return MPI_ERR_OTHER;
}

static int run_once(int barrier, const variant_t *v, int root)
{
    if (barrier) {
        if (v->kind == 0) return PMPI_Barrier(g_comm);
        if (v->kind == 4) return PMPI_Barrier(g_comm_sm);
        if (v->kind == 1) return MPI_Barrier(g_comm);
        if (v->kind == 3) return core_result(v, numacoll_barrier(g_team));
        return core_result(v, numacoll_barrier_with(g_team, v->alg));
    }
    if (v->kind == 0) return PMPI_Bcast(g_buf, (int)g_bytes, MPI_BYTE, root, g_comm);
    if (v->kind == 1) return MPI_Bcast(g_buf, (int)g_bytes, MPI_BYTE, root, g_comm);
    if (v->kind == 4) return PMPI_Bcast(g_buf, (int)g_bytes, MPI_BYTE, root, g_comm_sm);
    if (v->kind == 3) return core_result(v, numacoll_bcast(g_team, g_buf, g_bytes, root));
    if (v->kind == 5) {
        if (g_rank == root) {
            memcpy(g_buf, g_src, g_bytes);
            __asm__ __volatile__("" ::"r"(g_buf) : "memory"); /* the copy is not dead */
        }
        return MPI_SUCCESS;
    }
    if (v->kind >= 6) { /* the reference loops, kinds 6-9 in bcast_limit_t's order */
        bcast_limits_run((bcast_limit_t)(v->kind - 6), root, g_buf, g_bytes);
        return MPI_SUCCESS;
    }
    return core_result(v, numacoll_bcast_with(g_team, g_buf, g_bytes, root, v->alg));
}

/* The root of timed broadcast call @p i of variant @p v: 0, or with --root-shift i mod np.
 * limit:memcpy, limit:xcore and limit:pipe stay at rank 0: they are copies between fixed
 * cores (one process's own copy; the copy of rank 0's data by the others, once or through
 * a window), not broadcasts with a root, and keep their meaning as references with any
 * root pattern. */
static int call_root(const variant_t *v, long i)
{
    return g_root_shift && v->kind != 5 && v->kind != 8 && v->kind != 9 ? (int)(i % g_size) : 0;
}

/* Before broadcast call @p i (untimed): the next buffer of the pool, and new content in
 * the root's (in limit:memcpy's source, in limit:xcore's shared window), so that the root's data
 * are hot in its cache as an application's just computed data would be, while the receivers' buffer
 * (the copy's destination) was last touched 64 calls or 64 MiB ago. */
static void prepare_call(const variant_t *v, long i)
{
    g_buf = g_pool[i % g_npool];
    g_key++;
    if (g_rank == call_root(v, i) && g_bytes)
        memset(v->kind == 5   ? g_src
               : v->kind == 8 ? bcast_limits_xcore_source()
                              : g_buf,
               g_key, g_bytes);
}

/* Mean seconds per call of @p iters calls: the slowest rank's in *slow, and the mean over
 * the ranks (bcast; barrier: the slowest rank's) as the result. Collective. */
static double timed_run(int barrier, const variant_t *v, long iters, int *err, double *slow)
{
    PMPI_Barrier(g_comm);
    /* untimed warm-up calls of the variant itself: the ranks leave the native barrier
     * above at different moments (milliseconds apart when an oversubscribed MPI
     * busy-polls); these calls absorb that skew so the timed calls start in step */
    long warm = iters / 10 < 2 ? 2 : iters / 10;
    for (long i = 0; i < warm; i++)
        if (run_once(barrier, v, 0) != MPI_SUCCESS) *err = 1;
    double dt = 0, mx = 0;
    if (barrier) {
        double t0 = PMPI_Wtime();
        for (long i = 0; i < iters; i++)
            if (run_once(barrier, v, 0) != MPI_SUCCESS) *err = 1;
        dt = (PMPI_Wtime() - t0) / (double)iters;
    } else {
        /* as OSU: time each broadcast alone, a barrier (numacoll's, outside the timed
         * region, the same for every variant) between calls, so that a root cannot run
         * ahead into its queues and a receiver cannot find the data already there */
        prepare_call(v, 0);
        MPI_Barrier(g_comm);
        for (long i = 0; i < iters; i++) {
            int root = call_root(v, i);
            double t0 = PMPI_Wtime();
            if (run_once(barrier, v, root) != MPI_SUCCESS) *err = 1;
            dt += PMPI_Wtime() - t0;
            /* every receiver checks the first and last byte (untimed) */
            if (g_rank != root && g_bytes && (v->kind <= 4 || v->kind >= 7) &&
                (g_buf[0] != g_key || g_buf[g_bytes - 1] != g_key))
                g_bad++;
            /* the next call's buffer and content, before the barrier: a receiver's timed
             * call must not include the root's writing of the message. limit:xcore's root
             * returns at once, so it must not overwrite its source before the receivers
             * have copied it: one more barrier (untimed) */
            if (v->kind == 8) MPI_Barrier(g_comm);
            prepare_call(v, i + 1);
            MPI_Barrier(g_comm);
        }
        dt /= (double)iters;
    }
    /* untimed cool-down call of the variant: a rank that is done waits in it (numacoll:
     * yielding) rather than in the reduction below (an oversubscribed MPICH busy-polls
     * there and would take the CPU from the ranks still timing their last calls) */
    if (run_once(barrier, v, 0) != MPI_SUCCESS) *err = 1;
    double sum = 0;
    PMPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, g_comm);
    PMPI_Allreduce(&dt, &sum, 1, MPI_DOUBLE, MPI_SUM, g_comm);
    if (slow) *slow = mx;
    /* limit:memcpy: only rank 0 copies (the others' 0 would halve the mean); limit:xcore:
     * only the receivers copy (the root's 0 would halve it at np = 2) */
    return barrier || v->kind == 5 || v->kind == 8 ? mx : sum / g_size;
}

static FILE *g_csv, *g_csv_slow;

/* median, min, max of @p n samples (sorted in place) */
static void stats(double *x, int n, double *med, double *mn, double *mx)
{
    qsort(x, (size_t)n, sizeof(double), cmp_d);
    *med = n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
    *mn = x[0];
    *mx = x[n - 1];
}

/* open @p path for appending (NULL: none), with the header when it is new */
static FILE *csv_open(const char *path)
{
    if (!path) return NULL;
    FILE *f = fopen(path, "a");
    if (!f)
        perror(path);
    else if (ftell(f) == 0)
        fprintf(f, "collective,algorithm,procs,bytes,latency_us_median,latency_us_min,"
                   "latency_us_max,mpi\n");
    return f;
}

static void csv_row(FILE *f, const opts_t *o, const variant_t *v, double med, double mn, double mx)
{
    fprintf(f, "%s,%s,%d,%zu,%.4f,%.4f,%.4f,%s\n", o->barrier ? "barrier" : "bcast", v->name,
            g_size, o->barrier ? 0 : g_bytes, med * 1e6, mn * 1e6, mx * 1e6, NC_MPI_NAME);
}

static void report(const opts_t *o, variant_t *vs, int nv)
{
    for (int i = 0; i < nv; i++) {
        variant_t *v = &vs[i];
        double med, mn, mx, smed, smn, smx;
        if (v->skip) continue;
        stats(v->samples, v->n, &med, &mn, &mx);
        stats(v->samples_slow, v->n, &smed, &smn, &smx);
        if (g_rank != 0) continue;
        if (!o->quiet)
            printf("%-8s %-28s %5d %10zu %12.3f %12.3f %12.3f %12.3f %8ld %s\n",
                   o->barrier ? "barrier" : "bcast", v->name, g_size, o->barrier ? 0 : g_bytes,
                   med * 1e6, mn * 1e6, mx * 1e6, smed * 1e6, v->iters, NC_MPI_NAME);
        if (g_csv) csv_row(g_csv, o, v, med, mn, mx);
        if (g_csv_slow) csv_row(g_csv_slow, o, v, smed, smn, smx);
    }
    if (g_rank == 0) {
        fflush(stdout);
        if (g_csv) fflush(g_csv);
        if (g_csv_slow) fflush(g_csv_slow);
    }
}

/* Measure every variant at the current size: calibrate, then interleave repetitions. */
static int measure(const opts_t *o, variant_t *vs, int nv)
{
    int err = 0;
    for (int i = 0; i < nv; i++) {
        vs[i].skip = vs[i].kind == 7 && g_bytes > BCAST_LIMIT_INLINE_MAX; /* beyond its blocks */
        if (vs[i].skip) continue;
        /* warm-up (also creates the team) and calibration */
        timed_run(o->barrier, &vs[i], 3, &err, NULL);
        /* calibration: grow the run until it lasts a quarter of the target, so that the
         * per-call estimate is not dominated by the start/stop skew of a short run */
        long n = 5;
        double t = timed_run(o->barrier, &vs[i], n, &err, NULL);
        while (t * (double)n < o->target_ms * 0.25e-3 && n < o->iters) {
            n = n * 4 < o->iters ? n * 4 : o->iters;
            t = timed_run(o->barrier, &vs[i], n, &err, NULL);
        }
        if (!o->barrier) t += 2e-6; /* the barrier between calls */
        long it = t > 0 ? (long)(o->target_ms * 1e-3 / t) : o->iters;
        if (it > o->iters) it = o->iters;
        if (it < 3) it = 3;
        PMPI_Bcast(&it, 1, MPI_LONG, 0, g_comm);
        vs[i].iters = it;
        vs[i].n = 0;
    }
    for (int r = 0; r < o->reps; r++) {
        for (int k = 0; k < nv; k++) {
            int i = r % 2 ? nv - 1 - k : k;
            double slow = 0;
            if (vs[i].skip) continue;
            vs[i].samples[vs[i].n] = timed_run(o->barrier, &vs[i], vs[i].iters, &err, &slow);
            vs[i].samples_slow[vs[i].n++] = slow;
        }
    }
    report(o, vs, nv);
    return err;
}

int main(int argc, char **argv)
{
    opts_t o = {.iters = 2000,
                .reps = 11,
                .target_ms = 20,
                .min_bytes = 1,
                .max_bytes = 4u << 20,
                .native_label = "native"};
    int bad = 0;
    if (argc < 2) {
        usage_hint();
        return 2;
    }
    for (int i = 1; i < argc; i++) { /* anywhere, as in the front end; no MPI needed */
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--version")) {
            printf("numacoll-bench (numacoll) %d.%d.%d\n", NUMACOLL_VERSION_MAJOR,
                   NUMACOLL_VERSION_MINOR, NUMACOLL_VERSION_PATCH);
            return 0;
        }
    }
    if (!strcmp(argv[1], "allreduce") || !strcmp(argv[1], "reduce") ||
        !strcmp(argv[1], "reduce_scatter_block") || !strcmp(argv[1], "scan"))
        return nc_reduce_bench_main(argc, argv); /* reduce_bench.c */
    if (nc_move_bench_is(argv[1])) return nc_move_bench_main(argc, argv); /* move_bench.c */
    if (!strcmp(argv[1], "barrier"))
        o.barrier = 1;
    else if (!strcmp(argv[1], "bcast"))
        o.barrier = 0;
    else {
        fprintf(stderr, "numacoll-bench --mpi: unknown collective '%s'; allowed: barrier, bcast, "
                        "allreduce, reduce, reduce_scatter_block, scan, allgather, allgatherv, "
                        "gather, gatherv, scatter, scatterv, alltoall, alltoallv\n",
                argv[1]);
        return 2;
    }
    for (int i = 2; i < argc && !bad; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--quiet"))
            o.quiet = 1;
        else if (!strcmp(a, "--root-shift"))
            g_root_shift = 1;
        else if (!v) {
            bad = 1;
            fprintf(stderr, "numacoll-bench --mpi: option %s needs a value\n", a);
        } else if (!strcmp(a, "--csv"))
            o.csv = v, i++;
        else if (!strcmp(a, "--csv-slowest"))
            o.csv_slowest = v, i++;
        else if (!strcmp(a, "--variants"))
            o.variants = v, i++;
        else if (!strcmp(a, "--native-label"))
            o.native_label = v, i++;
        else if (!strcmp(a, "--iters")) {
            long n = 0;
            bad = nc_cli_long("numacoll-bench --mpi", a, v, 1, 1000000000, &n) != 0, i++;
            o.iters = n;
        } else if (!strcmp(a, "--reps")) {
            long n = 0;
            bad = nc_cli_long("numacoll-bench --mpi", a, v, 1, MAXREPS, &n) != 0, i++;
            o.reps = (int)n;
        } else if (!strcmp(a, "--target-ms")) {
            char *end;
            o.target_ms = strtod(v, &end);
            bad = end == v || *end || !(o.target_ms > 0 && o.target_ms <= 60000), i++;
            if (bad)
                fprintf(stderr,
                        "numacoll-bench --mpi: --target-ms '%s' is not valid; allowed: a "
                        "number of milliseconds above 0, at most 60000\n",
                        v);
        } else if (!strcmp(a, "--min-bytes") || !strcmp(a, "--max-bytes")) {
            bad = !parse_bytes(v, a[3] == 'i' ? &o.min_bytes : &o.max_bytes), i++;
            if (bad)
                fprintf(stderr,
                        "numacoll-bench --mpi: %s '%s' is not valid; allowed: a size like "
                        "64, 4K, 16M\n",
                        a, v);
        } else {
            bad = 1;
            fprintf(stderr, "numacoll-bench --mpi: unknown option '%s'\n", a);
        }
    }
    if (!bad && g_root_shift && o.barrier) {
        bad = 1;
        fprintf(stderr, "numacoll-bench --mpi: --root-shift is an option of bcast (a barrier "
                        "has no root)\n");
    }
    if (bad || o.max_bytes > (size_t)1 << 30 || o.min_bytes > o.max_bytes) {
        if (!bad) fprintf(stderr, "numacoll-bench --mpi: need min-bytes <= max-bytes <= 1G\n");
        usage_hint();
        return 2;
    }

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    PMPI_Comm_dup(MPI_COMM_WORLD, &g_comm);
    PMPI_Comm_set_name(g_comm, "bench");
    g_pids = calloc((size_t)g_size, sizeof *g_pids);
    if (!g_pids) oom("the ranks' pids");
    int32_t my_pid = (int32_t)getpid();
    PMPI_Allgather(&my_pid, 1, MPI_INT32_T, (int32_t *)g_pids, 1, MPI_INT32_T, g_comm);
    bench_watch_pids(&g_watch, g_pids, g_size, g_rank, "a reference loop of the MPI benchmark");
    bcast_limits_init(g_comm, &g_watch, g_root_shift);

    variant_t *vs = calloc(MAXV, sizeof *vs);
    int nv = 0;
    if (in_list(o.variants, "native") || in_list(o.variants, o.native_label))
        vs[nv++] = (variant_t){.name = o.native_label, .kind = 0};
    if (in_list(o.variants, "default")) vs[nv++] = (variant_t){.name = "default", .kind = 1};
#ifdef OPEN_MPI
    if (in_list(o.variants, "native-sm")) {
        /* a duplicate whose collectives come from coll/sm (tuned underneath for those
         * coll/sm lacks): Open MPI honours the preference list at communicator creation */
        MPI_Info info;
        PMPI_Info_create(&info);
        PMPI_Info_set(info, "ompi_comm_coll_preference", "sm,tuned");
        if (PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, info, &g_comm_sm) ==
                MPI_SUCCESS &&
            g_comm_sm != MPI_COMM_NULL) {
            int n = 0;
            PMPI_Comm_size(g_comm_sm, &n);
            if (n == g_size)
                vs[nv++] = (variant_t){.name = "native-sm", .kind = 4};
            else
                PMPI_Comm_free(&g_comm_sm);
        }
        PMPI_Info_free(&info);
    }
#endif
    if (!o.barrier && in_list(o.variants, "limit:memcpy"))
        vs[nv++] = (variant_t){.name = "limit:memcpy", .kind = 5};
    if (!o.barrier && o.variants && in_list(o.variants, "limit:xcore") && g_size > 1) {
        bcast_limits_add(BCAST_LIMIT_XCORE, o.max_bytes);
        vs[nv++] = (variant_t){.name = "limit:xcore", .kind = 8};
    }
    /* limit:signal spins: only without oversubscription (and on x86, for the pause) */
#if defined(__x86_64__) || defined(__i386__)
    int spin_ok = g_size <= (int)sysconf(_SC_NPROCESSORS_ONLN), all_ok = 0;
    PMPI_Allreduce(&spin_ok, &all_ok, 1, MPI_INT, MPI_MIN, g_comm);
    if (!o.barrier && all_ok && in_list(o.variants, "limit:signal")) {
        bcast_limits_add(BCAST_LIMIT_SIGNAL, o.max_bytes);
        vs[nv++] = (variant_t){.name = "limit:signal", .kind = 6};
    }
    if (!o.barrier && all_ok && in_list(o.variants, "limit:inline")) {
        bcast_limits_add(BCAST_LIMIT_INLINE, o.max_bytes);
        vs[nv++] = (variant_t){.name = "limit:inline", .kind = 7};
    }
    if (!o.barrier && all_ok && g_size > 1 && o.variants && in_list(o.variants, "limit:pipe")) {
        bcast_limits_add(BCAST_LIMIT_PIPE, o.max_bytes);
        vs[nv++] = (variant_t){.name = "limit:pipe", .kind = 9};
    }
#endif
    int mode = numacoll_mpi_comm_mode(g_comm);
    /* the named variants, "core" and the barrier algorithms run on the communicator's flat
     * team; a hierarchical communicator has none, and they are skipped (check_variants and
     * the note below say why): a node team's figures are not the communicator's */
    g_team = mode == 1 ? numacoll_mpi_comm_team(g_comm) : NULL;
    if (!o.barrier && g_team) {
        const char *vn;
        for (int i = 0; (vn = numacoll_bcast_variant_name(i)) && nv < MAXV; i++)
            if (o.variants ? in_list(o.variants, vn) : 0)
                vs[nv++] = (variant_t){.name = vn, .kind = 2, .alg = vn};
    }
    /* "core": numacoll_barrier / numacoll_bcast on the communicator's team, without the
     * interposition layer (only when named: it measures the wrapper's cost) */
    if (g_team && o.variants && in_list(o.variants, "core"))
        vs[nv++] = (variant_t){.name = "core", .kind = 3};
    if (o.barrier && !o.variants && mode != 0 && !g_team && g_rank == 0)
        fprintf(stderr, "numacoll-bench --mpi: the barrier algorithms are not measured: %s\n",
                unmeasured_reason("", mode));
    if (o.barrier && g_team) {
        int na = 0;
        const numacoll_algorithm_info_t *al = numacoll_barrier_algorithms(&na);
        for (int i = 0; i < na && nv < MAXV; i++)
            if (in_list(o.variants, al[i].name))
                vs[nv++] = (variant_t){.name = al[i].name, .kind = 2, .alg = al[i].name};
    }
    /* every name in --variants must be measured or be known and not available here */
    if (o.variants && check_variants(&o, vs, nv, mode)) {
        free_references();
        free(vs);
        PMPI_Comm_free(&g_comm);
        MPI_Finalize();
        return 2;
    }
    if (g_rank == 0) {
        if (mode == 0)
            fprintf(stderr, "numacoll-bench --mpi: numacoll is not active on this communicator "
                            "(NUMACOLL_DISABLE, size 1 or set-up failure): 'default' is native\n");
        g_csv = csv_open(o.csv);
        if (!o.barrier) g_csv_slow = csv_open(o.csv_slowest);
        if (!o.quiet)
            printf("%-8s %-28s %5s %10s %12s %12s %12s %12s %8s %s\n", "coll", "algorithm", "procs",
                   "bytes", o.barrier ? "median_us" : "mean_med_us", "min_us", "max_us",
                   "slowest_med_us", "iters", "mpi");
    }
    int err = 0;
    if (o.barrier) {
        err = measure(&o, vs, nv);
    } else {
        size_t page = 4096, maxb = o.max_bytes ? o.max_bytes : 1;
        g_pool_bytes = (maxb + page - 1) / page * page;
        if (g_pool_bytes < POOL_MIN) g_pool_bytes = POOL_MIN;
        g_pool_base =
            mmap(NULL, g_pool_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        g_src = malloc(maxb);
        if (g_pool_base == MAP_FAILED || !g_src) {
            fprintf(stderr, "numacoll-bench --mpi: cannot allocate %zu + %zu bytes of buffers\n",
                    g_pool_bytes, maxb);
            PMPI_Abort(MPI_COMM_WORLD, 2);
        }
        memset(g_pool_base, 1, g_pool_bytes); /* fault every page in before timing */
        memset(g_src, 2, maxb);
        for (size_t b = o.min_bytes; b <= o.max_bytes; b = b ? b * 2 : 1) {
            g_bytes = b;
            size_t stride = b ? (b + page - 1) / page * page : page;
            g_npool = g_pool_bytes / stride > 64 ? 64 : (int)(g_pool_bytes / stride);
            for (int i = 0; i < g_npool; i++)
                g_pool[i] = g_pool_base + (size_t)i * stride;
            g_buf = g_pool[0];
            err |= measure(&o, vs, nv);
            if (b == 0 && o.max_bytes == 0) break;
        }
        munmap(g_pool_base, g_pool_bytes);
        free(g_src);
    }
    int any = 0;
    long nbad = 0;
    PMPI_Allreduce(&err, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    PMPI_Allreduce(&g_bad, &nbad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (any && g_rank == 0) fprintf(stderr, "numacoll-bench --mpi: some calls returned errors\n");
    if (nbad && g_rank == 0)
        fprintf(stderr, "numacoll-bench --mpi: %ld receptions had wrong content\n", nbad);
    any |= nbad != 0;
    if (g_csv) fclose(g_csv);
    if (g_csv_slow) fclose(g_csv_slow);
    free_references();
    free(vs);
    PMPI_Comm_free(&g_comm);
    MPI_Finalize();
    return any ? 1 : 0;
}
