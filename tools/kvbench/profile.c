/*
 * numacoll-kvbench --profile-get: the Get profiler (paper 4, Table 1). Readers attached to
 * a store of NKEYS keys stamp seven points of every numacoll_kvdb_get; the parent reports
 * the mean and median of each segment with the stamps' own cost subtracted.
 */
#include "kvbench.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

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
    qsort(a, K, sizeof a[0], kvb_cmp_u64);
    qsort(b, K, sizeof b[0], kvb_cmp_u64);
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
    kvb_bind_cpu(kvb_reader_cpu(idx));
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
    if (kvb_wait_at_least(&sh->go, 1, pair, 2, 1,
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

int kvb_run_profile(const char *lock, int N, int iters, int keylen, FILE *csv,
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
    if (kvb_wait_for_readers(&sh->ready, pids, N)) {
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

/* What the Get profile's points and columns are (--help and the profile output). */
void kvb_profile_legend(FILE *f, const char *pfx)
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

