/*
 * The hierarchical (topo) barrier on a simulated placement, and the tree it derives from a
 * group hierarchy.
 *
 *  - tree: nc_barrier_topo_tree on the paper's Fig. 3 hierarchy (14 processes, map-by
 *    numa on 2 packages x 2 NUMA nodes) and on the flat case.
 *  - synthetic: 16 processes on NUMACOLL_TOPO_SYNTHETIC "pack:2 numa:2 l3:1 core:4 pu:1",
 *    map-by core and map-by numa, every topo variant and the default, barrier property
 *    checked with a shared epoch array, and the hierarchy really has group levels.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "coll/barrier/barrier.h"
#include "core/nc_internal.h"
#include "forkrun.h"
#include "topo/topo.h"

#include <stdlib.h>
#include <string.h>

#define SLOT 16

static void expect_children(const nc_hier_t *h, int P, int me, const int *want, int nwant)
{
    int ch[64], n = -1, root = -1;
    assert_int_equal(nc_barrier_topo_tree(h, P, me, ch, &n, &root), NUMACOLL_OK);
    assert_int_equal(root, 0);
    if (n != nwant) fprintf(stderr, "rank %d: %d children, expected %d\n", me, n, nwant);
    assert_int_equal(n, nwant);
    for (int i = 0; i < n; i++)
        assert_int_equal(ch[i], want[i]);
}

static void test_tree_fig3(void **state)
{
    (void)state;
    enum { P = 14 };
    int unit[2 * P];
    for (int r = 0; r < P; r++) {
        unit[r] = r % 4;           /* numa node of rank r (map-by numa) */
        unit[P + r] = (r % 4) / 2; /* its package */
    }
    const char *names[] = {"numa", "socket"};
    nc_hier_t *h = NULL;
    assert_int_equal(nc_hier_build(P, 2, unit, names, &h), NUMACOLL_OK);
    /* G1 = {0,4,8,12},{1,5,9,13},{2,6,10},{3,7,11}; G2 = {0,1},{2,3}; G3 = {0,2} */
    expect_children(h, P, 0, (int[]){4, 8, 12, 1, 2}, 5);
    expect_children(h, P, 1, (int[]){5, 9, 13}, 3);
    expect_children(h, P, 2, (int[]){6, 10, 3}, 3);
    expect_children(h, P, 3, (int[]){7, 11}, 2);
    for (int r = 4; r < P; r++)
        expect_children(h, P, r, NULL, 0);
    nc_hier_free(h);
    /* flat: everybody reports to rank 0 */
    expect_children(NULL, 5, 0, (int[]){1, 2, 3, 4}, 4);
    expect_children(NULL, 5, 3, NULL, 0);
    expect_children(NULL, 1, 0, NULL, 0);
}

typedef struct topo_args {
    const char *alg;
    int iters;
} topo_args_t;

static int topo_child(nc_forkctx_t *c)
{
    const topo_args_t *a = c->arg;
    _Atomic uint64_t *ep = c->shared;
    const nc_hier_t *h = nc_topo_team_hier(c->team, "numa,socket");
    if (!h || h->nlevels < 2) {
        fprintf(stderr, "rank %d: expected a multi-level hierarchy on the synthetic topology\n",
                c->rank);
        return 40;
    }
    unsigned seed = 0x1234567u + (unsigned)c->rank * 2654435761u;
    for (int i = 1; i <= a->iters; i++) {
        nc_random_delay(&seed, 0);
        if ((seed & 15) == 0) nc_random_delay(&seed, 2000);
        atomic_store_explicit(&ep[c->rank * SLOT], (uint64_t)i, memory_order_relaxed);
        int rc = a->alg ? numacoll_barrier_with(c->team, a->alg) : numacoll_barrier(c->team);
        if (rc) {
            fprintf(stderr, "rank %d: %s failed: %s\n", c->rank, a->alg ? a->alg : "default",
                    numacoll_last_error());
            return 41;
        }
        for (int q = 0; q < c->size; q++) {
            uint64_t v = atomic_load_explicit(&ep[q * SLOT], memory_order_relaxed);
            if (v < (uint64_t)i || v > (uint64_t)i + 1) {
                fprintf(stderr, "%s: rank %d after barrier %d sees rank %d at %llu\n",
                        a->alg ? a->alg : "default", c->rank, i, q, (unsigned long long)v);
                return 42;
            }
        }
    }
    return 0;
}

static void run_synthetic(const char *mapby)
{
    setenv("NUMACOLL_TOPO_SYNTHETIC", "pack:2 numa:2 l3:1 core:4 pu:1", 1);
    setenv("NUMACOLL_TOPO_MAP_BY", mapby, 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    static const char *algs[] = {"topo", "topo-numa", "topo-socket", "topo-numa-socket", NULL};
    for (size_t i = 0; i < sizeof algs / sizeof algs[0]; i++) {
        topo_args_t a = {.alg = algs[i], .iters = 2000};
        nc_forkresult_t res;
        int failed = nc_forkrun(16, 0, topo_child, &a, 16 * SLOT * 8, 120, &res);
        if (failed)
            fprintf(stderr, "%s map-by %s: %d failed\n", algs[i] ? algs[i] : "default", mapby,
                    failed);
        assert_int_equal(failed, 0);
    }
    unsetenv("NUMACOLL_TOPO_SYNTHETIC");
    unsetenv("NUMACOLL_TOPO_MAP_BY");
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
}

static void test_synthetic_map_by_core(void **state)
{
    (void)state;
    run_synthetic("core");
}
static void test_synthetic_map_by_numa(void **state)
{
    (void)state;
    run_synthetic("numa");
}

static int default_child(nc_forkctx_t *c)
{
    if (strcmp(numacoll_team_barrier_name(c->team), "topo") != 0) {
        fprintf(stderr, "default barrier is %s, expected topo\n",
                numacoll_team_barrier_name(c->team));
        return 43;
    }
    return topo_child(c);
}

/* auto picks topo when the hierarchy has more than one level and the team is not
 * oversubscribed (forced here: 16 processes share 2 CPUs, so waits spin only briefly) */
static void test_synthetic_auto_is_topo(void **state)
{
    (void)state;
    setenv("NUMACOLL_TOPO_SYNTHETIC", "pack:2 numa:2 l3:1 core:4 pu:1", 1);
    setenv("NUMACOLL_TOPO_MAP_BY", "numa", 1);
    setenv("NUMACOLL_OVERSUBSCRIBED", "no", 1);
    setenv("NUMACOLL_WAIT_SPIN", "32", 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    topo_args_t a = {.alg = NULL, .iters = 200};
    assert_int_equal(nc_forkrun(16, 0, default_child, &a, 16 * SLOT * 8, 120, NULL), 0);
    unsetenv("NUMACOLL_TOPO_SYNTHETIC");
    unsetenv("NUMACOLL_TOPO_MAP_BY");
    unsetenv("NUMACOLL_OVERSUBSCRIBED");
    unsetenv("NUMACOLL_WAIT_SPIN");
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tree_fig3),
        cmocka_unit_test(test_synthetic_map_by_core),
        cmocka_unit_test(test_synthetic_map_by_numa),
        cmocka_unit_test(test_synthetic_auto_is_topo),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
