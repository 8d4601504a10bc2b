/*
 * Tests of the pipelined broadcast (paper 3): the cost model, the tree shapes, and forked
 * teams broadcasting random sizes from random roots over every tree, slot/set geometry,
 * the inline, queue and CMA paths and the NUMA relay, checked byte for byte everywhere.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "coll/bcast/bcast.h"
#include "core/nc_internal.h"
#include "forkrun.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MiB (1024u * 1024u)

/* NUMACOLL_BCAST_CMA_MIN given to the whole program (tests/bcast.cmake) survives clear_env */
static char base_cma[32];

static void clear_env(void)
{
    nc_test_clear_env();
    setenv("NUMACOLL_TIMEOUT", "60", 1); /* a hang becomes an error naming the culprit */
    if (base_cma[0]) setenv("NUMACOLL_BCAST_CMA_MIN", base_cma, 1);
}

static void env_reload(void)
{
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
}

/* ---- model ------------------------------------------------------------------------- */

static void test_model(void **state)
{
    (void)state;
    nc_bcast_model_t md = nc_bcast_model_paper();
    const double t = 1e-9, two = 100 * t, ta = 10 * t, tw = 50 * t;
    assert_true(md.t == t && md.t_wo == two && md.t_a == ta && md.t_w == tw);
    const double m = 16.0 * MiB, b = 4.0 * MiB;
    /* m > b: ceil(m/b)(t_WO + t_A + f t) + ceil(m/f) t_W + m t */
    double f = 8192, s = b / f;
    double want = ceil(m / b) * (two + ta + f * t) + ceil(m / f) * tw + m * t;
    assert_true(fabs(nc_bcast_model_time(&md, m, f, s) - want) < 1e-12);
    assert_true(fabs(want - (4 * (110e-9 + 8192e-9) + 2048 * 50e-9 + m * 1e-9)) < 1e-12);
    /* one buffer: ceil(m/f)(t_WO + t_A) + ceil(m/f) t_W + 2 m t */
    want = ceil(m / f) * (two + ta) + ceil(m / f) * tw + 2 * m * t;
    assert_true(fabs(nc_bcast_model_time(&md, m, f, 1) - want) < 1e-12);
    /* m <= f: t_WO + t_W + t_A + 2 m t */
    assert_true(fabs(nc_bcast_model_time(&md, 1000, f, s) - (two + tw + ta + 2000 * t)) < 1e-15);
    /* f < m <= b: t_WO + t_A + f t + ceil(m/f) t_W + m t */
    double m2 = 3.5 * MiB;
    want = two + ta + f * t + ceil(m2 / f) * tw + m2 * t;
    assert_true(fabs(nc_bcast_model_time(&md, m2, f, s) - want) < 1e-12);
    /* f* = sqrt(b t_W / t) = sqrt(4 MiB * 50) = 14482 -> rounded up to a page: 16384 */
    size_t fs = nc_bcast_model_fragment(&md, 4 * MiB, 4096);
    assert_int_equal(fs, 16384);
    assert_int_equal(nc_bcast_model_slots(4 * MiB, fs, 2), 256);
    assert_int_equal(nc_bcast_model_slots(4096, 8192, 4), 4);
    /* f* is near the best page multiple at fixed b (the saw-tooth aside): within 5 % */
    double best = 1e9;
    for (double ff = 4096; ff <= b; ff += 4096) {
        double v = nc_bcast_model_time(&md, m, ff, floor(b / ff));
        if (v < best) best = v;
    }
    double at = nc_bcast_model_time(&md, m, (double)fs, floor(b / (double)fs));
    assert_true(at <= best * 1.05);
    /* and the overhead beyond m t is clearly worse at the extremes */
    double over = at - m * t;
    assert_true(nc_bcast_model_time(&md, m, 4096, b / 4096) - m * t > over * 1.5);
    assert_true(nc_bcast_model_time(&md, m, b / 2, 2) - m * t > over * 1.5);
}

/* ---- tree shapes ------------------------------------------------------------------- */

static int depth_of(const int *parent, int P, int r)
{
    int d = 0;
    while (parent[r] >= 0 && d <= P)
        r = parent[r], d++;
    return d;
}

static void test_tree_shapes(void **state)
{
    (void)state;
    int parent[64], nch[64];
    for (int kind = 0; kind < NC_BTREE_COUNT; kind++)
        for (int P = 1; P <= 40; P++)
            for (int k = 1; k <= 4; k++)
                for (int root = 0; root < P; root++) {
                    nc_bcast_tree_parents(kind, P, root, k, 0, NULL, parent);
                    assert_int_equal(parent[root], -1);
                    memset(nch, 0, sizeof nch);
                    int maxd = 0;
                    for (int r = 0; r < P; r++) {
                        if (r == root) continue;
                        assert_true(parent[r] >= 0 && parent[r] < P && parent[r] != r);
                        nch[parent[r]]++;
                        int d = depth_of(parent, P, r);
                        assert_true(d <= P - 1); /* reaches the root: no cycle */
                        if (d > maxd) maxd = d;
                    }
                    if (P == 1) continue;
                    if (kind == NC_BTREE_FLAT) assert_int_equal(maxd, 1);
                    if (kind == NC_BTREE_CHAIN) assert_int_equal(maxd, P - 1);
                    if (kind == NC_BTREE_KARY || kind == NC_BTREE_TOPO)
                        for (int r = 0; r < P; r++)
                            assert_true(nch[r] <= k);
                    if (kind == NC_BTREE_KNOMIAL && k == 2) {
                        int lg = 0;
                        while ((1 << lg) < P)
                            lg++;
                        assert_true(maxd <= lg);
                        assert_true(nch[root] == lg);
                    }
                }
    /* topology tree: 2 NUMA groups of 4 + a top group of their leaders */
    int groups[2 * 8];
    for (int r = 0; r < 8; r++) {
        groups[r] = r / 4;
        groups[8 + r] = (r % 4 == 0) ? 0 : -1;
    }
    for (int k = 1; k <= 4; k++)
        for (int root = 0; root < 8; root++) {
            nc_bcast_tree_parents(NC_BTREE_TOPO, 8, root, k, 2, groups, parent);
            int cross = 0;
            memset(nch, 0, sizeof nch);
            for (int r = 0; r < 8; r++) {
                if (r == root) continue;
                int d = depth_of(parent, 8, r);
                assert_true(d >= 1 && d <= 7);
                nch[parent[r]]++;
                if (parent[r] / 4 != r / 4) {
                    cross++;
                    assert_int_equal(parent[r], root); /* the other node hangs off the root */
                }
                if (k >= 3 && r / 4 == root / 4)
                    assert_int_equal(parent[r], root); /* k >= 3: flat inside the node */
            }
            assert_int_equal(cross, 1); /* data cross the interconnect once */
            for (int r = 0; r < 8; r++) /* k-ary inside groups; the root also leads its node */
                assert_true(nch[r] <= k + (r == root));
            if (k >= 3)
                for (int r = 0; r < 8; r++)
                    if (r != root) assert_true(depth_of(parent, 8, r) <= 2);
        }
}

/* ---- forked broadcasts -------------------------------------------------------------- */

typedef struct bc_args {
    int iters;
    unsigned seed;
    size_t max_small, max_mid, max_big; /* size classes */
    int big_every, mid_every;           /* one big per big_every calls, ... */
    int vary_tree;                      /* cycle through the trees per call */
    int relay;                          /* -1 default, else forced with a fake NUMA split */
    long long cma_min;                  /* per-call override (-1 = config) */
    int expect_rc;                      /* expected status of the first call */
    size_t fixed_n;                     /* nonzero: every message has this size */
    int jitter_us;                      /* > 0: each member waits 0..jitter_us at random
                                         * before a quarter of its calls (own draws) */
} bc_args_t;

static uint32_t rnd(uint32_t *x)
{
    uint32_t v = *x;
    v ^= v << 13;
    v ^= v >> 17;
    v ^= v << 5;
    return *x = v;
}

static void fill(unsigned char *p, size_t n, uint64_t key)
{
    size_t i = 0;
    uint64_t w = key * 0x9e3779b97f4a7c15ull + 1;
    for (; i + 8 <= n; i += 8) {
        w ^= w << 7;
        w ^= w >> 9;
        memcpy(p + i, &w, 8);
    }
    for (; i < n; i++)
        p[i] = (unsigned char)(key + i);
}

static int bcast_worker(nc_forkctx_t *ctx)
{
    const bc_args_t *a = ctx->arg;
    numacoll_team_t *t = ctx->team;
    int P = ctx->size, me = ctx->rank;
    size_t cap = a->max_big > a->max_mid ? a->max_big : a->max_mid;
    if (a->max_small > cap) cap = a->max_small;
    unsigned char *mem = malloc(cap + 128), *want = malloc(cap + 64);
    if (!mem || !want) return 90;
    uint32_t x = a->seed | 1;
    uint32_t y = (a->seed * 2654435761u) ^ (uint32_t)(me + 1) * 40503u; /* this member's */
    if (y == 0) y = 1;
    if (a->relay >= 0) { /* fake two NUMA nodes: ranks alternate */
        int numa[64];
        for (int r = 0; r < P; r++)
            numa[r] = r % 2;
        if (nc_bcast_debug_set_numa(t, numa) != NUMACOLL_OK) return 91;
    }
    for (int i = 0; i < a->iters; i++) {
        /* identical draws on every member */
        int root = (int)(rnd(&x) % (uint32_t)P);
        size_t n;
        if (a->big_every && i % a->big_every == a->big_every - 1)
            n = rnd(&x) % (a->max_big + 1);
        else if (a->mid_every && i % a->mid_every == a->mid_every - 1)
            n = rnd(&x) % (a->max_mid + 1);
        else
            n = rnd(&x) % (a->max_small + 1);
        if (a->fixed_n) n = a->fixed_n;
        size_t align = rnd(&x) % 64;
        int tree = a->vary_tree ? (int)(rnd(&x) % NC_BTREE_COUNT) : -1;
        int k = a->vary_tree ? 1 + (int)(rnd(&x) % 4) : 0;
        /* copy mode: streamed stores or not, 2-8 KiB split or not, rotating offsets or not
         * (-1: the team's) */
        int nt = a->vary_tree ? (int)(rnd(&x) % (NC_BCAST_SEL_MODES + 1)) - 1 : -1;
        int rot = a->vary_tree ? (int)(rnd(&x) % 3) - 1 : -1; /* rotating set offsets or not */
        int dem = a->vary_tree ? (int)(rnd(&x) % 3) - 1 : -1; /* inline cache hint or not */
        int pf = a->vary_tree ? (int)(rnd(&x) % 3) - 1 : -1;  /* inline write prefetch or not */
        unsigned char *buf = mem + align;
        uint64_t key = ((uint64_t)a->seed << 32) ^ (uint64_t)i;
        fill(want, n + 16, key);
        if (me == root)
            memcpy(buf, want, n);
        else
            memset(buf, 0xA5 ^ (i & 0xff), n);
        memset(buf + n, 0x5C, 16); /* canary: nothing may be written past the message */
        if (a->jitter_us > 0 && rnd(&y) % 4 == 0) { /* random arrival: late root or reader */
            uint64_t until = nc_now_ns() + (uint64_t)(rnd(&y) % (uint32_t)a->jitter_us) * 1000u;
            while (nc_now_ns() < until)
                ;
        }
        int rc;
        if (tree < 0 && a->relay < 0 && a->cma_min < 0) {
            rc = numacoll_bcast(t, buf, n, root);
        } else {
            nc_bcast_opts_t o = NC_BCAST_OPTS_DEFAULT;
            o.tree = tree;
            o.k = k;
            o.relay = a->relay;
            o.cma_min = a->cma_min;
            o.copy_mode = nt;
            o.rotate = rot;
            o.demote = dem;
            o.prefetch = pf;
            nc_team_op_enter(t, "bcast");
            rc = nc_bcast_run_opts(t, buf, n, root, &o);
            if (rc == NUMACOLL_OK) nc_team_op_leave(t);
        }
        if (i == 0 && a->expect_rc) {
            if (rc != a->expect_rc) {
                fprintf(stderr, "rank %d: expected %s, got %s\n", me,
                        numacoll_status_name(a->expect_rc), numacoll_status_name(rc));
                return 92;
            }
            if (me == 0) printf("expected error: %s\n", numacoll_last_error());
            break;
        }
        if (rc != NUMACOLL_OK) {
            fprintf(stderr, "rank %d: bcast %d (%zu bytes from %d) failed: %s: %s\n", me, i, n,
                    root, numacoll_status_name(rc), numacoll_last_error());
            return 93;
        }
        if (memcmp(buf, want, n) != 0) {
            size_t j = 0;
            while (buf[j] == want[j])
                j++;
            fprintf(stderr,
                    "rank %d: bcast %d (%zu bytes from %d, tree %d k %d) wrong at byte %zu\n", me,
                    i, n, root, tree, k, j);
            return 94;
        }
        for (int c = 0; c < 16; c++)
            if (buf[n + c] != 0x5C) {
                fprintf(stderr, "rank %d: bcast %d wrote past the end\n", me, i);
                return 95;
            }
    }
    free(mem);
    free(want);
    return 0;
}

/* @p worker on P forked members: every member must pass, none may time out, and no
 * segment may be left behind */
static void run_members(int P, int (*worker)(nc_forkctx_t *), void *arg, double timeout)
{
    int shm_before = nc_count_shm_files();
    nc_forkresult_t res;
    int failed = nc_forkrun(P, NC_FORK_BIND, worker, arg, 0, timeout, &res);
    assert_int_equal(res.timed_out, 0);
    assert_int_equal(failed, 0);
    /* no segment left behind; other programs may create theirs meanwhile, so a higher
     * count must persist for a second before it counts as a leak */
    int now = nc_count_shm_files();
    for (int i = 0; i < 20 && now > shm_before; i++) {
        usleep(50000);
        now = nc_count_shm_files();
    }
    assert_true(now <= shm_before);
}

static void run_team(int P, const bc_args_t *a, double timeout)
{
    run_members(P, bcast_worker, (void *)a, timeout);
}

static bc_args_t base_args(int iters, unsigned seed)
{
    bc_args_t a = {.iters = iters,
                   .seed = seed,
                   .max_small = 2048,
                   .max_mid = 300 * 1024,
                   .max_big = 4 * MiB,
                   .big_every = 0,
                   .mid_every = 8,
                   .vary_tree = 0,
                   .relay = -1,
                   .cma_min = -1,
                   .expect_rc = 0};
    return a;
}

/* Defaults, thousands of consecutive calls, random sizes and roots, P = 2..5 and 7. */
static void test_default_many(void **state)
{
    (void)state;
    clear_env();
    env_reload();
    int Ps[] = {2, 3, 4, 5, 7};
    for (int i = 0; i < 5; i++) {
        bc_args_t a = base_args(Ps[i] == 2 ? 4000 : 1000, 11u + (unsigned)i);
        a.big_every = 250;
        run_team(Ps[i], &a, 60);
    }
}

/* Every tree (and k = 1..4) chosen per call, odd P. */
static void test_every_tree(void **state)
{
    (void)state;
    clear_env();
    env_reload();
    int Ps[] = {3, 5, 7, 2};
    for (int i = 0; i < 4; i++) {
        bc_args_t a = base_args(600, 101u + (unsigned)i);
        a.vary_tree = 1;
        run_team(Ps[i], &a, 60);
    }
}

/* Queue geometry: s in {1, 2, 8, 64}, q in {1, 2, 4} (q <= s), small fragments so that
 * messages take many ops and wrap the queue many times. */
static void test_slots_sets(void **state)
{
    (void)state;
    int ss[] = {1, 2, 8, 64}, qs[] = {1, 2, 4};
    int run = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) {
            if (qs[j] > ss[i]) continue;
            clear_env();
            char v[32];
            snprintf(v, sizeof v, "%d", ss[i]);
            setenv("NUMACOLL_BCAST_SLOTS", v, 1);
            snprintf(v, sizeof v, "%d", qs[j]);
            setenv("NUMACOLL_BCAST_SETS", v, 1);
            setenv("NUMACOLL_BCAST_FRAGMENT", "4K", 1);
            setenv("NUMACOLL_BCAST_INLINE_MAX", run % 2 ? "0" : "256", 1);
            env_reload();
            bc_args_t a = base_args(250, 300u + (unsigned)run);
            a.max_mid = 200 * 1024;
            a.mid_every = 3;
            a.vary_tree = run % 2;
            run_team(run % 3 == 0 ? 3 : 2, &a, 60);
            run++;
        }
}

/* Up to 64 MiB: a few big messages through the queues and through CMA. */
static void test_big_queue_and_cma(void **state)
{
    (void)state;
    clear_env();
    setenv("NUMACOLL_BCAST_CMA_MIN", "0", 1);
    env_reload();
    bc_args_t a = base_args(40, 7);
    a.max_big = 64 * MiB;
    a.big_every = 8;
    a.mid_every = 2;
    run_team(3, &a, 60);
    clear_env();
    setenv("NUMACOLL_BCAST_CMA_MIN", "32K", 1);
    env_reload();
    a.seed = 8;
    run_team(3, &a, 60);
    a.seed = 9; /* CMA switched per call, every tree */
    a.iters = 300;
    a.big_every = 100;
    a.vary_tree = 1;
    a.cma_min = 1000;
    run_team(4, &a, 60);
}

/* ---- messages beyond 4 GiB ---------------------------------------------------------- */

/* Byte counts that overflow int and uint32 (MPI_Bcast_c's range): one broadcast of n bytes
 * through the queues and one through CMA (one process_vm_readv moves at most about 2 GiB, so
 * the receiver's loop must continue), from different roots. The pattern is a function of
 * the byte position, so nobody needs a second copy of the message to check it. */
typedef struct {
    size_t n;
} huge_args_t;

static uint64_t huge_word(size_t i, uint64_t key)
{
    uint64_t w = (uint64_t)i * 0x9e3779b97f4a7c15ull ^ key;
    return w ^ (w >> 29);
}

static int huge_worker(nc_forkctx_t *ctx)
{
    const huge_args_t *a = ctx->arg;
    size_t n = a->n, words = n / 8;
    unsigned char *buf = mmap(NULL, n + 16, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (buf == MAP_FAILED) return 90;
    for (int call = 0; call < 2; call++) {
        int root = call % ctx->size;
        uint64_t key = 0x417e0000ull + (uint64_t)call;
        uint64_t *w = (uint64_t *)buf;
        if (ctx->rank == root) {
            for (size_t i = 0; i < words; i++)
                w[i] = huge_word(i, key);
            for (size_t i = words * 8; i < n; i++)
                buf[i] = (unsigned char)(key + i);
        } else {
            memset(buf, 0xA5, n);
        }
        memset(buf + n, 0x5C, 16);
        nc_bcast_opts_t o = NC_BCAST_OPTS_DEFAULT;
        o.cma_min = call == 1 ? 1 : 0; /* 0: never CMA, 1: CMA from 1 byte */
        nc_team_op_enter(ctx->team, "bcast");
        int rc = nc_bcast_run_opts(ctx->team, buf, n, root, &o);
        if (rc != NUMACOLL_OK) {
            fprintf(stderr, "rank %d: %zu-byte bcast (%s) failed: %s: %s\n", ctx->rank, n,
                    call ? "CMA" : "queues", numacoll_status_name(rc), numacoll_last_error());
            return 91;
        }
        nc_team_op_leave(ctx->team);
        for (size_t i = 0; i < words; i++)
            if (w[i] != huge_word(i, key)) {
                fprintf(stderr, "rank %d: %zu-byte bcast (%s) wrong at byte %zu\n", ctx->rank, n,
                        call ? "CMA" : "queues", i * 8);
                return 92;
            }
        for (size_t i = words * 8; i < n; i++)
            if (buf[i] != (unsigned char)(key + i)) return 93;
        for (int c = 0; c < 16; c++)
            if (buf[n + c] != 0x5C) return 94;
        if (ctx->rank == 0)
            printf("%zu bytes (%s) from root %d: every byte right\n", n, call ? "CMA" : "queues",
                   root);
    }
    munmap(buf, n + 16);
    return 0;
}

/* MemAvailable of /proc/meminfo in bytes (0 if unknown) */
static size_t mem_available(void)
{
    long kb = nc_meminfo_kb("MemAvailable");
    return kb > 0 ? (size_t)kb * 1024 : 0;
}

static void test_beyond_4gib(void **state)
{
    (void)state;
    clear_env();
    env_reload();
    /* two members, each with the whole message, and room to spare */
    if (base_cma[0]) { /* it chooses both paths itself: once per program is enough */
        printf("skipped: test_bcast runs it (both paths)\n");
        skip();
    }
    huge_args_t a = {.n = ((size_t)4 << 30) + 4099};
    size_t avail = mem_available();
    if (avail < 3 * a.n) {
        printf("skipped: a %zu-byte broadcast needs about %zu MiB of available memory, "
               "MemAvailable is %zu MiB\n",
               a.n, 3 * a.n >> 20, avail >> 20);
        skip();
    }
    run_members(2, huge_worker, &a, 240);
}

/* Inline path only, every size 0..room, then just above it. */
static void test_inline_edges(void **state)
{
    (void)state;
    clear_env();
    setenv("NUMACOLL_BCAST_INLINE_MAX", "300", 1);
    env_reload();
    bc_args_t a = base_args(3000, 21);
    a.max_small = 400;
    a.mid_every = 0;
    run_team(3, &a, 60);
}

/* The inline path's line boundaries (the payload head shares the stamp's line, the rest
 * lies in the lines after it): every size around each line boundary and around the inline
 * limit (default 4 KiB), random roots, P = 2..8 (8 oversubscribed), random arrival delays. */
static void test_inline_lines(void **state)
{
    (void)state;
    clear_env();
    env_reload();
    size_t line = nc_line_size();
    for (int P = 2; P <= 8; P++) {
        bc_args_t a = base_args(P > 4 ? 300 : 600, 300u + (unsigned)P);
        a.max_small = 5 * line + 16; /* covers head (line - 16) and the next lines */
        a.mid_every = 5;
        a.max_mid = 4200; /* around the limit: inline up to 4096, queue above */
        a.jitter_us = P > 2 ? 20 : 5;
        run_team(P, &a, 60);
    }
    /* again with the cache hint on (NUMACOLL_BCAST_DEMOTE: lines beyond the first demoted
     * before the stamp; where the CPU has no CLDEMOTE the team turns it off again) and the
     * write prefetch off (NUMACOLL_BCAST_PREFETCH, on in the passes above) */
    setenv("NUMACOLL_BCAST_DEMOTE", "1", 1);
    setenv("NUMACOLL_BCAST_PREFETCH", "0", 1);
    env_reload();
    for (int P = 2; P <= 8; P += 3) {
        bc_args_t a = base_args(300, 400u + (unsigned)P);
        a.max_small = 5 * line + 16;
        a.mid_every = 5;
        a.max_mid = 4200; /* past the default inline limit of 4 KiB */
        a.jitter_us = P > 2 ? 20 : 5;
        run_team(P, &a, 60);
    }
    clear_env();
    env_reload();
}

/* NUMA relay with a fake two-node split, every tree. */
static void test_relay(void **state)
{
    (void)state;
    clear_env();
    setenv("NUMACOLL_BCAST_FRAGMENT", "8K", 1);
    setenv("NUMACOLL_BCAST_SLOTS", "8", 1);
    env_reload();
    for (int P = 4; P <= 7; P += 3) {
        bc_args_t a = base_args(500, 40u + (unsigned)P);
        a.relay = 1;
        a.vary_tree = 1;
        a.mid_every = 2;
        run_team(P, &a, 60);
    }
}

/* A simulated 2-package x 2-NUMA machine: the defaults pick the topology tree and the
 * relay (more than one NUMA node); every tree with the relay, random roots. */
static void test_synthetic_numa(void **state)
{
    (void)state;
    clear_env();
    setenv("NUMACOLL_TOPO_SYNTHETIC", "pack:2 numa:2 core:2 pu:1", 1);
    setenv("NUMACOLL_TOPO_MAP_BY", "numa", 1);
    setenv("NUMACOLL_BCAST_FRAGMENT", "16K", 1);
    env_reload();
    bc_args_t a = base_args(400, 77);
    a.mid_every = 3;
    run_team(6, &a, 60);
    a.seed = 78;
    a.vary_tree = 1;
    run_team(5, &a, 60);
    clear_env();
    env_reload();
}

/* Oversubscribed: 8 processes on the machine's CPUs. */
static void test_oversubscribed_p8(void **state)
{
    (void)state;
    clear_env();
    env_reload();
    bc_args_t a = base_args(400, 55);
    a.mid_every = 10;
    a.max_mid = 1 * MiB;
    run_team(8, &a, 90);
    a.seed = 56;
    a.vary_tree = 1;
    a.iters = 200;
    run_team(8, &a, 90);
}

/* ---- members that pass different sizes ------------------------------------------------ */

typedef struct mm_args {
    int iters;
    unsigned seed;
    int vary_tree; /* random trees, relay and copy modes (nc_bcast_run_opts) */
    int roots;     /* also every third call (P >= 3): one receiver passes another receiver
                    * as the root */
} mm_args_t;

/* a size from 0 (1 in 16) to 4 MiB: inline, queue of one op, queue of many ops (and CMA where
 * it is on), each class about as likely */
static size_t mm_size(uint32_t *x)
{
    if (rnd(x) % 16 == 0) return 0; /* an op without payload (buffer NULL) */
    switch (rnd(x) % 4) {
    case 0: return 1 + rnd(x) % 1024;
    case 1: return 1 + rnd(x) % 8192;
    case 2: return 1 + rnd(x) % (300 * 1024);
    default: return 1 + rnd(x) % (4 * MiB);
    }
}

/* Every third call, each receiver passes a size of its own (any path's), the others the
 * root's. The root must succeed; a receiver whose size differs must fail with ERR_ARG and
 * hold the root's first min(own, root's) bytes, its own bytes after those untouched, and
 * nothing written past its size; every later call must work as usual (the members' op
 * counts stayed equal). With `roots`, in another third of the calls one receiver passes
 * a wrong root (another receiver) and the root's size: it must fail with ERR_ARG naming
 * both roots, hold the whole message (it followed the true root), and
 * nc_bcast_last_mismatch must give it the true root; the others succeed. */
static int mm_worker(nc_forkctx_t *ctx)
{
    const mm_args_t *a = ctx->arg;
    numacoll_team_t *t = ctx->team;
    int P = ctx->size, me = ctx->rank;
    size_t cap = 4 * MiB + 64;
    unsigned char *mem = malloc(cap + 128), *want = malloc(cap);
    if (!mem || !want) return 90;
    uint32_t x = a->seed | 1;
    if (a->vary_tree) {
        int numa[64];
        for (int r = 0; r < P; r++)
            numa[r] = r % 2;
        if (nc_bcast_debug_set_numa(t, numa) != NUMACOLL_OK) return 91;
    }
    int mismatched = 0;
    for (int i = 0; i < a->iters; i++) {
        /* identical draws on every member, one size per rank */
        int root = (int)(rnd(&x) % (uint32_t)P);
        size_t sizes[64], n = mm_size(&x);
        int mis = i % 3 == 1;
        for (int r = 0; r < P; r++)
            sizes[r] = mis && r != root ? mm_size(&x) : n;
        /* the receiver that passes another receiver as the root, if any this call */
        int liar = -1, told = root;
        if (a->roots && P >= 3 && i % 3 == 2) {
            liar = (root + 1 + (int)(rnd(&x) % (uint32_t)(P - 1))) % P;
            told = (root + 1 + (int)(rnd(&x) % (uint32_t)(P - 1))) % P;
            if (told == liar) told = (told + 1) % P == root ? (told + 2) % P : (told + 1) % P;
        }
        nc_bcast_opts_t o = NC_BCAST_OPTS_DEFAULT;
        if (a->vary_tree) {
            o.tree = (int)(rnd(&x) % NC_BTREE_COUNT);
            o.k = 1 + (int)(rnd(&x) % 4);
            o.relay = (int)(rnd(&x) % 2);
            o.copy_mode = (int)(rnd(&x) % 4);
            o.demote = (int)(rnd(&x) % 3) - 1;   /* team default, off, on */
            o.prefetch = (int)(rnd(&x) % 3) - 1; /* the same */
        }
        size_t mine = sizes[me], got = mine < n ? mine : n;
        unsigned char *buf = mem + (rnd(&x) % 64);
        uint64_t key = ((uint64_t)a->seed << 32) ^ (uint64_t)i;
        fill(want, n, key);
        unsigned char old = (unsigned char)(0xA5 ^ (i & 0xff));
        if (me == root)
            memcpy(buf, want, n);
        else
            memset(buf, old, mine);
        memset(buf + mine, 0x5C, 16);
        int rc;
        int my_root = me == liar ? told : root;
        void *arg = mine ? buf : NULL;
        if (a->vary_tree) {
            nc_team_op_enter(t, "bcast");
            rc = nc_bcast_run_opts(t, arg, mine, my_root, &o);
            if (rc == NUMACOLL_OK) nc_team_op_leave(t);
        } else {
            rc = numacoll_bcast(t, arg, mine, my_root);
        }
        int expect = mine == n && me != liar ? NUMACOLL_OK : NUMACOLL_ERR_ARG;
        if (rc != expect) {
            fprintf(stderr, "rank %d: call %d (root %d sent %zu, mine %zu): expected %s, got %s: %s\n",
                    me, i, root, n, mine, numacoll_status_name(expect),
                    numacoll_status_name(rc), numacoll_last_error());
            return 92;
        }
        if (rc != NUMACOLL_OK) {
            mismatched++;
            nc_team_op_leave(t); /* the call completed on every member (the error is ours) */
            if (me == liar) {
                char want_msg[96];
                snprintf(want_msg, sizeof want_msg, "rank %d passed root %d and the root is rank %d",
                         me, told, root);
                size_t sent = 0;
                int mark = 0, true_root = -1;
                uint64_t head = 0;
                if (!strstr(numacoll_last_error(), want_msg) ||
                    !nc_bcast_last_mismatch(t, &sent, &mark, &head, &true_root) ||
                    true_root != root || sent != n) {
                    fprintf(stderr, "rank %d: call %d: root %d, told %d: %s (mismatch root %d)\n",
                            me, i, root, told, numacoll_last_error(), true_root);
                    return 99;
                }
            } else if (!strstr(numacoll_last_error(), "different sizes")) {
                fprintf(stderr, "rank %d: unexpected message: %s\n", me, numacoll_last_error());
                return 96;
            }
        }
        if (memcmp(buf, want, got) != 0) {
            size_t j = 0;
            while (buf[j] == want[j])
                j++;
            fprintf(stderr, "rank %d: call %d (root %d sent %zu, mine %zu) wrong at byte %zu\n",
                    me, i, root, n, mine, j);
            return 94;
        }
        for (size_t j = got; j < mine; j++)
            if (buf[j] != old) {
                fprintf(stderr, "rank %d: call %d (root sent %zu, mine %zu) wrote byte %zu\n", me,
                        i, n, mine, j);
                return 97;
            }
        for (int c = 0; c < 16; c++)
            if (buf[mine + c] != 0x5C) {
                fprintf(stderr, "rank %d: call %d wrote past its %zu bytes\n", me, i, mine);
                return 95;
            }
    }
    if (mismatched == 0 && a->iters > 10) return 98; /* the draws must have hit this rank */
    free(mem);
    free(want);
    return 0;
}

/* NUMACOLL_BCAST_CHECK=1: the members' arguments are compared before any data moves. In
 * one call of three (after two good ones) one member (any, the root included) passes
 * something else: itself as the root (the mistake the unchecked broadcast cannot see),
 * another rank as the root, another size, or other per-call options (a tree). Every
 * member must then fail with ERR_ARG and a message naming that member, and nobody's
 * buffer may change (receivers keep their old bytes, the root its message); every good
 * call must deliver the whole message, the hot path's sizes and the queue's, so the
 * team's state survives the refusals. */
typedef struct ck_args {
    int iters;
    unsigned seed;
} ck_args_t;

static int check_worker(nc_forkctx_t *ctx)
{
    const ck_args_t *a = ctx->arg;
    numacoll_team_t *t = ctx->team;
    int P = ctx->size, me = ctx->rank;
    size_t cap = 1 * MiB;
    unsigned char *buf = malloc(cap + 16), *want = malloc(cap);
    if (!buf || !want) return 70;
    uint32_t x = a->seed | 1;
    int refused = 0;
    for (int i = 0; i < a->iters; i++) {
        int root = (int)(rnd(&x) % (uint32_t)P);
        size_t n = rnd(&x) % 2 ? rnd(&x) % 2048 : rnd(&x) % cap;
        int bad = i % 3 == 2;
        int culprit = bad ? (int)(rnd(&x) % (uint32_t)P) : -1;
        int kind = (int)(rnd(&x) % 4); /* 0 self-root, 1 other root, 2 size, 3 options */
        if (kind == 0 && culprit == root) kind = 2;
        int my_root = root, other = (root + 1 + (int)(rnd(&x) % (uint32_t)(P - 1))) % P;
        size_t mine = n, extra = 1 + rnd(&x) % 64; /* drawn on every member alike */
        nc_bcast_opts_t o = NC_BCAST_OPTS_DEFAULT;
        if (me == culprit) {
            if (kind == 0) my_root = me;
            if (kind == 1) my_root = other;
            if (kind == 2) mine = n + extra;
            if (kind == 3) o.tree = NC_BTREE_CHAIN;
        }
        uint64_t key = ((uint64_t)a->seed << 32) ^ (uint64_t)i;
        fill(want, n, key);
        unsigned char old = (unsigned char)(0x3C ^ (i & 0xff));
        memset(buf, old, mine);
        if (me == root) memcpy(buf, want, n); /* (a root that passed more: old bytes after) */
        memset(buf + mine, 0x5C, 16);
        int rc;
        if (kind == 3 && bad) { /* everyone through the options call, one with a tree */
            nc_team_op_enter(t, "bcast");
            rc = nc_bcast_run_opts(t, buf, mine, my_root, &o);
            if (rc == NUMACOLL_OK) nc_team_op_leave(t);
        } else {
            rc = numacoll_bcast(t, buf, mine, my_root);
        }
        if (!bad) {
            if (rc != NUMACOLL_OK) {
                fprintf(stderr, "rank %d: good call %d (root %d, %zu bytes) failed: %s\n", me, i,
                        root, n, numacoll_last_error());
                return 71;
            }
            if (memcmp(buf, want, n) != 0) {
                fprintf(stderr, "rank %d: good call %d: wrong data\n", me, i);
                return 72;
            }
        } else {
            char name[64];
            snprintf(name, sizeof name, "rank %d passed", culprit);
            if (rc != NUMACOLL_ERR_ARG || !strstr(numacoll_last_error(), name) ||
                !strstr(numacoll_last_error(), "NUMACOLL_BCAST_CHECK")) {
                fprintf(stderr, "rank %d: bad call %d (kind %d by rank %d): %s: %s\n", me, i,
                        kind, culprit, numacoll_status_name(rc), numacoll_last_error());
                return 73;
            }
            nc_team_op_leave(t);
            refused++;
            size_t sent = 0;
            int mark = 0, mroot = -1;
            uint64_t head = 0;
            /* the mismatch record: another root iff roots differed (the MPI error class) */
            if (!nc_bcast_last_mismatch(t, &sent, &mark, &head, &mroot) || mark ||
                (kind <= 1) != (mroot != my_root)) {
                fprintf(stderr, "rank %d: bad call %d (kind %d): record root %d, mine %d\n", me,
                        i, kind, mroot, my_root);
                return 74;
            }
            for (size_t j = 0; j < mine; j++)
                if (buf[j] != (me == root && j < n ? want[j] : old)) {
                    fprintf(stderr, "rank %d: refused call %d changed byte %zu\n", me, i, j);
                    return 75;
                }
        }
        for (int c = 0; c < 16; c++)
            if (buf[mine + c] != 0x5C) return 76;
    }
    free(buf);
    free(want);
    return refused == a->iters / 3 ? 0 : 77;
}

/* Rank 1 alone turns the check on: the broadcast state is refused on every member with
 * ERR_CONFIG naming the setting (nobody waits in a barrier the others never enter). */
static int check_disagree_worker(nc_forkctx_t *ctx)
{
    if (ctx->rank == 1) {
        setenv("NUMACOLL_BCAST_CHECK", "1", 1);
        if (numacoll_config_reload() != NUMACOLL_OK) return 60;
    }
    char c = 7;
    int rc = numacoll_bcast(ctx->team, &c, 1, 0);
    const char *e = numacoll_last_error();
    if (rc != NUMACOLL_ERR_CONFIG || (!strstr(e, "check 0/1") && !strstr(e, "check 1/0"))) {
        fprintf(stderr, "rank %d: %s: %s\n", ctx->rank, numacoll_status_name(rc),
                numacoll_last_error());
        return 61;
    }
    return 0;
}

static void test_check(void **state)
{
    (void)state;
    clear_env();
    setenv("NUMACOLL_BCAST_CHECK", "1", 1);
    env_reload();
    ck_args_t a = {.iters = 120, .seed = 931};
    run_members(2, check_worker, &a, 120);
    a.seed = 932;
    run_members(3, check_worker, &a, 120);
    a.seed = 933, a.iters = 60;
    run_members(6, check_worker, &a, 120);
    /* every member must agree on the check: a team where one member checks is refused */
    clear_env();
    env_reload();
    run_members(3, check_disagree_worker, NULL, 60);
}

/* Marked messages (nc_bcast_opts_t.mark, the MPI layer's header of a broadcast over
 * 2 GiB): a marked 8-byte message against unmarked receivers of 8, 100 and 100000 bytes
 * (the hot inline path, the general one, the queue path), then an unmarked one of 8 bytes
 * against marked receivers. A receiver whose mark differs fails with ERR_ARG and
 * nc_bcast_last_mismatch tells it the root's size, mark and first 8 bytes (once); those
 * whose mark matches succeed; a matching broadcast follows each. */
static int mark_worker(nc_forkctx_t *ctx)
{
    numacoll_team_t *t = ctx->team;
    int me = ctx->rank;
    static char buf[100000];
    const size_t mine_sizes[] = {8, 100, 100000};
    for (int warm = 0; warm < 2; warm++) /* cache the hot path's root */
        if (numacoll_bcast(t, buf, 8, 0) != NUMACOLL_OK) return 80;
    for (int c = 0; c < 4; c++) {
        int root_mark = c < 3; /* cases 0-2: a marked root; 3: marked receivers */
        size_t mine = me == 0 || c == 3 ? 8 : mine_sizes[c];
        int my_mark = me == 0 ? root_mark : c == 3;
        uint64_t val = 0x1122334455667788ull + (uint64_t)c;
        memset(buf, 0, sizeof buf);
        if (me == 0) memcpy(buf, &val, 8);
        nc_bcast_opts_t o = NC_BCAST_OPTS_DEFAULT;
        o.mark = my_mark;
        nc_team_op_enter(t, "bcast");
        int rc = nc_bcast_run_opts(t, buf, mine, 0, &o);
        nc_team_op_leave(t);
        size_t sent = 0;
        int mark = -1;
        uint64_t head = 0;
        int mm = nc_bcast_last_mismatch(t, &sent, &mark, &head, NULL);
        int differ = me != 0 && my_mark != root_mark;
        if (differ) {
            if (rc != NUMACOLL_ERR_ARG || !mm || sent != 8 || mark != root_mark || head != val) {
                fprintf(stderr, "rank %d case %d: rc %s, mismatch %d (sent %zu, mark %d, head %llx)\n",
                        me, c, numacoll_status_name(rc), mm, sent, mark, (unsigned long long)head);
                return 81;
            }
            if (nc_bcast_last_mismatch(t, &sent, &mark, &head, NULL)) return 82; /* once */
        } else if (rc != NUMACOLL_OK || mm) {
            fprintf(stderr, "rank %d case %d: rc %s, mismatch %d\n", me, c,
                    numacoll_status_name(rc), mm);
            return 83;
        }
        if (me != 0 && memcmp(buf, &val, 8) != 0) return 84; /* min(8, mine) bytes */
        uint32_t after = me == 0 ? 0xC0FFEEu + (uint32_t)c : 0;
        if (numacoll_bcast(t, &after, sizeof after, 0) != NUMACOLL_OK ||
            after != 0xC0FFEEu + (uint32_t)c)
            return 85;
    }
    nc_bcast_opts_t o = NC_BCAST_OPTS_DEFAULT;
    o.mark = 1;
    /* a marked message must be inline: an error on every member, before any op */
    if (nc_bcast_run_opts(t, buf, sizeof buf, 0, &o) != NUMACOLL_ERR_ARG) return 86;
    return 0;
}

static void test_marked(void **state)
{
    (void)state;
    clear_env();
    env_reload();
    run_members(2, mark_worker, NULL, 60);
    run_members(3, mark_worker, NULL, 60);
}

/* Members that pass different sizes (an erroneous program) get an error, not a hang or a
 * later message: a receiver follows the root's path and ops whatever its own size chose
 * (inline, queue, CMA under test_bcast_cma), keeps what fits its buffer, and the next
 * broadcasts work. The default call (with its hot path) at P = 2, 3 and oversubscribed 5;
 * every tree, the relay (a fake NUMA split) and the copy modes at P = 4. */
static void test_size_mismatch(void **state)
{
    (void)state;
    clear_env();
    env_reload();
    mm_args_t a = {.iters = 300, .seed = 901};
    run_members(2, mm_worker, &a, 120);
    a.seed = 902, a.iters = 150;
    run_members(3, mm_worker, &a, 120);
    a.seed = 903, a.iters = 60;
    run_members(5, mm_worker, &a, 120);
    a.seed = 904, a.iters = 150, a.vary_tree = 1;
    run_members(4, mm_worker, &a, 120);
}

/* A receiver that passes another receiver as the root (an erroneous program) gets an
 * error naming both, not a hang or another rank's data: the root's notifications carry
 * the root, so it follows the true root's tree and data. Sizes differ in other calls. */
static void test_root_mismatch(void **state)
{
    (void)state;
    clear_env();
    env_reload();
    mm_args_t a = {.iters = 150, .seed = 911, .roots = 1};
    run_members(3, mm_worker, &a, 120);
    a.seed = 912, a.iters = 60;
    run_members(5, mm_worker, &a, 120);
    a.seed = 913, a.iters = 150, a.vary_tree = 1;
    run_members(4, mm_worker, &a, 120);
}

/* The copy-mode selector learns from the receivers' reports: root 0 broadcasts the sizes of
 * a sel_args_t in turn with a barrier between calls, as a benchmark does. Each receiver
 * checks every byte; afterwards the root must hold, for every size's class, samples of each
 * candidate mode (all four from STREAM_OUT_MIN = 256 KiB on, plain and streamed root stores
 * from STREAM_MIN = 16 KiB) and none of the others, at least 3 of the one it uses (each mode
 * is run once first, those within 2x of the best twice more; a sample exists only if every
 * receiver's report of that run arrived and carried the run's tag and its number of
 * measured calls: 1 at 256 KiB, 16 at 16 KiB, 4 at 64 KiB), no run lost to a mixed count
 * (one root, calls apart: each run's calls are its own), finite positive estimates, and
 * use a candidate with no estimate below NC_BCAST_SEL_SWITCH times its own. */
typedef struct {
    size_t sizes[2];
    unsigned cands[2]; /* the candidate modes of each size (bit m: mode m) */
    int nsizes, iters;
    int procs, rotate; /* members; rotate: the root of call i is i mod procs */
} sel_args_t;

static int sel_worker(nc_forkctx_t *ctx)
{
    numacoll_team_t *t = ctx->team;
    const sel_args_t *a = ctx->arg;
    size_t max = a->sizes[0] > a->sizes[a->nsizes - 1] ? a->sizes[0] : a->sizes[a->nsizes - 1];
    unsigned char *buf = malloc(max), *want = malloc(max + 16);
    if (!buf || !want) return 90;
    /* a copy mode out of range is an error on every member, before anything moves */
    for (int bad = 0; bad < 2; bad++) {
        nc_bcast_opts_t o = NC_BCAST_OPTS_DEFAULT;
        o.copy_mode = bad ? NC_BCAST_SEL_MODES : -2;
        if (nc_bcast_run_opts(t, buf, a->sizes[0], 0, &o) != NUMACOLL_ERR_ARG) return 89;
        if (!strstr(numacoll_last_error(), "option copy_mode")) return 89;
    }
    for (int i = 0; i < a->iters; i++) {
        size_t n = a->sizes[i % a->nsizes];
        int root = a->rotate ? i % ctx->size : 0;
        fill(want, n, 0x5e1ull + (uint64_t)i);
        if (ctx->rank == root)
            memcpy(buf, want, n);
        else
            memset(buf, 0, n);
        if (numacoll_bcast(t, buf, n, root) != NUMACOLL_OK) return 91;
        if (memcmp(buf, want, n) != 0) return 92;
        if (numacoll_barrier(t) != NUMACOLL_OK) return 93;
    }
    int rc = 0;
    for (int j = 0; j < a->nsizes && (ctx->rank == 0 || a->rotate); j++) {
        size_t n = a->sizes[j];
        uint32_t cnt[NC_BCAST_SEL_MODES];
        double est[NC_BCAST_SEL_MODES];
        int best, adapt;
        if (nc_bcast_debug_sel(t, n, cnt, est, &best, &adapt) != NUMACOLL_OK) return 94;
        printf("selector of rank %d, %zu bytes: adapt %d, best mode %d; mode: samples/estimate "
               "(ns/B) of each mode with samples:",
               ctx->rank, n, adapt, best);
        for (int m = 0; m < NC_BCAST_SEL_MODES; m++)
            if (cnt[m]) printf(" %d: %u/%.3f", m, cnt[m], est[m]);
        printf("; runs lost (all classes) %llu\n", (unsigned long long)nc_bcast_debug_sel_lost(t));
        if (!adapt) {
            printf("selection is off (oversubscribed team): nothing to check\n");
            continue;
        }
        if (nc_bcast_debug_sel_lost(t) != 0) rc = 98; /* a receiver's sum mixed two runs */
        if (!(a->cands[j] >> best & 1)) rc = 99; /* not a candidate */
        for (int m = 0; m < NC_BCAST_SEL_MODES; m++) {
            if (!(a->cands[j] >> m & 1)) {
                if (cnt[m]) rc = 99; /* a mode that is not a candidate was measured */
                continue;
            }
            if (cnt[m] < 1 || cnt[best] < 3) rc = 95;     /* reports lost */
            if (!(est[m] > 0 && est[m] < 100)) rc = 96;   /* nonsense times */
            if (cnt[best] && est[m] < NC_BCAST_SEL_SWITCH * est[best])
                rc = 97; /* not using the best (or one within the switching margin) */
        }
    }
    free(buf);
    free(want);
    return rc;
}

static void run_sel(const sel_args_t *a)
{
    clear_env();
    setenv("NUMACOLL_BCAST_CMA_MIN", "0", 1); /* the queue path (test_bcast_cma's base) */
    if (a->procs > 2) { /* np > CPUs here: selection and STREAM_MIN's 16 KiB asked for */
        setenv("NUMACOLL_BCAST_ADAPT_OVERSUB", "1", 1);
        setenv("NUMACOLL_BCAST_STREAM_MIN", "16K", 1);
    }
    env_reload();
    nc_forkresult_t res;
    int failed = nc_forkrun(a->procs, NC_FORK_BIND, sel_worker, (void *)a, 0, 60, &res);
    assert_int_equal(res.timed_out, 0);
    assert_int_equal(failed, 0);
}

static void test_copy_mode_selection(void **state)
{
    (void)state;
    sel_args_t a = {
        .sizes = {256 * 1024}, .cands = {0xf}, .nsizes = 1, .iters = 600, .procs = 2};
    run_sel(&a);
}

/* Samples of several calls each, and two classes whose runs take turns (one run open at a
 * time: the receivers keep one sum) */
static void test_copy_mode_selection_runs(void **state)
{
    (void)state;
    sel_args_t a = {.sizes = {16 * 1024, 64 * 1024}, .cands = {0x303, 0x3}, .nsizes = 2,
                    .iters = 12000, .procs = 2};
    run_sel(&a);
}

/* 2-8 KiB: two halves (the queue's default there) or the model's one fragment (mode bit 2),
 * each at rotating offsets or not (bit 3), 8 KiB and 6000 bytes (two classes) alternating;
 * no streamed stores below STREAM_MIN. On the AMD VM the one fragment was 24 % faster at
 * 8 KiB in one regime, no rotation 13 % faster in the other; on the Intel VM the halves 30 %. */
static void test_copy_mode_selection_split(void **state)
{
    (void)state;
    sel_args_t a = {.sizes = {8192, 6000}, .cands = {0x1111, 0x1111}, .nsizes = 2,
                    .iters = 32000, .procs = 2};
    run_sel(&a);
}

/* Three roots taking turns, each measuring its own runs: every receiver keeps a sum and a
 * report word per root, so no root's run is voided by another's (with one sum per receiver,
 * each root's first measured call restarted the others' sums). Three processes are more
 * than this VM's CPUs: NUMACOLL_BCAST_ADAPT_OVERSUB turns selection on for the team, and
 * NUMACOLL_BCAST_STREAM_MIN set to its default makes 16 KiB a selected size there too. */
static void test_copy_mode_selection_roots(void **state)
{
    (void)state;
    sel_args_t a = {.sizes = {16 * 1024}, .cands = {0x3}, .nsizes = 1, .iters = 3000,
                    .procs = 3, .rotate = 1}; /* 16 measured calls a run */
    run_sel(&a);
}

/* The model's constants behind f and s: configured, measured (rank 0's on every member) or
 * the fallback of an oversubscribed team; f and s follow the model from them. */
typedef struct {
    int want_t, want_tw; /* expected t_measured / tw_measured (-1: measured, or the fallback
                          * if the team turns out oversubscribed on this machine) */
    double t, tw;        /* expected values in seconds (sources 0 and 2) */
    int mismatch;        /* rank 1 alone sets NUMACOLL_BCAST_MODEL_TW: an error on all */
} model_args_t;

static int model_worker(nc_forkctx_t *ctx)
{
    const model_args_t *a = ctx->arg;
    numacoll_team_t *t = ctx->team;
    char msg[100];
    memset(msg, ctx->rank == 0 ? 7 : 0, sizeof msg);
    if (a->mismatch) {
        if (ctx->rank == 1) {
            setenv("NUMACOLL_BCAST_MODEL_TW", "500", 1);
            if (numacoll_config_reload() != NUMACOLL_OK) return 89;
        }
        int rc = numacoll_bcast(t, msg, sizeof msg, 0);
        if (rc != NUMACOLL_ERR_CONFIG || !strstr(numacoll_last_error(), "differ")) return 79;
        return 0;
    }
    if (numacoll_bcast(t, msg, sizeof msg, 0) != NUMACOLL_OK || msg[99] != 7) return 80;
    nc_bcast_info_t in;
    if (nc_bcast_info(t, &in) != NUMACOLL_OK) return 81;
    int meas = t->oversubscribed ? 2 : 1;
    int want_t = a->want_t >= 0 ? a->want_t : meas, want_tw = a->want_tw >= 0 ? a->want_tw : meas;
    if (in.t_measured != want_t || in.tw_measured != want_tw) return 82;
    double tt = in.model.t, tw = in.model.t_w;
    if (want_t != 1 && fabs(tt - a->t) > 1e-15) return 83;
    if (want_tw != 1 && fabs(tw - a->tw) > 1e-12) return 83;
    if (!(tt > 0 && tt < 1e-6 && tw > 0 && tw < 1)) return 84;
    if (fabs(in.model.t_wo - 2 * tw) > 1e-15 || fabs(in.model.t_a - 0.2 * tw) > 1e-15) return 85;
    /* every member holds rank 0's constants */
    double r0[2] = {tt, tw};
    if (numacoll_bcast(t, r0, sizeof r0, 0) != NUMACOLL_OK) return 86;
    if (r0[0] != tt || r0[1] != tw) return 87;
    /* the geometry is the model's (auto budget: 4 MiB, oversubscribed 8 MiB; q = 2;
     * /dev/shm large enough here) */
    size_t budget = (t->oversubscribed ? 8 : 4) * MiB;
    size_t f = nc_bcast_model_fragment(&in.model, budget, nc_page_size());
    if (in.fragment_bytes != f || in.slots != nc_bcast_model_slots(budget, f, 4)) return 88;
    if (ctx->rank == 0)
        printf("model: t = %.4f ns/byte (source %d), t_W = %.1f ns (source %d) -> f = %zu, "
               "s = %zu\n",
               tt * 1e9, want_t, tw * 1e9, want_tw, in.fragment_bytes, in.slots);
    return 0;
}

/* model_worker on P forked members: every member must pass, none may time out */
static void run_model(int P, model_args_t *a)
{
    nc_forkresult_t res;
    assert_int_equal(nc_forkrun(P, NC_FORK_BIND, model_worker, a, 0, 60, &res), 0);
    assert_int_equal(res.timed_out, 0);
}

static void test_model_constants(void **state)
{
    (void)state;
    clear_env(); /* configured: f = sqrt(4 MiB * 1 us / 0.25 ns) = 129528 -> 128 KiB, s = 32 */
    setenv("NUMACOLL_BCAST_MODEL_T", "0.25", 1);
    setenv("NUMACOLL_BCAST_MODEL_TW", "1000", 1);
    env_reload();
    model_args_t cfg = {.want_t = 0, .want_tw = 0, .t = 0.25e-9, .tw = 1e-6};
    run_model(2, &cfg);
    assert_int_equal(nc_bcast_model_fragment(&(nc_bcast_model_t){.t = 0.25e-9, .t_w = 1e-6},
                                             4 * MiB, 4096),
                     131072);
    clear_env(); /* measured, at P = 2 and 3 */
    env_reload();
    model_args_t meas = {.want_t = -1, .want_tw = -1, .t = 1e-10, .tw = 2e-7};
    for (int P = 2; P <= 3; P++)
        run_model(P, &meas);
    clear_env(); /* oversubscribed: the fallback constants, t_W alone configured */
    setenv("NUMACOLL_OVERSUBSCRIBED", "yes", 1);
    setenv("NUMACOLL_BCAST_MODEL_TW", "300", 1);
    env_reload();
    model_args_t over = {.want_t = 2, .want_tw = 0, .t = 1e-10, .tw = 3e-7};
    run_model(3, &over);
    clear_env(); /* one member configured differently: an error on every member, no hang */
    env_reload();
    model_args_t mis = {.mismatch = 1};
    run_model(3, &mis);
    clear_env();
    env_reload();
}

/* Queue memory at first use (NUMACOLL_BCAST_POPULATE): a root whose queue set cannot get
 * its memory (simulated: the next populate fails) fails that call on every member with
 * NUMACOLL_ERR_UNSUPPORTED, at the message's first op or in the middle of a message, and
 * the team goes on working; with `creation` nothing is populated later, so the injected
 * failure is never reached. */
typedef struct {
    int creation; /* NUMACOLL_BCAST_POPULATE=creation */
} pop_args_t;

static int pop_worker(nc_forkctx_t *ctx)
{
    const pop_args_t *a = ctx->arg;
    numacoll_team_t *t = ctx->team;
    int me = ctx->rank, P = ctx->size;
    size_t big = 3 * MiB; /* more than one set of the default 4 MiB queue: two ops */
    unsigned char *buf = malloc(big), *want = malloc(big);
    if (!buf || !want) return 70;
    struct {
        int root;
        size_t n;
        int fail; /* the root's fail-th populate from now fails (0: none) */
        int fails_here;
    } steps[] = {
        {0, 100, 0, 0},                /* inline: sets the team up, no queue touched */
        {1, 100 * 1024, 1, 1},         /* root 1's first queue message: its set 0 fails */
        {1, 100 * 1024, 0, 0},         /* and is populated on the next try */
        {1, big, 0, 0},                /* set 1 as well */
        {2, 64 * 1024, 0, 0},          /* root 2: set 0 */
        {2, big, 2, 1},                /* its second op (the other set) fails */
        {2, big, 0, 0},                /* all fine again */
        {P - 1, 200 * 1024, 0, 0},     /* another root, after all that */
    };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        int root = steps[i].root % P;
        size_t n = steps[i].n;
        fill(want, n, 1000 + i);
        if (me == root) {
            memcpy(buf, want, n);
            if (steps[i].fail) nc_seg_debug_fail_populate(steps[i].fail);
        } else {
            memset(buf, 0x33, n);
        }
        int rc = numacoll_bcast(t, buf, n, root);
        int expect = steps[i].fails_here && !a->creation ? NUMACOLL_ERR_UNSUPPORTED : NUMACOLL_OK;
        if (me == root) nc_seg_debug_fail_populate(0);
        if (rc != expect) {
            fprintf(stderr, "rank %d, step %zu: expected %s, got %s (%s)\n", me, i,
                    numacoll_status_name(expect), numacoll_status_name(rc), numacoll_last_error());
            return 71;
        }
        if (rc != NUMACOLL_OK) {
            const char *m = numacoll_last_error();
            if (!strstr(m, "could not get the memory of its queue") ||
                (me == root && !strstr(m, "cannot allocate"))) {
                fprintf(stderr, "rank %d, step %zu: message: %s\n", me, i, m);
                return 72;
            }
            if (me == 0 && i == 1) printf("expected error: %s\n", m);
            continue;
        }
        if (memcmp(buf, want, n) != 0) {
            fprintf(stderr, "rank %d, step %zu: wrong content\n", me, i);
            return 73;
        }
    }
    free(buf);
    free(want);
    return 0;
}

static void test_populate_first_use(void **state)
{
    (void)state;
    for (int creation = 0; creation < 2; creation++) {
        clear_env();
        setenv("NUMACOLL_BCAST_CMA_MIN", "0", 1); /* the queues, not CMA (test_bcast_cma) */
        if (creation) setenv("NUMACOLL_BCAST_POPULATE", "creation", 1);
        env_reload();
        pop_args_t a = {.creation = creation};
        int Ps[] = {2, 4};
        for (int i = 0; i < 2; i++)
            run_members(Ps[i], pop_worker, &a, 60);
    }
    clear_env();
    setenv("NUMACOLL_BCAST_POPULATE", "lazy", 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_ERR_CONFIG);
    assert_non_null(strstr(numacoll_last_error(), "allowed: first-use, creation"));
    clear_env();
    env_reload();
}

/* Bad geometry fails on every member with a message, no hang. */
static void test_bad_config(void **state)
{
    (void)state;
    clear_env();
    setenv("NUMACOLL_BCAST_SLOTS", "2", 1);
    setenv("NUMACOLL_BCAST_SETS", "4", 1);
    env_reload();
    bc_args_t a = base_args(1, 3);
    a.fixed_n = 100; /* size 0 would not even create the state */
    a.expect_rc = NUMACOLL_ERR_CONFIG;
    run_team(3, &a, 30);
    clear_env();
    setenv("NUMACOLL_BCAST_TREE", "binary", 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_ERR_CONFIG);
    assert_non_null(strstr(numacoll_last_error(), "kary"));
    clear_env();
    env_reload();
}

int main(void)
{
    const char *cma = getenv("NUMACOLL_BCAST_CMA_MIN");
    if (cma) snprintf(base_cma, sizeof base_cma, "%s", cma);
    /* NC_TEST_FILTER=test_name (cmocka's wildcards) runs only the matching tests */
    if (getenv("NC_TEST_FILTER")) cmocka_set_test_filter(getenv("NC_TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model),
        cmocka_unit_test(test_model_constants),
        cmocka_unit_test(test_tree_shapes),
        cmocka_unit_test(test_default_many),
        cmocka_unit_test(test_every_tree),
        cmocka_unit_test(test_slots_sets),
        cmocka_unit_test(test_big_queue_and_cma),
        cmocka_unit_test(test_inline_edges),
        cmocka_unit_test(test_inline_lines),
        cmocka_unit_test(test_relay),
        cmocka_unit_test(test_synthetic_numa),
        cmocka_unit_test(test_oversubscribed_p8),
        cmocka_unit_test(test_size_mismatch),
        cmocka_unit_test(test_root_mismatch),
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_marked),
        cmocka_unit_test(test_copy_mode_selection),
        cmocka_unit_test(test_copy_mode_selection_runs),
        cmocka_unit_test(test_copy_mode_selection_split),
        cmocka_unit_test(test_copy_mode_selection_roots),
        cmocka_unit_test(test_bad_config),
        cmocka_unit_test(test_populate_first_use),
        cmocka_unit_test(test_beyond_4gib),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
