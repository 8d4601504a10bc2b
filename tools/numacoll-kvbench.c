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
#include "kvdb/kvdb_internal.h"
#include "cli_parse.h"
#include "bench/bench_wait.h"

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

#define MAX_READERS 256
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

static int cpus[1024], ncpus;

static void get_cpus(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        cpus[0] = 0;
        ncpus = 1;
        return;
    }
    for (int c = 0; c < CPU_SETSIZE && ncpus < 1024; c++)
        if (CPU_ISSET(c, &set)) cpus[ncpus++] = c;
}

static void bind_cpu(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
}
/* reader i: CPUs round-robin starting after the writer's */
static int reader_cpu(int i)
{
    return cpus[(i + 1) % ncpus];
}

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

/* ---- start-up waits ----------------------------------------------------------------- */

/* Wait until *@p flag >= @p want under the benchmark tools' wait policy (bench_wait.h: the
 * library's standalone waits, spin, yield, nap, NUMACOLL_TIMEOUT, and a look every 20 ms at
 * the @p n processes in @p pids, member @p me being the caller: member 0 is the parent, 1..N
 * the readers): print why and return non-zero when one of them has exited or the timeout
 * expired, instead of waiting forever. */
static int wait_at_least(_Atomic int *flag, int want, const pid_t *pids, int n, int me,
                         const char *what)
{
    _Atomic int32_t watched[MAX_READERS + 1];
    for (int i = 0; i < n; i++)
        atomic_init(&watched[i], (int32_t)pids[i]);
    bench_watch_t b;
    bench_watch_pids(&b, watched, n, me, what);
    bench_wait_begin(&b);
    int rc = NUMACOLL_OK;
    while (atomic_load_explicit(flag, memory_order_acquire) < want && rc == NUMACOLL_OK)
        rc = bench_wait_step(&b);
    if (rc != NUMACOLL_OK) fprintf(stderr, "numacoll-kvbench: %s\n", numacoll_last_error());
    return rc;
}

/* The parent's start-up wait for @p n readers; on failure the readers are killed. */
static int wait_for_readers(_Atomic int *ready, pid_t *pids, int n)
{
    pid_t all[MAX_READERS + 1];
    all[0] = getpid();
    memcpy(all + 1, pids, (size_t)n * sizeof *pids);
    int rc = wait_at_least(ready, n, all, n + 1, 0,
                           "the parent (member 0) waiting for the readers to attach");
    if (rc)
        for (int i = 0; i < n; i++)
            kill(pids[i], SIGKILL);
    return rc;
}

/* ---- reader process ----------------------------------------------------------------- */

static int reader_main(shm_t *sh, int idx, int mode)
{
    bind_cpu(reader_cpu(idx));
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
    if (wait_at_least(&sh->go, 1, pair, 2, 1, "a reader waiting for its parent (member 0)")) {
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

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

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
    bind_cpu(cpus[0]);
    /* ready: each reader adds 1 once attached (or failed) */
    if (wait_for_readers(&sh->ready, pids, N)) goto fail; /* the readers are killed */
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
        qsort(acq, CONC_WRITES, sizeof acq[0], cmp_u64);
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

/* ---- Get profiler ------------------------------------------------------------------------ */

#define NKEYS 100
#define SEGS 7 /* P7-P1, P2-P1, P3-P2, P4-P3, P5-P4, P6-P5, P7-P6 */

static void key_name(char *out, int i, int len)
{
    int n = snprintf(out, (size_t)len + 1, "pmix.key.%05d.", i);
    for (int j = n; j < len; j++)
        out[j] = (char)('a' + (i + j) % 26);
    out[len] = 0;
}

/* Overheads of back-to-back stamps: start->end and end->end (medians of 2 x 1001, taken
 * before and after the profiled loop, since a trapping cpuid varies over time). */
enum { OVH_K = 1001 };
static uint64_t ovh_a[2 * OVH_K], ovh_b[2 * OVH_K];
static void stamp_overhead_sample(int half)
{
    for (int i = half * OVH_K; i < (half + 1) * OVH_K; i++) {
        uint64_t s = nc_kv_stamp_start();
        uint64_t e = nc_kv_stamp_end();
        uint64_t e2 = nc_kv_stamp_end();
        ovh_a[i] = e - s;
        ovh_b[i] = e2 - e;
    }
}
static void stamp_overhead(int64_t *o_se, int64_t *o_ee)
{
    enum { K = 2 * OVH_K };
    uint64_t *a = ovh_a, *b = ovh_b;
    qsort(a, K, sizeof a[0], cmp_u64);
    qsort(b, K, sizeof b[0], cmp_u64);
    *o_se = (int64_t)a[K / 2];
    *o_ee = (int64_t)b[K / 2];
}

typedef struct prof_shm {
    _Atomic int ready;
    _Atomic int go;
    char handle[64];
    int64_t o_se[MAX_READERS], o_ee[MAX_READERS]; /* per reader */
    int32_t samples[];                            /* [reader][iter*NKEYS][SEGS] */
} prof_shm_t;

static int prof_reader(prof_shm_t *sh, int idx, int iters, int keylen)
{
    bind_cpu(reader_cpu(idx));
    numacoll_kvdb_t *db;
    if (numacoll_kvdb_attach(sh->handle, &db)) {
        fprintf(stderr, "reader %d: %s\n", idx, numacoll_last_error());
        atomic_fetch_add(&sh->ready, 1);
        return 1;
    }
    stamp_overhead_sample(0);
    atomic_fetch_add(&sh->ready, 1);
    /* go: written once by the parent when every reader is ready */
    pid_t pair[2] = {getppid(), getpid()};
    if (wait_at_least(&sh->go, 1, pair, 2, 1,
                      "a profiling reader waiting for its parent (member 0)")) {
        numacoll_kvdb_close(db);
        return 1;
    }
    char keys[NKEYS][NUMACOLL_KVDB_MAX_KEYLEN + 1];
    for (int i = 0; i < NKEYS; i++)
        key_name(keys[i], i, keylen);
    int32_t *out = sh->samples + (size_t)idx * (size_t)iters * NKEYS * SEGS;
    char buf[256];
    size_t len;
    uint64_t st[NC_KV_PROF_POINTS];
    for (int i = 0; i < NKEYS; i++) /* warm-up */
        if (numacoll_kvdb_get(db, "job.0001", 0, keys[i], buf, sizeof buf, &len)) return 2;
    for (int it = 0; it < iters; it++)
        for (int i = 0; i < NKEYS; i++) {
            if (nc_kvdb_get_profiled(db, "job.0001", 0, keys[i], buf, sizeof buf, &len, st))
                return 3;
            int32_t *o = out + ((size_t)it * NKEYS + (size_t)i) * SEGS;
            o[0] = (int32_t)(st[6] - st[0]);
            for (int s = 1; s < SEGS; s++)
                o[s] = (int32_t)(st[s] - st[s - 1]);
        }
    stamp_overhead_sample(1);
    stamp_overhead(&sh->o_se[idx], &sh->o_ee[idx]);
    numacoll_kvdb_close(db);
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int run_profile(const char *lock, int N, int iters, int keylen, FILE *csv,
                       const char *clock_name)
{
    numacoll_kvdb_params_t p = {.lock = lock, .max_readers = N};
    numacoll_kvdb_t *srv;
    if (numacoll_kvdb_create(&p, &srv)) {
        fprintf(stderr, "numacoll-kvbench: %s\n", numacoll_last_error());
        return -1;
    }
    for (int i = 0; i < NKEYS; i++) {
        char k[NUMACOLL_KVDB_MAX_KEYLEN + 1], v[32];
        key_name(k, i, keylen);
        snprintf(v, sizeof v, "value-of-key-%d", i);
        numacoll_kvdb_put(srv, "job.0001", 0, k, v, strlen(v));
    }
    if (numacoll_kvdb_commit(srv)) {
        fprintf(stderr, "numacoll-kvbench: %s\n", numacoll_last_error());
        return -1;
    }
    size_t nsamp = (size_t)N * (size_t)iters * NKEYS;
    size_t bytes = sizeof(prof_shm_t) + nsamp * SEGS * sizeof(int32_t);
    prof_shm_t *sh = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) return -1;
    snprintf(sh->handle, sizeof sh->handle, "%s", numacoll_kvdb_handle(srv));
    pid_t pids[MAX_READERS];
    fflush(stdout);
    for (int i = 0; i < N; i++) {
        pids[i] = fork();
        if (pids[i] == 0) _exit(prof_reader(sh, i, iters, keylen));
    }
    /* ready: each reader adds 1 after attaching and sampling the stamp overhead */
    if (wait_for_readers(&sh->ready, pids, N)) {
        for (int i = 0; i < N; i++)
            waitpid(pids[i], NULL, 0);
        munmap(sh, bytes);
        numacoll_kvdb_close(srv);
        return -1;
    }
    atomic_store_explicit(&sh->go, 1, memory_order_release);
    int failed = 0;
    for (int i = 0; i < N; i++) {
        int st;
        waitpid(pids[i], &st, 0);
        failed += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    }
    if (failed) {
        fprintf(stderr, "numacoll-kvbench: %d profiling reader(s) failed\n", failed);
        return -1;
    }
    /* subtract the stamps' own cost: P2-P1 holds one start->end stamp pair, every later
     * segment one end->end pair, and P7-P1 all six */
    int64_t *v = malloc(nsamp * sizeof *v);
    double mean[SEGS], med[SEGS];
    qsort(sh->o_se, (size_t)N, sizeof sh->o_se[0], cmp_i64);
    qsort(sh->o_ee, (size_t)N, sizeof sh->o_ee[0], cmp_i64);
    int64_t o_se = sh->o_se[N / 2], o_ee = sh->o_ee[N / 2];
    for (int s = 0; s < SEGS; s++) {
        int64_t ovh = s == 0 ? o_se + 5 * o_ee : s == 1 ? o_se : o_ee;
        double sum = 0;
        for (size_t i = 0; i < nsamp; i++) {
            v[i] = (int64_t)sh->samples[i * SEGS + (size_t)s] - ovh;
            sum += (double)v[i];
        }
        qsort(v, nsamp, sizeof *v, cmp_i64);
        mean[s] = sum / (double)nsamp;
        med[s] = nsamp % 2 ? (double)v[nsamp / 2]
                           : ((double)v[nsamp / 2 - 1] + (double)v[nsamp / 2]) / 2;
    }
    free(v);
    const char *unit = nc_kv_prof_clock == NC_KV_CLOCK_GETTIME ? "ns" : "cycles";
    static const char *hdr[SEGS] = {"P7-P1", "P2-P1", "P3-P2", "P4-P3", "P5-P4", "P6-P5", "P7-P6"};
    printf("\nGet profile: lock=%s readers=%d, %d keys of %d chars x %d rounds = %zu samples; "
           "in %s; clock %s (stamp overhead %lld start->end, %lld end->end %s subtracted)\n",
           lock, N, NKEYS, keylen, iters, nsamp, unit, clock_name, (long long)o_se,
           (long long)o_ee, unit);
    if (nc_kv_prof_clock == NC_KV_CLOCK_CPUID && o_ee > 1000)
        printf("note: cpuid costs %lld cycles here (it traps to a hypervisor) and varies; the "
               "subtraction is approximate: compare with --profile-clock lfence\n",
               (long long)o_ee);
    printf("%-8s", unit);
    for (int s = 0; s < SEGS; s++)
        printf(" %9s", hdr[s]);
    printf("\n%-8s", "mean");
    for (int s = 0; s < SEGS; s++)
        printf(" %9.1f", mean[s]);
    printf("\n%-8s", "median");
    for (int s = 0; s < SEGS; s++)
        printf(" %9.1f", med[s]);
    printf("\n");
    if (csv) {
        fprintf(csv, "%s,%d,mean", lock, N);
        for (int s = 0; s < SEGS; s++)
            fprintf(csv, ",%.1f", mean[s]);
        fprintf(csv, ",%s\n%s,%d,median", unit, lock, N);
        for (int s = 0; s < SEGS; s++)
            fprintf(csv, ",%.1f", med[s]);
        fprintf(csv, ",%s\n", unit);
    }
    munmap(sh, bytes);
    numacoll_kvdb_close(srv);
    return 0;
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

/* What the Get profile's points and columns are (--help and the profile output). */
static void profile_legend(FILE *f, const char *pfx)
{
    fprintf(f,
            "%sGet profile (paper 4, Table 1): each reader stamps every numacoll_kvdb_get at\n"
            "%s  P1 entry, P2 before the read lock (arguments checked, key hashed), P3 lock\n"
            "%s  taken, P4 key found, P5 value copied out, P6 lock released, P7 exit.\n"
            "%sColumns: P7-P1 the whole Get; P2-P1 entry; P3-P2 taking the read lock; P4-P3\n"
            "%s  finding the key; P5-P4 copying the value; P6-P5 releasing the lock; P7-P6\n"
            "%s  exit. In TSC cycles (--profile-clock cpuid or lfence) or ns (clock), mean and\n"
            "%s  median over all samples, the stamps' own cost subtracted.\n",
            pfx, pfx, pfx, pfx, pfx, pfx, pfx);
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
    profile_legend(f, "");
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
    get_cpus();
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
        profile_legend(stdout, "# ");
        int rc = 0;
        for (int li = 0; li < nlocks; li++)
            for (int N = fixed ? maxN : 1; N <= maxN; N++)
                if (run_profile(locks[li], N, iters, keylen, csv, clock_s)) rc = 1;
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
           ncpus, cpus[0], cpus[1 % ncpus], reps, duration);
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
                if (N + (modes[mi] != M_READ) > ncpus)
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
