/*
 * numacoll-bench bcast: the fork-based broadcast benchmark (paper 3's figures).
 *
 *   numacoll-bench bcast --procs P [--sizes 1:16M] [--iters N] [--reps R] [--csv FILE]
 *                        [--mode size|slots|fragment] [--root R|shift] [--variants A,B,...]
 *
 * Method (as OSU's osu_bcast): for every iteration the root writes new content into its
 * buffer (untimed; like IMB -off_cache a size-n measurement rotates through min(64,
 * 64 MiB / n) buffers of one 64 MiB region, the same for every variant, so from 512 KiB on
 * caches do not flatter us), all members pass a barrier,
 * and each member times its own broadcast call (after an untimed warm-up of iters/10 + 2
 * calls, at most 50). One measurement = the mean over the members of their mean time per
 * call. Every (variant, size) is measured R times, variants interleaved (A B C A B C ...);
 * the CSV gives the median, min and max of the R measurements in microseconds.
 *
 * The references, measured exactly like the broadcast (same pool, same rotation, fresh
 * content written untimed before every timed copy):
 *   limit:memcpy  rank 0 alone: write new content into a source buffer, then time
 *                 memcpy(source -> pool[i % npool]). The source is hot in the copying
 *                 core's own cache (dirty in L2 up to 1 MiB), as the root's buffer is for the
 *                 root; the destination rotates like a receiver's buffer.
 *   limit:xcore   (P >= 2) the physical minimum of a broadcast at P = 2: rank 0 writes new
 *                 content into a shared buffer, barrier, rank 1 times memcpy(shared ->
 *                 its pool[i % npool]); i.e. one receiver copying once from a buffer just
 *                 written by another core (the lines are dirty in that core's cache). Reported
 *                 as rank 1's mean time per copy.
 * limit:memcpy is what the targets compare with; limit:xcore shows how much of the
 * gap is the cross-core transfer itself (on the reference VM up to several times slower
 * than a local copy, depending on the host's vCPU placement regime).
 *
 * Modes:
 *   size      time vs message size per variant: default, each notification tree (tree:kary,
 *             tree:knomial, tree:flat, tree:chain, tree:topo; the bare tree names are
 *             accepted in --variants too), queue (inline and CMA off), cma (CMA for
 *             everything above the inline limit), copy:stream / copy:stream-root /
 *             copy:stream-recv / copy:plain (queue copies with non-temporal stores on both
 *             sides / the root's side only / the receivers' side only / neither, at every
 *             size: the names numacoll-bench --mpi gives the same modes), norotate and
 *             copy:plain:norotate (every use of a queue set starts at its first slot), plus
 *             the references limit:memcpy and limit:xcore (Fig. 10)
 *   slots     time vs s at f = 8 KiB, q = 1 (algorithm queue:s=N) and the same normalised
 *             to s = 1 (algorithm norm:s=N; the latency columns then hold ratios) (Fig. 7)
 *   fragment  time vs f at fixed s = 16, q = 1 (algorithm queue:f=N) with the model's
 *             prediction beside it (algorithm model:f=N; t from the memcpy reference, t_W
 *             the team's, measured at its first broadcast) (Fig. 8/9)
 * --root shift: the root of call i is i mod P (IMB's -root_shift on, as in the paper's runs);
 * the references stay as they are (they have no root).
 * Processes are bound to the allowed CPUs round-robin.
 */
#define _GNU_SOURCE 1
#include "bench.h"
#include "../cli_parse.h"

#include "coll/bcast/bcast.h"
#include "core/nc_internal.h"
#include <numacoll/fork_oob.h>

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAXP 256
#define POOL_BYTES ((size_t)64 << 20)

enum { MODE_SIZE, MODE_SLOTS, MODE_FRAG };

typedef struct variant {
    char name[48];
    int kind; /* 0 = numacoll_bcast, 1 = opts, 2 = memcpy, 3 = model (not run), 4 = xcore */
    nc_bcast_opts_t o;
    size_t f, s; /* slots/fragment modes: geometry to set before running */
} variant_t;

typedef struct point {
    int v; /* variant index */
    size_t bytes;
} point_t;

typedef struct shared {
    volatile double rank_mean[MAXP];
    volatile int failed;
    volatile double model_tw; /* the team's t_W (rank 0's bcast state), for the model curve */
    char err[512];
    double res[]; /* [npoints][reps] */
} shared_t;

#define MAXVAR 128
#define MAXSIZES 64

typedef struct bench {
    int P, reps, mode, root; /* root -1: shift (call i from root i mod P) */
    long iters; /* 0 = auto */
    size_t smin, smax;
    variant_t var[MAXVAR];
    int nvar;
    size_t sizes[MAXSIZES]; /* powers of 2 up to 1 GiB, and 0 */
    int nsizes;
    shared_t *sh;
    unsigned char *xbuf; /* shared source of limit:xcore (written by rank 0) */
    numacoll_fork_oob_t *oob;
    int cpus[1024], ncpus;
} bench_t;

static int parse_size_arg(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || end == s) return -1;
    if (*end == 'K' || *end == 'k')
        x <<= 10, end++;
    else if (*end == 'M' || *end == 'm')
        x <<= 20, end++;
    else if (*end == 'G' || *end == 'g')
        x <<= 30, end++;
    if (*end == 'i' || *end == 'B') end++;
    if (*end == 'B') end++;
    if (*end) return -1;
    *out = (size_t)x;
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: numacoll-bench bcast [--procs P] [--sizes MIN:MAX] [--iters N] [--reps R]\n"
               "                            [--csv FILE] [--mode size|slots|fragment]\n"
               "                            [--root R|shift] [--variants A,B,...]\n"
               "Fork-based broadcast benchmark (paper 3): every variant interleaved with the\n"
               "references, at each size; a measurement is the mean over the processes of their\n"
               "mean time per call, in microseconds (us).\n"
               "  --procs P    processes, 1..%d (default 2; more than the CPUs = oversubscribed)\n"
               "  --sizes A:B  message sizes in bytes, powers of two from A to B, suffixes K, M,\n"
               "               G (default 1:16M; slots and fragment modes: 1M:1M and 4M:4M;\n"
               "               at most 1G)\n"
               "  --iters N    calls per measurement (default: scaled to ~15 ms per measurement)\n"
               "  --reps R     measurements per point, interleaved, 1..1000 (default 3)\n"
               "  --csv FILE   also write collective,algorithm,procs,bytes,latency_us_median,\n"
               "               latency_us_min,latency_us_max (us; slots mode's norm:s=N rows:\n"
               "               ratios to s = 1)\n"
               "  --mode M     size: time vs size per variant (Fig. 10; the default); slots: time\n"
               "               vs the number of buffers s at f = 8 KiB (Fig. 7); fragment: time\n"
               "               vs the fragment size f at s = 16 beside the model (Fig. 8/9)\n"
               "  --root R     broadcast root (default 0); shift: call i from root i mod P\n"
               "  --variants L only the comma-separated variants L, e.g. default,limit:memcpy.\n"
               "               size mode: default, tree:kary, tree:knomial, tree:flat,\n"
               "               tree:chain, tree:topo (the bare tree names too), queue (inline and\n"
               "               CMA off), cma (CMA above the inline limit), copy:plain,\n"
               "               copy:stream-root, copy:stream-recv, copy:stream (queue copies with\n"
               "               non-temporal stores on no side / the root's / the receivers' /\n"
               "               both: the names of numacoll-bench --mpi), norotate,\n"
               "               copy:plain:norotate (no rotating offsets), limit:memcpy (rank 0's\n"
               "               local copy), limit:xcore (P >= 2: one copy across cores);\n"
               "               slots mode: queue:s=1 .. queue:s=256; fragment mode: limit:memcpy,\n"
               "               queue:f=4096 .. queue:f=131072\n"
               "  -h, --help   print this help and exit\n",
            MAXP);
}

static long auto_iters(size_t bytes)
{
    double est = 1e-6 + (double)bytes / 4e9; /* seconds per call, rough */
    long n = (long)(0.015 / est);
    return n < 5 ? 5 : n > 3000 ? 3000 : n;
}

static void fill_pattern(unsigned char *p, size_t n, unsigned key)
{
    memset(p, (int)(key & 0xff), n);
    if (n >= 8) memcpy(p, &key, sizeof key < n ? sizeof key : n);
}

/* One measurement of variant v at size n; returns the member mean (us) on rank 0. */
static int measure(bench_t *B, numacoll_team_t *t, int v, size_t n, long iters, unsigned char *src,
                   unsigned char **pool, int npool, unsigned *key, double *out)
{
    const variant_t *V = &B->var[v];
    int me = t->rank, rc = NUMACOLL_OK;
    double sum = 0;
    if (V->kind == 2) { /* limit:memcpy on rank 0 only */
        if (me == 0)
            for (long i = 0; i < iters; i++) {
                fill_pattern(src, n, (unsigned)i);
                unsigned char *dst = pool[i % npool];
                uint64_t t0 = nc_now_ns();
                memcpy(dst, src, n);
                __asm__ __volatile__("" ::"r"(dst) : "memory");
                sum += (double)(nc_now_ns() - t0);
            }
        if (me == 0) *out = sum / (double)iters / 1e3;
        return numacoll_barrier(t);
    }
    if (V->kind == 4) { /* limit:xcore: rank 1 copies what rank 0 has just written */
        for (long i = 0; i < iters && rc == NUMACOLL_OK; i++) {
            if (me == 0) fill_pattern(B->xbuf, n, (unsigned)i + 7);
            rc = numacoll_barrier(t); /* release/acquire: rank 0's writes before our reads */
            if (rc) return rc;
            if (me == 1) {
                unsigned char *dst = pool[i % npool];
                uint64_t t0 = nc_now_ns();
                memcpy(dst, B->xbuf, n);
                __asm__ __volatile__("" ::"r"(dst) : "memory");
                sum += (double)(nc_now_ns() - t0);
            }
            rc = numacoll_barrier(t); /* rank 0 rewrites the source only after the copy */
        }
        if (rc) return rc;
        if (me == 1) B->sh->rank_mean[1] = sum / (double)iters / 1e3;
        rc = numacoll_barrier(t);
        if (rc) return rc;
        if (me == 0) *out = B->sh->rank_mean[1];
        return numacoll_barrier(t);
    }
    /* untimed warm-up: wakes members that napped while rank 0 ran limit:memcpy */
    long warm = iters / 10 + 2 < 50 ? iters / 10 + 2 : 50;
    for (long i = -warm; i < iters && rc == NUMACOLL_OK; i++) {
        unsigned char *buf = pool[(i + warm) % npool];
        int root = B->root >= 0 ? B->root : (int)((i + warm) % t->size);
        ++*key;
        if (me == root) fill_pattern(buf, n, *key);
        rc = numacoll_barrier(t);
        if (rc) break;
        uint64_t t0 = nc_now_ns();
        if (V->kind == 0) {
            rc = numacoll_bcast(t, buf, n, root);
        } else {
            nc_team_op_enter(t, "bcast");
            rc = nc_bcast_run_opts(t, buf, n, root, &V->o);
            if (rc == NUMACOLL_OK) nc_team_op_leave(t);
        }
        if (i >= 0) sum += (double)(nc_now_ns() - t0);
        if (rc == NUMACOLL_OK && n && me != root && buf[n - 1] != (unsigned char)(*key & 0xff))
            rc = nc_error(NUMACOLL_ERR_STATE, "bench: rank %d received wrong data (%zu bytes)", me,
                          n);
    }
    if (rc) return rc;
    B->sh->rank_mean[me] = sum / (double)iters / 1e3;
    rc = numacoll_barrier(t);
    if (rc) return rc;
    if (me == 0) {
        double s = 0;
        for (int r = 0; r < t->size; r++)
            s += B->sh->rank_mean[r];
        if (getenv("BDBG"))
            fprintf(stderr, "%s %zu root %.2f recv %.2f\n", V->name, n, B->sh->rank_mean[0],
                    B->sh->rank_mean[1]);
        *out = s / t->size;
    }
    return numacoll_barrier(t); /* rank_mean may be reused */
}

static void set_geometry(size_t f, size_t s)
{
    char v[64];
    snprintf(v, sizeof v, "%zu", f);
    setenv("NUMACOLL_BCAST_FRAGMENT", v, 1);
    snprintf(v, sizeof v, "%zu", s);
    setenv("NUMACOLL_BCAST_SLOTS", v, 1);
    setenv("NUMACOLL_BCAST_SETS", "1", 1);
    setenv("NUMACOLL_BCAST_CMA_MIN", "0", 1);
    numacoll_config_reload();
}

static int child(bench_t *B, int rank)
{
    if (B->ncpus > 0) {
        cpu_set_t cs;
        CPU_ZERO(&cs);
        CPU_SET(B->cpus[rank % B->ncpus], &cs);
        sched_setaffinity(0, sizeof cs, &cs);
    }
    numacoll_fork_oob_set_rank(B->oob, rank);
    numacoll_team_params_t p = {.rank = rank,
                                .size = B->P,
                                .allgather = numacoll_fork_oob_allgather,
                                .oob_ctx = B->oob,
                                .name = "bench-bcast"};
    numacoll_team_t *t;
    int rc = numacoll_team_create(&p, &t);
    if (rc) goto fail_noteam;
    size_t maxn = B->sizes[B->nsizes - 1];
    /* the buffer pool: one region of POOL_BYTES (twice the reference VM's 32 MB L3), or two
     * of the largest messages if more; a size-n measurement rotates through
     * min(64, region / n) page-aligned buffers of that region, so from 512 KiB on the
     * buffers of successive calls span more than the L3 whatever the largest size of the
     * run (cutting the pool by the largest size left 1 MiB messages rotating through 4 MiB
     * of L3-resident buffers in a 16 MiB run: a memcpy reference twice as fast) */
    size_t region = 2 * nc_round_up(maxn + 64, 4096);
    if (region < POOL_BYTES) region = POOL_BYTES;
    unsigned char *pool_base =
        mmap(NULL, region, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned char *pool[64];
    unsigned char *src = malloc(maxn + 64);
    if (pool_base == MAP_FAILED || !src) {
        rc = nc_error(NUMACOLL_ERR_NOMEM, "bench: out of memory for the buffer pool");
        goto fail;
    }
    memset(pool_base, 0, region);
    unsigned key = 1;
    int np = 0;
    for (int si = 0; si < B->nsizes; si++) {
        size_t n = B->sizes[si];
        size_t stride = nc_round_up(n + 64, 4096);
        int npool = region / stride > 64 ? 64 : (int)(region / stride);
        for (int i = 0; i < npool; i++)
            pool[i] = pool_base + (size_t)i * stride;
        long iters = B->iters ? B->iters : auto_iters(n);
        for (int v = 0; v < B->nvar; v++) { /* warm-up per variant (creates state) */
            if (B->var[v].kind == 3) continue;
            if (B->mode != MODE_SIZE && B->var[v].kind == 1) {
                set_geometry(B->var[v].f, B->var[v].s);
                nc_bcast_team_fini(t);
            }
            double dummy;
            rc = measure(B, t, v, n, iters < 20 ? iters : 20, src, pool, npool, &key, &dummy);
            if (rc) goto fail;
        }
        for (int r = 0; r < B->reps; r++)
            for (int v = 0; v < B->nvar; v++) {
                double lat = 0;
                if (B->var[v].kind != 3) {
                    if (B->mode != MODE_SIZE && B->var[v].kind == 1) {
                        set_geometry(B->var[v].f, B->var[v].s);
                        nc_bcast_team_fini(t);
                        double dummy; /* re-create the queues outside the timing */
                        rc = measure(B, t, v, n, 3, src, pool, npool, &key, &dummy);
                        if (rc) goto fail;
                    }
                    rc = measure(B, t, v, n, iters, src, pool, npool, &key, &lat);
                    if (rc) goto fail;
                    nc_bcast_info_t in; /* the state exists: local, no collective init */
                    if (rank == 0 && t->bcast && nc_bcast_info(t, &in) == NUMACOLL_OK)
                        B->sh->model_tw = in.model.t_w;
                }
                if (rank == 0) B->sh->res[(size_t)(si * B->nvar + v) * B->reps + r] = lat;
            }
        np++;
    }
    (void)np;
    numacoll_team_destroy(t);
    return 0;
fail:
    numacoll_team_destroy(t);
fail_noteam:
    if (!B->sh->failed) {
        B->sh->failed = 1;
        snprintf(B->sh->err, sizeof B->sh->err, "rank %d: %s: %s", rank, numacoll_status_name(rc),
                 numacoll_last_error());
    }
    return 1;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void add_var(bench_t *B, const char *name, int kind, nc_bcast_opts_t o, size_t f, size_t s)
{
    if (B->nvar == MAXVAR) abort(); /* the modes add fewer than MAXVAR variants */
    variant_t *v = &B->var[B->nvar++];
    snprintf(v->name, sizeof v->name, "%s", name);
    v->kind = kind;
    v->o = o;
    v->f = f;
    v->s = s;
}

int bench_bcast_main(int argc, char **argv)
{
    bench_t B = {.P = 2, .reps = 3, .mode = MODE_SIZE, .root = 0};
    const char *csv = NULL, *sizes = NULL, *only = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!val) {
            fprintf(stderr, "numacoll-bench bcast: option %s needs a value\n", a);
            usage(stderr);
            return 2;
        }
        i++;
        long n = 0;
        if (!strcmp(a, "--procs")) {
            if (nc_cli_long("numacoll-bench bcast", a, val, 1, MAXP, &n)) return 2;
            B.P = (int)n;
        } else if (!strcmp(a, "--iters")) {
            if (nc_cli_long("numacoll-bench bcast", a, val, 0, 1000000000, &n)) return 2;
            B.iters = n;
        } else if (!strcmp(a, "--reps")) {
            if (nc_cli_long("numacoll-bench bcast", a, val, 1, 1000, &n)) return 2;
            B.reps = (int)n;
        } else if (!strcmp(a, "--root")) {
            char *end = NULL;
            long r = strtol(val, &end, 10);
            if (!strcmp(val, "shift"))
                B.root = -1;
            else if (end == val || *end || r < 0 || r >= MAXP) {
                fprintf(stderr,
                        "numacoll-bench bcast: --root '%s' is not valid; allowed: a rank "
                        "0..%d, or shift\n",
                        val, MAXP - 1);
                return 2;
            } else
                B.root = (int)r;
        } else if (!strcmp(a, "--csv"))
            csv = val;
        else if (!strcmp(a, "--variants"))
            only = val;
        else if (!strcmp(a, "--sizes"))
            sizes = val;
        else if (!strcmp(a, "--mode")) {
            if (!strcmp(val, "size"))
                B.mode = MODE_SIZE;
            else if (!strcmp(val, "slots"))
                B.mode = MODE_SLOTS;
            else if (!strcmp(val, "fragment"))
                B.mode = MODE_FRAG;
            else {
                fprintf(stderr,
                        "numacoll-bench bcast: --mode '%s'; allowed: size, slots, "
                        "fragment\n",
                        val);
                return 2;
            }
        } else {
            fprintf(stderr, "numacoll-bench bcast: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (B.root >= B.P) {
        fprintf(stderr,
                "numacoll-bench bcast: --root %d is not valid with --procs %d; allowed: "
                "0..%d\n",
                B.root, B.P, B.P - 1);
        return 2;
    }
    if (B.mode != MODE_SIZE && B.P < 2) {
        fprintf(stderr,
                "numacoll-bench bcast: --mode %s needs --procs >= 2 (a broadcast of one "
                "process moves no data)\n",
                B.mode == MODE_SLOTS ? "slots" : "fragment");
        return 2;
    }
    if (!sizes) sizes = B.mode == MODE_SIZE ? "1:16M" : B.mode == MODE_SLOTS ? "1M:1M" : "4M:4M";
    {
        char tmp[64];
        snprintf(tmp, sizeof tmp, "%s", sizes);
        char *colon = strchr(tmp, ':');
        if (colon) *colon = 0;
        if (parse_size_arg(tmp, &B.smin) || parse_size_arg(colon ? colon + 1 : tmp, &B.smax) ||
            B.smin > B.smax || B.smax > ((size_t)1 << 30)) {
            fprintf(stderr,
                    "numacoll-bench bcast: --sizes '%s'; allowed: MIN:MAX with sizes "
                    "like 1, 4K, 16M (MIN <= MAX <= 1G)\n",
                    sizes);
            return 2;
        }
    }
    for (size_t s = B.smin ? B.smin : 1; s <= B.smax && B.nsizes < MAXSIZES - 1; s *= 2)
        B.sizes[B.nsizes++] = s;
    if (B.smin == 0) { /* include 0 only if asked */
        memmove(B.sizes + 1, B.sizes, (size_t)B.nsizes * sizeof *B.sizes);
        B.sizes[0] = 0, B.nsizes++;
    }

    nc_bcast_opts_t o = NC_BCAST_OPTS_DEFAULT;
    if (B.mode == MODE_SIZE) {
        add_var(&B, "default", 0, o, 0, 0);
        for (int k = 0; k < NC_BTREE_COUNT; k++) {
            nc_bcast_opts_t ot = o;
            ot.tree = k;
            char nm[48];
            snprintf(nm, sizeof nm, "tree:%s", nc_bcast_tree_names[k]);
            add_var(&B, nm, 1, ot, 0, 0);
        }
        nc_bcast_opts_t oq = o;
        oq.cma_min = 0;
        oq.inline_max = 0;
        add_var(&B, "queue", 1, oq, 0, 0);
        nc_bcast_opts_t oc = o;
        oc.cma_min = 1;
        add_var(&B, "cma", 1, oc, 0, 0);
        nc_bcast_opts_t on = o;
        /* the copy modes by numacoll-bench --mpi's names (nt: bit 0 the root streams, bit 1
         * the receivers do) */
        on.copy_mode = 3;
        add_var(&B, "copy:stream", 1, on, 0, 0);
        on.copy_mode = 1;
        add_var(&B, "copy:stream-root", 1, on, 0, 0);
        on.copy_mode = 2;
        add_var(&B, "copy:stream-recv", 1, on, 0, 0);
        on.copy_mode = 0;
        add_var(&B, "copy:plain", 1, on, 0, 0);
        nc_bcast_opts_t onr = o;
        onr.rotate = 0;
        add_var(&B, "norotate", 1, onr, 0, 0);
        onr.copy_mode = 0;
        add_var(&B, "copy:plain:norotate", 1, onr, 0, 0);
        add_var(&B, "limit:memcpy", 2, o, 0, 0);
        if (B.P >= 2) add_var(&B, "limit:xcore", 4, o, 0, 0);
    } else if (B.mode == MODE_SLOTS) {
        for (size_t s = 1; s <= 256; s *= 2) {
            char nm[48];
            snprintf(nm, sizeof nm, "queue:s=%zu", s);
            add_var(&B, nm, 1, o, 8192, s);
        }
    } else {
        add_var(&B, "limit:memcpy", 2, o, 0, 0);
        for (size_t f = 4096; f <= 128 * 1024; f += 4096) {
            char nm[48];
            snprintf(nm, sizeof nm, "queue:f=%zu", f);
            add_var(&B, nm, 1, o, f, 16);
        }
    }
    if (only) { /* keep the named variants, in their usual order; every name must be one */
        const char *mname = B.mode == MODE_SIZE    ? "size"
                            : B.mode == MODE_SLOTS ? "slots"
                                                   : "fragment";
        char want[MAXVAR] = {0};
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", only);
        for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
             tok = strtok_r(NULL, ",", &save)) {
            char name[64];
            /* a bare tree name means that tree (tree:<name>) */
            if (nc_bcast_tree_find(tok) >= 0)
                snprintf(name, sizeof name, "tree:%s", tok);
            else
                snprintf(name, sizeof name, "%s", tok);
            int found = 0;
            for (int v = 0; v < B.nvar; v++)
                if (!strcmp(B.var[v].name, name)) want[v] = 1, found = 1;
            if (!found) {
                fprintf(stderr,
                        "numacoll-bench bcast: --variants: '%s' is not a variant of mode %s; "
                        "allowed:",
                        tok, mname);
                for (int v = 0; v < B.nvar; v++)
                    fprintf(stderr, "%s %s", v ? "," : "", B.var[v].name);
                fprintf(stderr, "\n");
                return 2;
            }
        }
        int kept = 0;
        for (int v = 0; v < B.nvar; v++)
            if (want[v]) B.var[kept++] = B.var[v];
        if (kept == 0) {
            fprintf(stderr, "numacoll-bench bcast: --variants '%s' names no variant of mode %s\n",
                    only, mname);
            return 2;
        }
        B.nvar = kept;
    }
    long cpn = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t cs;
    if (sched_getaffinity(0, sizeof cs, &cs) == 0)
        for (int c = 0; c < CPU_SETSIZE && B.ncpus < 1024; c++)
            if (CPU_ISSET(c, &cs)) B.cpus[B.ncpus++] = c;
    (void)cpn;

    size_t npts = (size_t)B.nsizes * (size_t)B.nvar * (size_t)B.reps;
    size_t shbytes = sizeof(shared_t) + npts * sizeof(double);
    B.sh = mmap(NULL, shbytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    B.oob = numacoll_fork_oob_create(B.P);
    B.xbuf = mmap(NULL, B.smax + 64, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (B.sh == MAP_FAILED || !B.oob || B.xbuf == MAP_FAILED) {
        fprintf(stderr, "numacoll-bench bcast: cannot set up shared memory: %s\n",
                numacoll_last_error());
        return 1;
    }
    fflush(stdout);
    pid_t pids[MAXP];
    for (int r = 0; r < B.P; r++) {
        pids[r] = fork();
        if (pids[r] == 0) _exit(child(&B, r));
        if (pids[r] < 0) {
            perror("fork");
            for (int x = 0; x < r; x++)
                kill(pids[x], SIGKILL);
            return 1;
        }
    }
    int bad = 0;
    for (int r = 0; r < B.P; r++) {
        int st;
        waitpid(pids[r], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st)) bad++;
    }
    numacoll_fork_oob_destroy(B.oob);
    if (bad) {
        fprintf(stderr, "numacoll-bench bcast: %d process(es) failed: %s\n", bad,
                B.sh->failed ? B.sh->err : "killed");
        return 1;
    }

    FILE *out = csv ? fopen(csv, "w") : NULL;
    if (csv && !out) {
        fprintf(stderr, "numacoll-bench bcast: cannot write %s: %s\n", csv, strerror(errno));
        return 1;
    }
    if (out)
        fprintf(out, "collective,algorithm,procs,bytes,latency_us_median,latency_us_min,"
                     "latency_us_max\n");
    char rootdesc[32];
    if (B.root >= 0)
        snprintf(rootdesc, sizeof rootdesc, "root %d", B.root);
    else
        snprintf(rootdesc, sizeof rootdesc, "root shift (i mod %d)", B.P);
    printf("# numacoll-bench bcast: %d processes, %s, %d reps, mode %s; latency in us "
           "(median [min..max] of the reps)%s\n",
           B.P, rootdesc, B.reps,
           B.mode == MODE_SIZE    ? "size"
           : B.mode == MODE_SLOTS ? "slots"
                                  : "fragment",
           B.mode == MODE_SLOTS  ? "; norm:s=N rows: ratio to s = 1 (no unit)"
           : B.mode == MODE_FRAG ? "; model:f=N rows: the model's time in us"
                                 : "");
    printf("%-20s %10s  %10s [%s..%s]\n", "variant", "bytes", "median_us", "min_us", "max_us");
    double *tmp = malloc((size_t)B.reps * sizeof *tmp);
    nc_bcast_model_t md = nc_bcast_model_default();
    for (int si = 0; si < B.nsizes; si++) {
        double base = 0, t_byte = 0;
        for (int v = 0; v < B.nvar; v++) {
            memcpy(tmp, &B.sh->res[(size_t)(si * B.nvar + v) * B.reps], B.reps * sizeof *tmp);
            qsort(tmp, (size_t)B.reps, sizeof *tmp, cmp_d);
            double med = B.reps % 2 ? tmp[B.reps / 2] : (tmp[B.reps / 2 - 1] + tmp[B.reps / 2]) / 2;
            printf("%-20s %10zu  %10.3f [%.3f..%.3f]\n", B.var[v].name, B.sizes[si], med, tmp[0],
                   tmp[B.reps - 1]);
            if (out)
                fprintf(out, "bcast,%s,%d,%zu,%.4f,%.4f,%.4f\n", B.var[v].name, B.P, B.sizes[si],
                        med, tmp[0], tmp[B.reps - 1]);
            if (B.mode == MODE_SLOTS && v == 0) base = med;
            if (B.mode == MODE_SLOTS && base > 0) {
                char nm[48];
                snprintf(nm, sizeof nm, "norm:s=%zu", B.var[v].s);
                printf("%-20s %10zu  %10.3f\n", nm, B.sizes[si], med / base);
                if (out)
                    fprintf(out, "bcast,%s,%d,%zu,%.4f,%.4f,%.4f\n", nm, B.P, B.sizes[si],
                            med / base, tmp[0] / base, tmp[B.reps - 1] / base);
            }
            if (B.mode == MODE_FRAG && B.var[v].kind == 2 && B.sizes[si])
                t_byte = med * 1e-6 / (double)B.sizes[si];
            if (B.mode == MODE_FRAG && B.var[v].kind == 1 && t_byte > 0) {
                nc_bcast_model_t m2 = md;
                m2.t = t_byte;
                if (B.sh->model_tw > 0) m2 = nc_bcast_model_from(t_byte, B.sh->model_tw);
                double mt = nc_bcast_model_time(&m2, (double)B.sizes[si], (double)B.var[v].f,
                                                (double)B.var[v].s) *
                            1e6;
                char nm[48];
                snprintf(nm, sizeof nm, "model:f=%zu", B.var[v].f);
                printf("%-20s %10zu  %10.3f\n", nm, B.sizes[si], mt);
                if (out)
                    fprintf(out, "bcast,%s,%d,%zu,%.4f,%.4f,%.4f\n", nm, B.P, B.sizes[si], mt, mt,
                            mt);
            }
        }
    }
    free(tmp);
    if (out) fclose(out);
    return 0;
}
