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
 * registered algorithm by name, and `core` when named in --variants (numacoll_barrier on
 * the communicator's team directly: MPI_Barrier minus the interposition layer); for the broadcast,
 * the variants tree:<name> and cma when named in --variants (numacoll_mpi_bcast_variant_name). One
 * sample = the slowest rank's mean time per call over a run of iterations; iterations per run are
 * scaled so that a run takes about
 * --target-ms (slow collectives, e.g. MPICH oversubscribed, get few iterations).
 * Output: a table on stdout and CSV rows
 *   collective,algorithm,procs,bytes,latency_us_median,latency_us_min,latency_us_max,mpi
 */
#include "numacoll_mpi.h"

#include <numacoll/numacoll.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef NC_MPI_NAME
#define NC_MPI_NAME "mpi"
#endif

enum { MAXV = 64, MAXREPS = 1000 };

typedef struct opts {
    int barrier; /* 1 barrier, 0 bcast */
    const char *csv;
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
    int kind;         /* 0 native, 1 default, 2 named algorithm, 3 core (no wrapper) */
    const char *alg;
    double samples[MAXREPS];
    int n;
    long iters;
} variant_t;

static int g_rank, g_size;
static MPI_Comm g_comm;
static numacoll_team_t *g_team; /* the flat team behind g_comm (variant "core") */
static unsigned char *g_buf;
static size_t g_bytes;

static void usage(FILE *f)
{
    fprintf(f, "usage: numacoll-bench --mpi barrier|bcast [--csv FILE] [--iters N] [--reps R]\n"
               "         [--target-ms T] [--min-bytes B] [--max-bytes B] [--variants a,b,...]\n"
               "         [--native-label NAME] [--quiet]\n"
               "Run it under mpirun/mpiexec. Variants: native, default, and (barrier) every\n"
               "registered numacoll algorithm (numacoll-info --algorithms).\n");
}

static int in_list(const char *list, const char *name)
{
    if (!list) return 1;
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == n && !strncmp(p, name, n)) return 1;
        p = e ? e + 1 : NULL;
    }
    return 0;
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

static int run_once(int barrier, const variant_t *v, int root)
{
    if (barrier) {
        if (v->kind == 0) return PMPI_Barrier(g_comm);
        if (v->kind == 1) return MPI_Barrier(g_comm);
        if (v->kind == 3)
            return numacoll_barrier(g_team) == NUMACOLL_OK ? MPI_SUCCESS : MPI_ERR_OTHER;
        return numacoll_mpi_barrier_with(g_comm, v->alg);
    }
    if (v->kind == 0) return PMPI_Bcast(g_buf, (int)g_bytes, MPI_BYTE, root, g_comm);
    if (v->kind == 1) return MPI_Bcast(g_buf, (int)g_bytes, MPI_BYTE, root, g_comm);
    return numacoll_mpi_bcast_with(g_buf, g_bytes, root, g_comm, v->alg);
}

/* Mean seconds per call of @p iters calls, the slowest rank's. Collective. */
static double timed_run(int barrier, const variant_t *v, long iters, int *err)
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
        for (long i = 0; i < iters; i++) {
            if (g_rank == 0 && g_bytes) {
                /* new content every iteration (one store per page) */
                for (size_t o = 0; o < g_bytes; o += 4096)
                    g_buf[o] = (unsigned char)(i + o);
            }
            double t0 = PMPI_Wtime();
            if (run_once(barrier, v, 0) != MPI_SUCCESS) *err = 1;
            dt += PMPI_Wtime() - t0;
            MPI_Barrier(g_comm);
        }
        dt /= (double)iters;
    }
    /* untimed cool-down call of the variant: a rank that is done waits in it (numacoll:
     * yielding) rather than in the reduction below (an oversubscribed MPICH busy-polls
     * there and would take the CPU from the ranks still timing their last calls) */
    if (run_once(barrier, v, 0) != MPI_SUCCESS) *err = 1;
    PMPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, g_comm);
    return mx;
}

static FILE *g_csv;

static void report(const opts_t *o, variant_t *vs, int nv)
{
    for (int i = 0; i < nv; i++) {
        variant_t *v = &vs[i];
        qsort(v->samples, (size_t)v->n, sizeof(double), cmp_d);
        double med = v->n % 2 ? v->samples[v->n / 2]
                              : 0.5 * (v->samples[v->n / 2 - 1] + v->samples[v->n / 2]);
        double mn = v->samples[0], mx = v->samples[v->n - 1];
        if (g_rank != 0) continue;
        if (!o->quiet)
            printf("%-8s %-28s %5d %10zu %12.3f %12.3f %12.3f %8ld %s\n",
                   o->barrier ? "barrier" : "bcast", v->name, g_size, o->barrier ? 0 : g_bytes,
                   med * 1e6, mn * 1e6, mx * 1e6, v->iters, NC_MPI_NAME);
        if (g_csv)
            fprintf(g_csv, "%s,%s,%d,%zu,%.4f,%.4f,%.4f,%s\n", o->barrier ? "barrier" : "bcast",
                    v->name, g_size, o->barrier ? 0 : g_bytes, med * 1e6, mn * 1e6, mx * 1e6,
                    NC_MPI_NAME);
    }
    if (g_rank == 0) {
        fflush(stdout);
        if (g_csv) fflush(g_csv);
    }
}

/* Measure every variant at the current size: calibrate, then interleave repetitions. */
static int measure(const opts_t *o, variant_t *vs, int nv)
{
    int err = 0;
    for (int i = 0; i < nv; i++) {
        /* warm-up (also creates the team) and calibration */
        timed_run(o->barrier, &vs[i], 3, &err);
        /* calibration: grow the run until it lasts a quarter of the target, so that the
         * per-call estimate is not dominated by the start/stop skew of a short run */
        long n = 5;
        double t = timed_run(o->barrier, &vs[i], n, &err);
        while (t * (double)n < o->target_ms * 0.25e-3 && n < o->iters) {
            n = n * 4 < o->iters ? n * 4 : o->iters;
            t = timed_run(o->barrier, &vs[i], n, &err);
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
            vs[i].samples[vs[i].n++] = timed_run(o->barrier, &vs[i], vs[i].iters, &err);
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
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "barrier"))
        o.barrier = 1;
    else if (!strcmp(argv[1], "bcast"))
        o.barrier = 0;
    else {
        fprintf(stderr, "numacoll-bench --mpi: unknown collective '%s'; allowed: barrier, bcast\n",
                argv[1]);
        return 2;
    }
    for (int i = 2; i < argc && !bad; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--quiet"))
            o.quiet = 1;
        else if (!v)
            bad = 1;
        else if (!strcmp(a, "--csv"))
            o.csv = v, i++;
        else if (!strcmp(a, "--variants"))
            o.variants = v, i++;
        else if (!strcmp(a, "--native-label"))
            o.native_label = v, i++;
        else if (!strcmp(a, "--iters"))
            bad = (o.iters = atol(v)) < 1, i++;
        else if (!strcmp(a, "--reps"))
            bad = (o.reps = atoi(v)) < 1 || o.reps > MAXREPS, i++;
        else if (!strcmp(a, "--target-ms"))
            bad = !((o.target_ms = atof(v)) > 0), i++;
        else if (!strcmp(a, "--min-bytes"))
            bad = !parse_bytes(v, &o.min_bytes), i++;
        else if (!strcmp(a, "--max-bytes"))
            bad = !parse_bytes(v, &o.max_bytes), i++;
        else
            bad = 1;
        if (bad) fprintf(stderr, "numacoll-bench --mpi: bad option or value near '%s'\n", a);
    }
    if (bad || o.max_bytes > (size_t)1 << 30 || o.min_bytes > o.max_bytes) {
        if (!bad) fprintf(stderr, "numacoll-bench --mpi: need min-bytes <= max-bytes <= 1G\n");
        usage(stderr);
        return 2;
    }

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    PMPI_Comm_dup(MPI_COMM_WORLD, &g_comm);
    PMPI_Comm_set_name(g_comm, "bench");

    variant_t *vs = calloc(MAXV, sizeof *vs);
    int nv = 0;
    if (in_list(o.variants, "native") || in_list(o.variants, o.native_label))
        vs[nv++] = (variant_t){.name = o.native_label, .kind = 0};
    if (in_list(o.variants, "default")) vs[nv++] = (variant_t){.name = "default", .kind = 1};
    int mode = numacoll_mpi_comm_mode(g_comm);
    if (!o.barrier && mode == 1) {
        const char *vn;
        for (int i = 0; (vn = numacoll_mpi_bcast_variant_name(i)) && nv < MAXV; i++)
            if (o.variants ? in_list(o.variants, vn) : 0)
                vs[nv++] = (variant_t){.name = vn, .kind = 2, .alg = vn};
    }
    g_team = mode == 1 ? numacoll_mpi_comm_team(g_comm) : NULL;
    /* "core": numacoll_barrier on the communicator's team, without MPI_Barrier's
     * interposition layer (only when named: it measures the wrapper's cost) */
    if (o.barrier && g_team && o.variants && in_list(o.variants, "core"))
        vs[nv++] = (variant_t){.name = "core", .kind = 3};
    if (o.barrier && mode != 0) {
        int na = 0;
        const numacoll_algorithm_info_t *al = numacoll_barrier_algorithms(&na);
        for (int i = 0; i < na && nv < MAXV; i++)
            if (in_list(o.variants, al[i].name))
                vs[nv++] = (variant_t){.name = al[i].name, .kind = 2, .alg = al[i].name};
    }
    if (g_rank == 0) {
        if (mode == 0)
            fprintf(stderr, "numacoll-bench --mpi: numacoll is not active on this communicator "
                            "(NUMACOLL_DISABLE, size 1 or set-up failure): 'default' is native\n");
        if (o.csv) {
            g_csv = fopen(o.csv, "a");
            if (!g_csv)
                perror(o.csv);
            else if (ftell(g_csv) == 0)
                fprintf(g_csv, "collective,algorithm,procs,bytes,latency_us_median,"
                               "latency_us_min,latency_us_max,mpi\n");
        }
        if (!o.quiet)
            printf("%-8s %-28s %5s %10s %12s %12s %12s %8s %s\n", "coll", "algorithm", "procs",
                   "bytes", "median_us", "min_us", "max_us", "iters", "mpi");
    }
    int err = 0;
    if (o.barrier) {
        err = measure(&o, vs, nv);
    } else {
        g_buf = malloc(o.max_bytes ? o.max_bytes : 1);
        memset(g_buf, 1, o.max_bytes ? o.max_bytes : 1);
        for (size_t b = o.min_bytes; b <= o.max_bytes; b = b ? b * 2 : 1) {
            g_bytes = b;
            err |= measure(&o, vs, nv);
            if (b == 0 && o.max_bytes == 0) break;
        }
        free(g_buf);
    }
    int any = 0;
    PMPI_Allreduce(&err, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any && g_rank == 0) fprintf(stderr, "numacoll-bench --mpi: some calls returned errors\n");
    if (g_csv) fclose(g_csv);
    free(vs);
    PMPI_Comm_free(&g_comm);
    MPI_Finalize();
    return any ? 1 : 0;
}
