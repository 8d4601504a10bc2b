/*
 * Tests of the pipelined broadcast (paper 3): the cost model, the tree shapes, and forked
 * teams broadcasting random sizes from random roots over every tree, slot/set geometry,
 * the inline, queue and CMA paths and the NUMA relay, checked byte for byte everywhere.
 * One program with two more files (tests/bcast.cmake): bcast/mismatch.c (members that
 * pass different sizes, roots or marks; NUMACOLL_BCAST_CHECK) and bcast/state.c (the
 * copy-mode selector, the model's constants, the queue memory at first use).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bcast/bcast_test.h"
#include "coll/bcast/bcast.h"
#include "core/nc_internal.h"
#include "forkrun.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* NUMACOLL_BCAST_CMA_MIN given to the whole program (tests/bcast.cmake) survives clear_env */
static char base_cma[32];

void clear_env(void)
{
    nc_test_clear_env();
    setenv("NUMACOLL_TIMEOUT", "60", 1); /* a hang becomes an error naming the culprit */
    if (base_cma[0]) setenv("NUMACOLL_BCAST_CMA_MIN", base_cma, 1);
}

void env_reload(void)
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

uint32_t rnd(uint32_t *x)
{
    uint32_t v = *x;
    v ^= v << 13;
    v ^= v >> 17;
    v ^= v << 5;
    return *x = v;
}

void fill(unsigned char *p, size_t n, uint64_t key)
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
void run_members(int P, int (*worker)(nc_forkctx_t *), void *arg, double timeout)
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
