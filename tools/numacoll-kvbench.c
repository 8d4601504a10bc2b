/*
 * numacoll-kvbench: the paper's (4) microbenchmark of the key-value store's lock schemes,
 * plus the Get profiler.
 *
 *   numacoll-kvbench --mode read-only|write-only|concurrent|correctness|all --readers N
 *                    [--lock NAME|all] [--csv FILE] [--reps R] [--duration S] [--fixed]
 *   numacoll-kvbench --profile-get --readers N [--lock NAME|all] [--profile-clock
 *                    cpuid|lfence|clock] [--iters K] [--csv FILE] [--fixed]
 *
 * The parent process is the server (the writer, bound to the first allowed CPU); the N
 * readers are forked processes bound round-robin to the allowed CPUs starting at the
 * second one (so with N >= #CPUs readers share CPUs: the oversubscribed figures show
 * scheduling, not locking). N runs from 1 to the given maximum (only N with --fixed).
 *
 * Modes (each repetition lasts --duration seconds, R repetitions, median/min/max):
 *   read-only    readers take and release the read lock (reading one shared word inside)
 *                as fast as they can; ops/s = sum over readers of validated read sections.
 *   write-only   readers are attached but idle; the writer takes and releases the write
 *                lock; ops/s = writer acquisitions; writer_acquire_us = mean time per
 *                acquisition+release.
 *   concurrent   readers read continuously; the writer does 100 writes separated by 10 us
 *                pauses; ops/s = readers' throughput during that window; writer_acquire_us
 *                = median time the writer waited for the lock (per repetition, then the
 *                median over repetitions).
 *   correctness  the writer changes two fields with a pause between them under the write
 *                lock; readers check under the read lock that they agree. Any torn read is
 *                counted and the program exits with status 1.
 */
#include "kvbench/kvbench.h"
#include "kvdb/kvdb_internal.h"
#include "cli_parse.h"

#include <getopt.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { M_READ, M_WRITE, M_CONC, M_CORR, M_COUNT };
static const char *mode_names[M_COUNT] = {"read-only", "write-only", "concurrent", "correctness"};

#define CONC_WRITES 100

#ifndef NC_VERSION
#define NC_VERSION "unknown"
#endif

/* @p r (per second) with an SI prefix: "38.7 M", "912 k", "15" */
static const char *si_rate(double r, char *out, size_t n)
{
    if (isnan(r))
        snprintf(out, n, "-");
    else if (r >= 1e9)
        snprintf(out, n, "%.3g G", r / 1e9);
    else if (r >= 1e6)
        snprintf(out, n, "%.3g M", r / 1e6);
    else if (r >= 1e3)
        snprintf(out, n, "%.3g k", r / 1e3);
    else
        snprintf(out, n, "%.3g", r);
    return out;
}

typedef struct shm {
    _Atomic int ready;
    char pad0[124];
    _Atomic int go;
    char pad1[124];
    _Atomic int stop; /* 1 = measuring window open, 2 = closed (readers leave) */
    char pad2[124];
    char handle[64];
    struct {
        _Atomic uint64_t ops;
        _Atomic uint64_t torn;
        _Atomic int err;
        char pad[128 - 20];
    } r[MAX_READERS];
} shm_t;

static void spin_ns(uint64_t ns)
{
    uint64_t end = nc_now_ns() + ns;
    while (nc_now_ns() < end)
        nc_cpu_relax();
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median_d(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- reader process ----------------------------------------------------------------- */

static int reader_main(shm_t *sh, int idx, int mode)
{
    kvb_bind_cpu(kvb_reader_cpu(idx));
    numacoll_kvdb_t *db;
    if (numacoll_kvdb_attach(sh->handle, &db)) {
        fprintf(stderr, "reader %d: %s\n", idx, numacoll_last_error());
        atomic_store(&sh->r[idx].err, 1);
        atomic_fetch_add(&sh->ready, 1);
        return 1;
    }
    _Atomic uint64_t *f0 = nc_kvdb_scratch(db, 0), *f1 = nc_kvdb_scratch(db, 1);
    atomic_fetch_add(&sh->ready, 1);
    /* go is written once by the parent; after seeing it we start measuring */
    pid_t parent = getppid(), pair[2] = {parent, getpid()};
    if (kvb_wait_at_least(&sh->go, 1, pair, 2, 1, "a reader waiting for its parent (member 0)")) {
        numacoll_kvdb_close(db);
        return 1;
    }
    uint64_t ops = 0, torn = 0;
    int err = 0;
    if (mode == M_WRITE) {
        /* idle but attached: the writer must still deal with our slot; stop is written
         * by the parent (2: leave), looked at every 1 ms, with whether the parent is alive */
        while (atomic_load_explicit(&sh->stop, memory_order_relaxed) != 2 && !err) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
            err = nc_pid_gone(parent);
        }
        if (err)
            fprintf(stderr, "reader %d: the benchmark's parent (pid %d) exited\n", idx,
                    (int)parent);
    } else {
        uint64_t sink = 0, ops_at_open = 0;
        int seen = 0;
        /* count only the sections inside the parent's measuring window (stop: 0 -> 1 -> 2,
         * written by the parent; checked every 64 sections) */
        uint32_t rounds = 0;
        while (!err) {
            int w = atomic_load_explicit(&sh->stop, memory_order_relaxed);
            /* every 16384 rounds (64 sections each): is the parent, who ends the loop, alive? */
            if (++rounds % 16384 == 0 && nc_pid_gone(parent)) {
                nc_error(NUMACOLL_ERR_PEER_DEAD, "the benchmark's parent (pid %d) exited",
                         (int)parent);
                err = 1;
                break;
            }
            if (w != seen) {
                if (w == 1) ops_at_open = ops;
                if (w == 2) break;
                seen = w;
            }
            for (int k = 0; k < 64; k++) {
                uint64_t tok;
                if (nc_kvdb_rdlock(db, &tok)) {
                    err = 1;
                    break;
                }
                uint64_t a = atomic_load_explicit(f0, memory_order_relaxed);
                if (mode == M_CORR) spin_ns(200);
                uint64_t b = atomic_load_explicit(f1, memory_order_relaxed);
                int v = nc_kvdb_rdunlock(db, tok);
                if (v == NC_KVLOCK_RETRY) continue;
                if (v) {
                    err = 1;
                    break;
                }
                sink += a;
                torn += a != b;
                ops++;
            }
        }
        ops -= seen ? ops_at_open : ops; /* never saw the window open: 0 */
        __asm__ __volatile__("" ::"r"(sink));
        if (err) fprintf(stderr, "reader %d: %s\n", idx, numacoll_last_error());
    }
    atomic_store(&sh->r[idx].ops, ops);
    atomic_store(&sh->r[idx].torn, torn);
    atomic_store(&sh->r[idx].err, err);
    numacoll_kvdb_close(db);
    return err;
}

/* ---- one repetition ------------------------------------------------------------------- */

typedef struct rep_result {
    double ops_per_sec;
    double writer_us; /* see the modes above; NAN if none */
    uint64_t torn;
    int failed;
} rep_result_t;

static int run_rep(const char *lock, int mode, int N, double duration, rep_result_t *res)
{
    memset(res, 0, sizeof *res);
    res->writer_us = NAN;
    numacoll_kvdb_params_t p = {.lock = lock, .max_readers = N};
    numacoll_kvdb_t *srv;
    if (numacoll_kvdb_create(&p, &srv)) {
        fprintf(stderr, "numacoll-kvbench: %s\n", numacoll_last_error());
        return -1;
    }
    shm_t *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) return -1;
    snprintf(sh->handle, sizeof sh->handle, "%s", numacoll_kvdb_handle(srv));
    pid_t pids[MAX_READERS];
    fflush(stdout);
    for (int i = 0; i < N; i++) {
        pids[i] = fork();
        if (pids[i] == 0) _exit(reader_main(sh, i, mode));
    }
    kvb_bind_cpu(kvb_writer_cpu());
    /* ready: each reader adds 1 once attached (or failed) */
    if (kvb_wait_for_readers(&sh->ready, pids, N)) goto fail; /* the readers are killed */
    _Atomic uint64_t *f0 = nc_kvdb_scratch(srv, 0), *f1 = nc_kvdb_scratch(srv, 1);
    uint64_t dur_ns = (uint64_t)(duration * 1e9);
    /* release: the readers start after seeing go; the window opens after a warm-up */
    atomic_store_explicit(&sh->go, 1, memory_order_release);
    if (mode != M_WRITE) spin_ns(2000000);
    atomic_store_explicit(&sh->stop, 1, memory_order_relaxed);
    uint64_t t0 = nc_now_ns(), t1;
    uint64_t wops = 0;
    if (mode == M_READ) {
        struct timespec ts = {(time_t)(dur_ns / 1000000000ull), (long)(dur_ns % 1000000000ull)};
        nanosleep(&ts, NULL);
        t1 = nc_now_ns();
    } else if (mode == M_WRITE) {
        do {
            for (int k = 0; k < 64; k++) {
                if (nc_kvdb_wrlock(srv)) goto fail;
                atomic_store_explicit(f0, wops, memory_order_relaxed);
                atomic_store_explicit(f1, wops, memory_order_relaxed);
                nc_kvdb_wrunlock(srv);
                wops++;
            }
        } while ((t1 = nc_now_ns()) - t0 < dur_ns);
        res->writer_us = (double)(t1 - t0) / 1e3 / (double)wops;
    } else if (mode == M_CONC) {
        uint64_t acq[CONC_WRITES];
        for (int i = 0; i < CONC_WRITES; i++) {
            uint64_t a = nc_now_ns();
            if (nc_kvdb_wrlock(srv)) goto fail;
            acq[i] = nc_now_ns() - a;
            atomic_store_explicit(f0, (uint64_t)i, memory_order_relaxed);
            atomic_store_explicit(f1, (uint64_t)i, memory_order_relaxed);
            nc_kvdb_wrunlock(srv);
            spin_ns(10000);
        }
        t1 = nc_now_ns();
        qsort(acq, CONC_WRITES, sizeof acq[0], kvb_cmp_u64);
        res->writer_us = (double)(acq[CONC_WRITES / 2 - 1] + acq[CONC_WRITES / 2]) / 2e3;
    } else { /* correctness */
        do {
            if (nc_kvdb_wrlock(srv)) goto fail;
            wops++;
            atomic_store_explicit(f0, wops, memory_order_relaxed);
            spin_ns(1000);
            atomic_store_explicit(f1, wops, memory_order_relaxed);
            nc_kvdb_wrunlock(srv);
            spin_ns(2000);
        } while ((t1 = nc_now_ns()) - t0 < dur_ns);
    }
    atomic_store(&sh->stop, 2);
    int failed = 0;
    uint64_t rops = 0;
    for (int i = 0; i < N; i++) {
        int st;
        waitpid(pids[i], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) failed++;
        rops += atomic_load(&sh->r[i].ops);
        res->torn += atomic_load(&sh->r[i].torn);
    }
    double secs = (double)(t1 - t0) / 1e9;
    res->ops_per_sec = mode == M_WRITE ? (double)wops / secs : (double)rops / secs;
    res->failed = failed;
    munmap(sh, sizeof *sh);
    numacoll_kvdb_close(srv);
    return failed ? -1 : 0;
fail:
    fprintf(stderr, "numacoll-kvbench: writer: %s\n", numacoll_last_error());
    atomic_store(&sh->stop, 2);
    for (int i = 0; i < N; i++)
        waitpid(pids[i], NULL, 0);
    munmap(sh, sizeof *sh);
    numacoll_kvdb_close(srv);
    return -1;
}

/* ---- main --------------------------------------------------------------------------------- */

/* "a|b|c" -> "a, b, c" */
static const char *lock_list(void)
{
    static char buf[512];
    size_t o = 0;
    for (const char *p = nc_kvlock_allowed_names(); *p && o + 3 < sizeof buf; p++) {
        if (*p == '|') {
            buf[o++] = ',';
            buf[o++] = ' ';
        } else {
            buf[o++] = *p;
        }
    }
    buf[o] = 0;
    return buf;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: numacoll-kvbench --mode read-only|write-only|concurrent|correctness|all "
            "--readers N\n"
            "                        [--lock NAME|all] [--csv FILE] [--reps R] [--duration S] "
            "[--fixed]\n"
            "       numacoll-kvbench --profile-get --readers N [--lock NAME|all]\n"
            "                        [--profile-clock cpuid|lfence|clock] [--iters K] "
            "[--keylen L] [--csv FILE] [--fixed]\n"
            "The key-value store's lock schemes (paper 4): the server process writes, N forked\n"
            "reader processes read (writer on the first allowed CPU, readers round-robin on\n"
            "the others; N >= CPUs is oversubscribed).\n"
            "  --mode M          read-only: readers take and release the read lock as fast as\n"
            "                    they can; write-only: the writer takes and releases the write\n"
            "                    lock, readers attached but idle; concurrent: readers read while\n"
            "                    the writer does 100 writes 10 us apart (writer = its median wait\n"
            "                    for the lock); correctness: readers check under the read lock\n"
            "                    that two fields written under the write lock agree (a torn read\n"
            "                    fails, exit status 1); all: each in turn\n"
            "  --readers N       reader processes, 1..%d; N runs from 1 to N (--fixed: only N)\n"
            "  --fixed           only N readers\n"
            "  --lock NAME       a lock scheme or all (default): %s\n"
            "  --reps R          repetitions per point, 1..1000 (default 5); median, min, max\n"
            "  --duration S      seconds per repetition, 0 < S <= 60 (default 0.2)\n"
            "  --csv FILE        also write CSV: lock,mode,readers,ops_per_sec_median,\n"
            "                    ops_per_sec_min,ops_per_sec_max,writer_acquire_us_median\n"
            "                    (lock acquisitions per second; us); with --profile-get:\n"
            "                    lock,readers,stat,P7-P1,...,P7-P6,unit\n"
            "  --profile-get     instead of --mode: profile numacoll_kvdb_get (below)\n"
            "  --profile-clock C cpuid (default: cpuid serialises, then rdtsc; TSC cycles),\n"
            "                    lfence (lfence, then rdtsc; cycles), clock (clock_gettime; ns)\n"
            "  --iters K         profile rounds over the 100 keys per reader, 1..100000\n"
            "                    (default 200)\n"
            "  --keylen L        key length in characters, 1..%d (default 50)\n"
            "  --version         print the version and exit\n"
            "  -h, --help        print this help and exit\n"
            "Table: rates are lock acquisitions per second (read sections in read-only,\n"
            "concurrent and correctness, write acquisitions in write-only), median, min and max\n"
            "over the repetitions, with k = 10^3, M = 10^6, G = 10^9; writer (us): write-only\n"
            "the mean time per write acquisition + release, concurrent the median wait.\n",
            MAX_READERS, lock_list(), NUMACOLL_KVDB_MAX_KEYLEN);
    kvb_profile_legend(f, "");
}

int main(int argc, char **argv)
{
    const char *mode_s = NULL, *lock_s = "all", *csv_s = NULL, *clock_s = "cpuid";
    int maxN = 0, reps = 5, fixed = 0, profile = 0, iters = 200, keylen = 50;
    double duration = 0.2;
    static struct option opts[] = {{"mode", required_argument, 0, 'm'},
                                   {"readers", required_argument, 0, 'n'},
                                   {"lock", required_argument, 0, 'l'},
                                   {"csv", required_argument, 0, 'c'},
                                   {"reps", required_argument, 0, 'r'},
                                   {"duration", required_argument, 0, 'd'},
                                   {"fixed", no_argument, 0, 'f'},
                                   {"profile-get", no_argument, 0, 'p'},
                                   {"profile-clock", required_argument, 0, 'k'},
                                   {"iters", required_argument, 0, 'i'},
                                   {"keylen", required_argument, 0, 'K'},
                                   {"help", no_argument, 0, 'h'},
                                   {"version", no_argument, 0, 'V'},
                                   {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "m:n:l:c:r:d:fpk:i:K:h", opts, NULL)) != -1) {
        char *end = NULL;
        int bad = 0; /* the value of this option is wrong (its message printed) */
        long n = 0;
        switch (c) {
        case 'm':
            mode_s = optarg;
            break;
        case 'n':
            bad = nc_cli_long("numacoll-kvbench", "--readers", optarg, 1, MAX_READERS, &n) != 0;
            maxN = (int)n;
            break;
        case 'l':
            lock_s = optarg;
            break;
        case 'c':
            csv_s = optarg;
            break;
        case 'r':
            bad = nc_cli_long("numacoll-kvbench", "--reps", optarg, 1, 1000, &n) != 0;
            reps = (int)n;
            break;
        case 'd':
            duration = strtod(optarg, &end);
            if (end == optarg || *end || !(duration > 0 && duration <= 60)) {
                fprintf(stderr,
                        "numacoll-kvbench: --duration '%s' is not valid; allowed: seconds in "
                        "(0, 60]\n",
                        optarg);
                bad = 1;
            }
            break;
        case 'f':
            fixed = 1;
            break;
        case 'p':
            profile = 1;
            break;
        case 'k':
            clock_s = optarg;
            break;
        case 'i':
            bad = nc_cli_long("numacoll-kvbench", "--iters", optarg, 1, 100000, &n) != 0;
            iters = (int)n;
            break;
        case 'K':
            bad = nc_cli_long("numacoll-kvbench", "--keylen", optarg, 1, NUMACOLL_KVDB_MAX_KEYLEN,
                              &n) != 0;
            keylen = (int)n;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            printf("numacoll-kvbench (numacoll) %s\n", NC_VERSION);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
        if (bad) return 2;
    }
    if (optind < argc) {
        fprintf(stderr, "numacoll-kvbench: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    if (numacoll_config_check()) {
        fprintf(stderr, "numacoll-kvbench: %s\n", numacoll_last_error());
        return 2;
    }
    if (maxN < 1 || maxN > MAX_READERS) {
        fprintf(stderr, "numacoll-kvbench: --readers N is required, 1..%d\n", MAX_READERS);
        return 2;
    }
    const char *locks[32];
    int nlocks = 0;
    if (strcmp(lock_s, "all") == 0) {
        for (int i = 0; i < nc_kvlock_registry_count; i++)
            locks[nlocks++] = nc_kvlock_registry[i]->name;
    } else if (nc_kvlock_find(lock_s)) {
        locks[nlocks++] = lock_s;
    } else {
        fprintf(stderr, "numacoll-kvbench: unknown lock '%s'; allowed: all, %s\n", lock_s,
                lock_list());
        return 2;
    }
    kvb_get_cpus();
    FILE *csv = NULL;
    if (csv_s && !(csv = fopen(csv_s, "w"))) {
        perror(csv_s);
        return 2;
    }

    if (profile) {
        if (strcmp(clock_s, "cpuid") == 0)
            nc_kv_prof_clock = NC_KV_CLOCK_CPUID;
        else if (strcmp(clock_s, "lfence") == 0)
            nc_kv_prof_clock = NC_KV_CLOCK_LFENCE;
        else if (strcmp(clock_s, "clock") == 0)
            nc_kv_prof_clock = NC_KV_CLOCK_GETTIME;
        else {
            fprintf(stderr,
                    "numacoll-kvbench: --profile-clock '%s'; allowed: cpuid, lfence, clock\n",
                    clock_s);
            return 2;
        }
#if !defined(__x86_64__) && !defined(__i386__)
        nc_kv_prof_clock = NC_KV_CLOCK_GETTIME;
        clock_s = "clock";
#endif
        if (csv) fprintf(csv, "lock,readers,stat,P7-P1,P2-P1,P3-P2,P4-P3,P5-P4,P6-P5,P7-P6,unit\n");
        kvb_profile_legend(stdout, "# ");
        int rc = 0;
        for (int li = 0; li < nlocks; li++)
            for (int N = fixed ? maxN : 1; N <= maxN; N++)
                if (kvb_run_profile(locks[li], N, iters, keylen, csv, clock_s)) rc = 1;
        if (csv) fclose(csv);
        return rc;
    }

    int modes[M_COUNT], nmodes = 0;
    if (!mode_s) {
        fprintf(stderr, "numacoll-kvbench: --mode is required (or --profile-get)\n");
        usage(stderr);
        return 2;
    }
    if (strcmp(mode_s, "all") == 0) {
        for (int m = 0; m < M_COUNT; m++)
            modes[nmodes++] = m;
    } else {
        for (int m = 0; m < M_COUNT; m++)
            if (strcmp(mode_s, mode_names[m]) == 0) modes[nmodes++] = m;
        if (!nmodes) {
            fprintf(stderr,
                    "numacoll-kvbench: unknown mode '%s'; allowed: read-only, "
                    "write-only, concurrent, correctness, all\n",
                    mode_s);
            return 2;
        }
    }
    if (csv)
        fprintf(csv, "lock,mode,readers,ops_per_sec_median,ops_per_sec_min,ops_per_sec_max,"
                     "writer_acquire_us_median\n");
    printf("# numacoll-kvbench: %d CPU(s) available; writer on CPU %d, readers round-robin "
           "from CPU %d; %d rep(s) of %.3f s\n",
           kvb_cpu_count(), kvb_writer_cpu(), kvb_reader_cpu(0), reps, duration);
    printf("# acq/s: lock acquisitions per second (read sections; write-only: write "
           "acquisitions), k = 10^3, M = 10^6; writer (us): time per write (write-only), median "
           "wait for the lock (concurrent)\n");
    printf("%-15s %-12s %3s %14s %14s %14s %12s %s\n", "lock", "mode", "N", "median", "min",
           "max", "writer (us)", "");
    int exit_code = 0;
    for (int mi = 0; mi < nmodes; mi++)
        for (int li = 0; li < nlocks; li++)
            for (int N = fixed ? maxN : 1; N <= maxN; N++) {
                double ops[1000], wus[1000];
                int nw = 0;
                uint64_t torn = 0;
                int bad = 0;
                for (int r = 0; r < reps; r++) {
                    rep_result_t res;
                    if (run_rep(locks[li], modes[mi], N, duration, &res)) bad = 1;
                    ops[r] = res.ops_per_sec;
                    if (!isnan(res.writer_us)) wus[nw++] = res.writer_us;
                    torn += res.torn;
                }
                double mn = ops[0], mx = ops[0];
                for (int r = 1; r < reps; r++) {
                    if (ops[r] < mn) mn = ops[r];
                    if (ops[r] > mx) mx = ops[r];
                }
                double med = median_d(ops, reps);
                double wmed = nw ? median_d(wus, nw) : NAN;
                char note[64] = "";
                if (modes[mi] == M_CORR) {
                    snprintf(note, sizeof note, "%s: %llu torn reads", torn ? "FAIL" : "ok",
                             (unsigned long long)torn);
                    if (torn) exit_code = 1;
                }
                if (bad) {
                    snprintf(note, sizeof note, "FAIL: a process failed");
                    exit_code = 1;
                }
                /* the writer needs a CPU too except in read-only mode */
                if (N + (modes[mi] != M_READ) > kvb_cpu_count())
                    strncat(note, " (oversubscribed)", sizeof note - strlen(note) - 1);
                char wtxt[32] = "-", r0[32], r1[32], r2[32];
                if (nw) snprintf(wtxt, sizeof wtxt, "%.3f", wmed);
                printf("%-15s %-12s %3d %8s acq/s %8s acq/s %8s acq/s %12s %s\n", locks[li],
                       mode_names[modes[mi]], N, si_rate(med, r0, sizeof r0),
                       si_rate(mn, r1, sizeof r1), si_rate(mx, r2, sizeof r2), wtxt, note);
                fflush(stdout);
                if (csv) {
                    fprintf(csv, "%s,%s,%d,%.0f,%.0f,%.0f,", locks[li], mode_names[modes[mi]], N,
                            med, mn, mx);
                    if (nw) fprintf(csv, "%.3f", wmed);
                    fprintf(csv, "\n");
                    fflush(csv);
                }
            }
    if (csv) fclose(csv);
    return exit_code;
}
