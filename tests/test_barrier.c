/*
 * Multi-process tests of every registered barrier algorithm (forked processes).
 *
 * The barrier property is checked with a shared epoch array: before barrier i each rank
 * stores i in its slot; after barrier i it checks that every slot holds i or i + 1 (i:
 * everyone arrived at barrier i before anyone left it; not more than i + 1: nobody can be
 * past barrier i + 1, which needs us). Random delays and yields vary the arrival order.
 *
 * Each run does its iteration count or stops early, after at least MIN_ITERS, once it has
 * taken RUN_BUDGET_NS: on a loaded machine (oversubscribed runs yield to other jobs) the
 * suite does less work instead of running into its time limit. The stop is agreed through
 * the shared area: rank 0 stores the last iteration, two barriers ahead, which every rank
 * has seen by then.
 *
 * Usage: test_barrier [ALGORITHM...]  (default: every registered algorithm)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/nc_internal.h"
#include "forkrun.h"

#include <stdlib.h>
#include <string.h>

#define SLOT 16 /* uint64 per epoch slot: 128 bytes, one slot per line */
#define MIN_ITERS 300
#define RUN_BUDGET_NS 1000000000ull /* per algorithm and process count */

typedef struct bar_args {
    const char *alg; /* NULL = numacoll_barrier (the team's default); "*" = rotate all */
    int iters;
    unsigned max_delay_ns;
} bar_args_t;

static int check_epochs(nc_forkctx_t *c, _Atomic uint64_t *ep, uint64_t i, const char *alg)
{
    for (int q = 0; q < c->size; q++) {
        uint64_t v = atomic_load_explicit(&ep[q * SLOT], memory_order_relaxed);
        if (v < i || v > i + 1) {
            fprintf(stderr,
                    "barrier property violated (%s, P=%d): rank %d after barrier %llu sees "
                    "rank %d at %llu (allowed %llu or %llu)\n",
                    alg, c->size, c->rank, (unsigned long long)i, q, (unsigned long long)v,
                    (unsigned long long)i, (unsigned long long)(i + 1));
            return 11;
        }
    }
    return 0;
}

static int bar_child(nc_forkctx_t *c)
{
    const bar_args_t *a = c->arg;
    _Atomic uint64_t *ep = c->shared;
    unsigned seed = 0x9e3779b9u ^ (unsigned)(c->rank * 7919 + 17);
    int nalg;
    const numacoll_algorithm_info_t *algs = numacoll_barrier_algorithms(&nalg);
    /* the early stop: the slot after the P epoch slots; 0 = run all iterations */
    _Atomic uint64_t *stop_at = &ep[c->size * SLOT];
    uint64_t t0 = nc_now_ns();
    for (int i = 1; i <= a->iters; i++) {
        nc_random_delay(&seed, 0);
        unsigned r = seed;
        if ((r & 7) == 0) nc_random_delay(&seed, a->max_delay_ns);
        if ((r & 0x1f0) == 0x10) sched_yield();
        atomic_store_explicit(&ep[c->rank * SLOT], (uint64_t)i, memory_order_relaxed);
        const char *alg = a->alg;
        int rc;
        if (!alg)
            rc = numacoll_barrier(c->team);
        else {
            if (strcmp(alg, "*") == 0) alg = algs[i % nalg].name;
            rc = numacoll_barrier_with(c->team, alg);
        }
        if (rc) {
            fprintf(stderr, "rank %d: barrier %d (%s) failed: %s: %s\n", c->rank, i,
                    alg ? alg : "default", numacoll_status_name(rc), numacoll_last_error());
            return 10;
        }
        rc = check_epochs(c, ep, (uint64_t)i, alg ? alg : "default");
        if (rc) return rc;
        /* rank 0 writes it between barriers i and i + 1; the others read it after barrier
         * i (early: a value > i) or later. Relaxed: barrier i + 1 orders the store before
         * every read after it, and the value names barrier i + 2, which nobody has passed */
        uint64_t stop = atomic_load_explicit(stop_at, memory_order_relaxed);
        if (stop && (uint64_t)i >= stop) break;
        if (c->rank == 0 && !stop && i >= MIN_ITERS && nc_now_ns() - t0 > RUN_BUDGET_NS)
            atomic_store_explicit(stop_at, (uint64_t)i + 2, memory_order_relaxed);
    }
    return 0;
}

static int iters_for(int P)
{
    const char *e = getenv("NC_TEST_BARRIER_ITERS"); /* test-only knob (not NUMACOLL_*) */
    int base = e ? atoi(e) : 10000;
    if (P >= 16) return base / 4 > 0 ? base / 4 : 1;
    return base;
}

static void run_alg(const char *alg, int P, int iters)
{
    bar_args_t a = {.alg = alg, .iters = iters, .max_delay_ns = P <= 2 ? 3000 : 1000};
    nc_forkresult_t res;
    int flags = (P % 2 == 0) ? NC_FORK_BIND : 0; /* bound and unbound placements */
    int failed = nc_forkrun(P, flags, bar_child, &a, (size_t)(P + 1) * SLOT * 8, 120, &res);
    if (failed)
        fprintf(stderr, "%s with P=%d: %d process(es) failed%s (rank 0 exit %d)\n",
                alg ? alg : "default", P, failed, res.timed_out ? " (timed out)" : "",
                res.exit_code[0]);
    assert_int_equal(failed, 0);
}

static const int sizes[] = {1, 2, 3, 4, 5, 7, 8, 16};

static void test_algorithm(void **state)
{
    const char *alg = *state;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        run_alg(alg, sizes[i], iters_for(sizes[i]));
}

/* all algorithms interleaved call by call, and the default: slots are independent */
static void test_mixed(void **state)
{
    (void)state;
    run_alg("*", 5, 3000);
    run_alg(NULL, 3, 3000);
    run_alg(NULL, 2, 3000);
}

static int unknown_child(nc_forkctx_t *c)
{
    int rc = numacoll_barrier_with(c->team, "no-such-barrier");
    if (rc != NUMACOLL_ERR_NOT_FOUND) return 20;
    const char *m = numacoll_last_error();
    if (!strstr(m, "no-such-barrier") || !strstr(m, "dissemination") || !strstr(m, "topo-numa"))
        return 21;
    if (numacoll_barrier_with(c->team, NULL) != NUMACOLL_ERR_NOT_FOUND) return 22;
    if (numacoll_barrier_with(NULL, "mcs") != NUMACOLL_ERR_ARG) return 23;
    if (numacoll_barrier(NULL) != NUMACOLL_ERR_ARG) return 24;
    /* the team still works afterwards */
    if (numacoll_barrier_with(c->team, "mcs") != NUMACOLL_OK) return 25;
    return 0;
}

static void test_unknown_name(void **state)
{
    (void)state;
    assert_int_equal(nc_forkrun(2, 0, unknown_child, NULL, 0, 60, NULL), 0);
}

static int selected_child(nc_forkctx_t *c)
{
    const char *want = c->arg;
    if (strcmp(numacoll_team_barrier_name(c->team), want) != 0) {
        fprintf(stderr, "default barrier is %s, expected %s\n", numacoll_team_barrier_name(c->team),
                want);
        return 30;
    }
    for (int i = 0; i < 2000; i++)
        if (numacoll_barrier(c->team)) return 31;
    return 0;
}

static void test_selected_by_env(void **state)
{
    (void)state;
    setenv("NUMACOLL_BARRIER", "tournament", 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    assert_int_equal(nc_forkrun(3, 0, selected_child, (void *)"tournament", 0, 60, NULL), 0);
    setenv("NUMACOLL_BARRIER", "no-such-barrier", 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_ERR_CONFIG);
    const char *m = numacoll_last_error();
    assert_non_null(strstr(m, "NUMACOLL_BARRIER"));
    assert_non_null(strstr(m, "sense-reversing-gr"));
    unsetenv("NUMACOLL_BARRIER");
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    /* auto: the documented choices for P = 1 and P = 2 */
    assert_int_equal(
        nc_forkrun(1, 0, selected_child, (void *)"sense-reversing-counter", 0, 60, NULL), 0);
    assert_int_equal(
        nc_forkrun(2, NC_FORK_BIND, selected_child, (void *)"dissemination", 0, 60, NULL), 0);
    /* auto on a flat placement that is not oversubscribed: the LogP model decides */
    static const struct {
        const char *L, *o, *g, *want;
    } cases[] = {
        {"60", "1", "5", "dissemination"},            /* defaults: 124 < central 134 */
        {"10", "0", "1000", "combining-tree"},        /* 1030 < 2000, 2020 */
        {"100", "0", "0", "sense-reversing-counter"}, /* tie 200 = 200: central first */
    };
    setenv("NUMACOLL_OVERSUBSCRIBED", "no", 1);
    setenv("NUMACOLL_WAIT_SPIN", "64", 1);
    setenv("NUMACOLL_BARRIER_TOPO_LEVELS", "socket", 1); /* one unit here: no hierarchy */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setenv("NUMACOLL_BARRIER_LOGP_L", cases[i].L, 1);
        setenv("NUMACOLL_BARRIER_LOGP_OS", cases[i].o, 1);
        setenv("NUMACOLL_BARRIER_LOGP_OR", cases[i].o, 1);
        setenv("NUMACOLL_BARRIER_LOGP_G", cases[i].g, 1);
        assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
        assert_int_equal(nc_forkrun(3, 0, selected_child, (void *)cases[i].want, 0, 60, NULL), 0);
    }
    unsetenv("NUMACOLL_OVERSUBSCRIBED");
    unsetenv("NUMACOLL_WAIT_SPIN");
    unsetenv("NUMACOLL_BARRIER_TOPO_LEVELS");
    unsetenv("NUMACOLL_BARRIER_LOGP_L");
    unsetenv("NUMACOLL_BARRIER_LOGP_OS");
    unsetenv("NUMACOLL_BARRIER_LOGP_OR");
    unsetenv("NUMACOLL_BARRIER_LOGP_G");
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
}

int main(int argc, char **argv)
{
    int nalg;
    const numacoll_algorithm_info_t *algs = numacoll_barrier_algorithms(&nalg);
    struct CMUnitTest tests[80];
    int n = 0;
    for (int i = 0; i < nalg && n < 70; i++) {
        int want = argc < 2;
        for (int j = 1; j < argc; j++)
            want |= strcmp(argv[j], algs[i].name) == 0;
        if (!want) continue;
        tests[n++] = (struct CMUnitTest){.name = algs[i].name,
                                         .test_func = test_algorithm,
                                         .initial_state = (void *)algs[i].name};
    }
    if (argc < 2) {
        tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_mixed);
        tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_unknown_name);
        tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_selected_by_env);
    }
    return _cmocka_run_group_tests("barrier", tests, (size_t)n, NULL, NULL);
}
