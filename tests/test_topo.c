/*
 * Topology layer: the group builder against the paper's figures, mappings, odd sizes,
 * level sets, the usable-level rule, the team path (forked, synthetic and real machine).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/nc_internal.h"
#include "forkrun.h"
#include "topo/topo.h"

#include <hwloc.h>
#include <stdlib.h>
#include <string.h>

#define FIG "pack:2 numa:2 l3:1 core:32 pu:1" /* 2 packages x 2 NUMA x 32 cores */
#define SMALL "pack:2 numa:2 l3:1 core:4 pu:1"

/* ---- helpers ---------------------------------------------------------------------- */

static nc_hier_t *plan_hier(const char *syn, int P, const char *map_by, const char *levels,
                            nc_topo_plan_t **plan_out)
{
    nc_topo_plan_t *p = NULL;
    assert_int_equal(nc_topo_plan_create(syn, P, map_by, &p), NUMACOLL_OK);
    nc_hier_t *h = NULL;
    assert_int_equal(nc_topo_build(P, p->loc, &p->lv, levels, &h, NULL, 0), NUMACOLL_OK);
    if (plan_out)
        *plan_out = p;
    else
        nc_topo_plan_free(p);
    return h;
}

/* group @p g of level @p l equals the ranks first, first+step, ... (count of them) */
static void assert_group_range(const nc_hier_t *h, int l, int g, int first, int step, int count)
{
    assert_true(l < h->nlevels);
    assert_true(g < h->levels[l].ngroups);
    const nc_group_t *gr = &h->levels[l].groups[g];
    assert_int_equal(gr->size, count);
    for (int k = 0; k < count; k++)
        assert_int_equal(gr->members[k], first + k * step);
}

static void assert_group(const nc_hier_t *h, int l, int g, int n, const int *m)
{
    assert_true(l < h->nlevels);
    assert_true(g < h->levels[l].ngroups);
    const nc_group_t *gr = &h->levels[l].groups[g];
    assert_int_equal(gr->size, n);
    for (int k = 0; k < n; k++)
        assert_int_equal(gr->members[k], m[k]);
}

/* Structural invariants of any hierarchy built from a locality table over the given
 * level columns: groups partition the processes in play, members share their unit,
 * leader = lowest rank, only leaders go up, the top group is the remaining leaders. */
static void check_invariants(const nc_hier_t *h, const nc_topo_plan_t *p)
{
    int P = h->nprocs;
    int *inplay = calloc((size_t)P, sizeof *inplay);
    for (int r = 0; r < P; r++)
        inplay[r] = 1;
    for (int l = 0; l < h->nlevels; l++) {
        const nc_hier_level_t *lv = &h->levels[l];
        int col = -1;
        for (int k = 0; k < NC_NLEVELS; k++)
            if (strcmp(lv->name, nc_level_names[k]) == 0) col = p->lv.base[k];
        int seen = 0, singletons = 1;
        for (int g = 0; g < lv->ngroups; g++) {
            const nc_group_t *gr = &lv->groups[g];
            assert_true(gr->size >= 1);
            if (gr->size > 1) singletons = 0;
            if (g > 0) assert_true(gr->members[0] > lv->groups[g - 1].members[0]);
            for (int k = 0; k < gr->size; k++) {
                int r = gr->members[k];
                assert_true(inplay[r]);
                assert_int_equal(h->group_of[(size_t)l * (size_t)P + (size_t)r], g);
                if (k) assert_true(r > gr->members[k - 1]);
                if (col >= 0)
                    assert_int_equal(p->loc[r].unit[col], p->loc[gr->members[0]].unit[col]);
                seen++;
            }
            /* two groups never share a unit */
            if (col >= 0)
                for (int g2 = 0; g2 < g; g2++)
                    assert_int_not_equal(p->loc[lv->groups[g2].members[0]].unit[col],
                                         p->loc[gr->members[0]].unit[col]);
        }
        int nplay = 0;
        for (int r = 0; r < P; r++)
            nplay += inplay[r];
        assert_int_equal(seen, nplay);
        assert_false(singletons);
        if (strcmp(lv->name, "top") == 0) {
            assert_int_equal(l, h->nlevels - 1);
            assert_int_equal(lv->ngroups, 1);
        }
        for (int r = 0; r < P; r++)
            inplay[r] = 0;
        for (int g = 0; g < lv->ngroups; g++)
            inplay[lv->groups[g].members[0]] = 1;
    }
    int nplay = 0;
    for (int r = 0; r < P; r++)
        nplay += inplay[r];
    assert_int_equal(nplay, 1); /* exactly one process (rank 0) ends on top */
    assert_int_equal(inplay[0], 1);
    free(inplay);
}

/* ---- the paper's figures ---------------------------------------------------------- */

static void test_fig2_map_core(void **state)
{
    (void)state;
    nc_topo_plan_t *p;
    nc_hier_t *h = plan_hier(FIG, 128, "core", "numa,socket", &p);
    assert_non_null(h);
    assert_int_equal(h->nlevels, 3);
    assert_string_equal(h->levels[0].name, "numa");
    assert_string_equal(h->levels[1].name, "socket");
    assert_string_equal(h->levels[2].name, "top");
    assert_int_equal(h->levels[0].ngroups, 4);
    for (int g = 0; g < 4; g++)
        assert_group_range(h, 0, g, 32 * g, 1, 32);
    assert_int_equal(h->levels[1].ngroups, 2);
    assert_group(h, 1, 0, 2, (int[]){0, 32});
    assert_group(h, 1, 1, 2, (int[]){64, 96});
    assert_int_equal(h->levels[2].ngroups, 1);
    assert_group(h, 2, 0, 2, (int[]){0, 64});
    /* process 0: G1{0..31}, G2{0,32}, G3{0,64}; 1: only G1{0..31}; 32: G1{32..63}, G2{0,32} */
    const int *go = h->group_of;
    assert_int_equal(go[0 * 128 + 0], 0);
    assert_int_equal(go[1 * 128 + 0], 0);
    assert_int_equal(go[2 * 128 + 0], 0);
    assert_int_equal(go[0 * 128 + 1], 0);
    assert_int_equal(go[1 * 128 + 1], -1);
    assert_int_equal(go[2 * 128 + 1], -1);
    assert_int_equal(go[0 * 128 + 32], 1);
    assert_int_equal(go[1 * 128 + 32], 0);
    assert_int_equal(go[2 * 128 + 32], -1);
    check_invariants(h, p);

    /* asking for every level gives the same groups: l3 is the numa level under another
     * name on this machine, l2 does not exist */
    char a[8192], b[8192];
    assert_int_equal(nc_hier_to_json(h, a, sizeof a), NUMACOLL_OK);
    nc_hier_t *h2 = plan_hier(FIG, 128, "core", "l2,l3,numa,socket", NULL);
    assert_int_equal(nc_hier_to_json(h2, b, sizeof b), NUMACOLL_OK);
    assert_string_equal(a, b);
    nc_hier_free(h2);
    nc_hier_free(h);
    nc_topo_plan_free(p);
}

static void test_fig3_map_numa(void **state)
{
    (void)state;
    nc_topo_plan_t *p;
    nc_hier_t *h = plan_hier(FIG, 14, "numa", "numa,socket", &p);
    assert_non_null(h);
    assert_int_equal(h->nlevels, 3);
    assert_int_equal(h->levels[0].ngroups, 4);
    assert_group(h, 0, 0, 4, (int[]){0, 4, 8, 12});
    assert_group(h, 0, 1, 4, (int[]){1, 5, 9, 13});
    assert_group(h, 0, 2, 3, (int[]){2, 6, 10});
    assert_group(h, 0, 3, 3, (int[]){3, 7, 11});
    assert_int_equal(h->levels[1].ngroups, 2);
    assert_group(h, 1, 0, 2, (int[]){0, 1});
    assert_group(h, 1, 1, 2, (int[]){2, 3});
    assert_group(h, 2, 0, 2, (int[]){0, 2});
    /* "next free core there": rank 4 is the second process on node 0 */
    assert_int_equal(p->core[0], 0);
    assert_int_equal(p->core[4], 1);
    assert_int_equal(p->core[1], 32);
    assert_int_equal(p->core[13], 35);
    assert_false(p->wrapped);
    check_invariants(h, p);
    char js[1024];
    assert_int_equal(nc_hier_to_json(h, js, sizeof js), NUMACOLL_OK);
    assert_string_equal(js, "{\"levels\": [{\"name\": \"numa\", \"groups\": [[0,4,8,12], "
                            "[1,5,9,13], [2,6,10], [3,7,11]]}, {\"name\": \"socket\", "
                            "\"groups\": [[0,1], [2,3]]}, {\"name\": \"top\", \"groups\": "
                            "[[0,2]]}]}");
    /* a buffer that is too small is an error, not a silent cut */
    assert_int_equal(nc_hier_to_json(h, js, 20), NUMACOLL_ERR_TOOBIG);
    nc_hier_free(h);
    nc_topo_plan_free(p);
}

static void test_map_socket(void **state)
{
    (void)state;
    nc_topo_plan_t *p;
    nc_hier_t *h = plan_hier(FIG, 128, "socket", "numa,socket", &p);
    assert_non_null(h);
    /* even ranks on package 0 (cores 0..63 in order), odd ranks on package 1 */
    assert_int_equal(h->nlevels, 3);
    assert_int_equal(h->levels[0].ngroups, 4);
    assert_group_range(h, 0, 0, 0, 2, 32);
    assert_group_range(h, 0, 1, 1, 2, 32);
    assert_group_range(h, 0, 2, 64, 2, 32);
    assert_group_range(h, 0, 3, 65, 2, 32);
    assert_group(h, 1, 0, 2, (int[]){0, 64});
    assert_group(h, 1, 1, 2, (int[]){1, 65});
    assert_group(h, 2, 0, 2, (int[]){0, 1});
    check_invariants(h, p);
    nc_hier_free(h);
    nc_topo_plan_free(p);

    /* 8 processes by socket: the socket level only has singleton groups of leaders */
    h = plan_hier(FIG, 8, "socket", "numa,socket", &p);
    assert_int_equal(h->nlevels, 2);
    assert_string_equal(h->levels[0].name, "numa");
    assert_group(h, 0, 0, 4, (int[]){0, 2, 4, 6});
    assert_group(h, 0, 1, 4, (int[]){1, 3, 5, 7});
    assert_string_equal(h->levels[1].name, "top");
    assert_group(h, 1, 0, 2, (int[]){0, 1});
    check_invariants(h, p);
    nc_hier_free(h);
    nc_topo_plan_free(p);
}

static void test_odd_sizes(void **state)
{
    (void)state;
    /* P = 1: nothing to group */
    nc_topo_plan_t *p;
    nc_hier_t *h = plan_hier(FIG, 1, "core", "numa,socket", &p);
    assert_null(h);
    nc_topo_plan_free(p);

    /* P = 3 by core: one NUMA group, no top (a single leader remains) */
    h = plan_hier(FIG, 3, "core", "numa,socket", &p);
    assert_non_null(h);
    assert_int_equal(h->nlevels, 1);
    assert_string_equal(h->levels[0].name, "numa");
    assert_group(h, 0, 0, 3, (int[]){0, 1, 2});
    check_invariants(h, p);
    nc_hier_free(h);
    nc_topo_plan_free(p);

    /* P = 5 by numa: {0,4},{1},{2},{3}; {0,1},{2,3}; top {0,2} */
    h = plan_hier(FIG, 5, "numa", "numa,socket", &p);
    assert_int_equal(h->nlevels, 3);
    assert_int_equal(h->levels[0].ngroups, 4);
    assert_group(h, 0, 0, 2, (int[]){0, 4});
    assert_group(h, 0, 1, 1, (int[]){1});
    assert_group(h, 0, 3, 1, (int[]){3});
    assert_group(h, 1, 0, 2, (int[]){0, 1});
    assert_group(h, 1, 1, 2, (int[]){2, 3});
    assert_group(h, 2, 0, 2, (int[]){0, 2});
    check_invariants(h, p);
    nc_hier_free(h);
    nc_topo_plan_free(p);

    /* P = 127 by core: the last NUMA group has 31 members */
    h = plan_hier(FIG, 127, "core", "numa,socket", &p);
    assert_int_equal(h->nlevels, 3);
    assert_group_range(h, 0, 2, 64, 1, 32);
    assert_group_range(h, 0, 3, 96, 1, 31);
    assert_group(h, 1, 1, 2, (int[]){64, 96});
    assert_group(h, 2, 0, 2, (int[]){0, 64});
    check_invariants(h, p);
    nc_hier_free(h);
    nc_topo_plan_free(p);

    /* every mapping, many sizes, every level set: the invariants hold */
    const char *maps[] = {"core", "numa", "socket"};
    const char *sets[] = {"numa,socket", "numa", "socket", "l2,l3,numa,socket", "l3"};
    for (int P = 1; P <= 40; P += (P < 17 ? 1 : 7))
        for (int mi = 0; mi < 3; mi++)
            for (int si = 0; si < 5; si++) {
                h = plan_hier(SMALL, P, maps[mi], sets[si], &p);
                if (P == 1)
                    assert_null(h);
                else
                    check_invariants(h, p);
                assert_int_equal(p->wrapped, P > 16);
                nc_hier_free(h);
                nc_topo_plan_free(p);
            }
}

static void test_level_sets(void **state)
{
    (void)state;
    /* numa only (shm-topo-NUMA): 4 NUMA groups, then the top of their leaders */
    nc_hier_t *h = plan_hier(FIG, 128, "core", "numa", NULL);
    assert_int_equal(h->nlevels, 2);
    assert_string_equal(h->levels[0].name, "numa");
    assert_string_equal(h->levels[1].name, "top");
    assert_group(h, 1, 0, 4, (int[]){0, 32, 64, 96});
    nc_hier_free(h);
    /* socket only (shm-topo-SOCKET) */
    h = plan_hier(FIG, 128, "core", "socket", NULL);
    assert_int_equal(h->nlevels, 2);
    assert_string_equal(h->levels[0].name, "socket");
    assert_group_range(h, 0, 0, 0, 1, 64);
    assert_group_range(h, 0, 1, 64, 1, 64);
    assert_group(h, 1, 0, 2, (int[]){0, 64});
    nc_hier_free(h);
    /* l2 does not exist on this machine: flat, and the reason says so */
    nc_topo_plan_t *p;
    assert_int_equal(nc_topo_plan_create(FIG, 8, "core", &p), NUMACOLL_OK);
    char why[256];
    assert_int_equal(nc_topo_build(8, p->loc, &p->lv, "l2", &h, why, sizeof why), NUMACOLL_OK);
    assert_null(h);
    assert_non_null(strstr(why, "l2 absent"));
    /* a bad level name is an error naming the allowed ones */
    assert_int_equal(nc_topo_build(8, p->loc, &p->lv, "numa,cache", &h, why, sizeof why),
                     NUMACOLL_ERR_ARG);
    assert_non_null(strstr(numacoll_last_error(), "cache"));
    assert_non_null(strstr(numacoll_last_error(), "l2,l3,numa,socket"));
    nc_topo_plan_free(p);
}

static void test_levels_of_machine(void **state)
{
    (void)state;
    nc_topo_machine_t *m;
    assert_int_equal(nc_topo_machine_load(FIG, &m), NUMACOLL_OK);
    const nc_topo_levels_t *lv = nc_topo_machine_levels(m);
    assert_int_equal(lv->ncores, 128);
    assert_int_equal(lv->base[NC_LVL_L2], -1);
    assert_int_equal(lv->base[NC_LVL_L3], NC_LVL_L3);
    assert_int_equal(lv->base[NC_LVL_NUMA], NC_LVL_L3); /* same units as l3 */
    assert_int_equal(lv->base[NC_LVL_SOCKET], NC_LVL_SOCKET);
    assert_int_equal(lv->nunits[NC_LVL_NUMA], 4);
    assert_int_equal(lv->maxcores[NC_LVL_SOCKET], 64);
    nc_topo_machine_free(m);

    /* private L2 per core and a shared L2 per pair of cores */
    assert_int_equal(nc_topo_machine_load("pack:2 l3:1 l2:4 core:1 pu:2", &m), NUMACOLL_OK);
    lv = nc_topo_machine_levels(m);
    assert_int_equal(lv->base[NC_LVL_L2], -1); /* one core per L2 */
    assert_int_equal(lv->base[NC_LVL_L3], NC_LVL_L3);
    assert_int_equal(lv->base[NC_LVL_SOCKET], NC_LVL_L3); /* package = its L3 */
    nc_topo_machine_free(m);
    assert_int_equal(nc_topo_machine_load("pack:1 l3:2 l2:2 core:2 pu:1", &m), NUMACOLL_OK);
    lv = nc_topo_machine_levels(m);
    assert_int_equal(lv->base[NC_LVL_L2], NC_LVL_L2);
    assert_int_equal(lv->base[NC_LVL_L3], NC_LVL_L3);
    assert_int_equal(lv->base[NC_LVL_NUMA], NC_LVL_NUMA); /* one node over both L3 */
    assert_int_equal(lv->base[NC_LVL_SOCKET], NC_LVL_NUMA);
    nc_topo_machine_free(m);

    /* bad synthetic strings and mappings are clear errors */
    assert_int_equal(nc_topo_machine_load("pack:2 banana:3", &m), NUMACOLL_ERR_CONFIG);
    assert_non_null(strstr(numacoll_last_error(), "banana"));
    nc_topo_plan_t *p = NULL;
    assert_int_equal(nc_topo_plan_create(SMALL, 4, "board", &p), NUMACOLL_ERR_ARG);
    assert_non_null(strstr(numacoll_last_error(), "core, numa, socket"));
    assert_int_equal(nc_topo_plan_create(SMALL, 0, "core", &p), NUMACOLL_ERR_ARG);
}

/* a NUMA node that spans both packages comes after them (levels go finest first) */
static void test_numa_above_packages(void **state)
{
    (void)state;
    nc_topo_plan_t *p;
    nc_hier_t *h = plan_hier("pack:2 l3:1 l2:4 core:1 pu:2", 8, "core", "numa,socket", &p);
    assert_int_equal(p->lv.base[NC_LVL_NUMA], NC_LVL_NUMA);
    assert_int_equal(p->lv.nunits[NC_LVL_NUMA], 1);
    assert_non_null(h);
    assert_int_equal(h->nlevels, 2);
    assert_string_equal(h->levels[0].name, "socket");
    assert_group_range(h, 0, 0, 0, 1, 4);
    assert_group_range(h, 0, 1, 4, 1, 4);
    assert_string_equal(h->levels[1].name, "numa"); /* joins the two package leaders */
    assert_group(h, 1, 0, 2, (int[]){0, 4});
    check_invariants(h, p);
    nc_hier_free(h);
    nc_topo_plan_free(p);
}

/* the usable-level rule: a level counts only if every binding lies in one unit of it */
static void test_usable_rule(void **state)
{
    (void)state;
    nc_topo_machine_t *m;
    assert_int_equal(nc_topo_machine_load(SMALL, &m), NUMACOLL_OK);
    const nc_topo_levels_t *lv = nc_topo_machine_levels(m);
    enum { P = 16 };
    nc_topo_loc_t loc[P];
    char list[32];
    /* rank 0 spans the two NUMA nodes of package 0 (PUs 0-7); the others on one core */
    assert_int_equal(nc_topo_locality_of_list(m, "0-7", &loc[0]), NUMACOLL_OK);
    assert_int_equal(loc[0].unit[NC_LVL_NUMA], -1);
    assert_int_equal(loc[0].unit[NC_LVL_L3], -1);
    assert_int_equal(loc[0].unit[NC_LVL_SOCKET], 0);
    assert_int_equal(loc[0].numa_os, -1);
    for (int r = 1; r < P; r++) {
        snprintf(list, sizeof list, "%d", r);
        assert_int_equal(nc_topo_locality_of_list(m, list, &loc[r]), NUMACOLL_OK);
        assert_int_equal(loc[r].numa_os, r / 4);
    }
    unsigned usable = nc_topo_usable(P, loc, lv);
    assert_int_equal(usable, 1u << NC_LVL_SOCKET);
    nc_hier_t *h;
    assert_int_equal(nc_topo_build(P, loc, lv, "numa,socket", &h, NULL, 0), NUMACOLL_OK);
    assert_non_null(h);
    assert_int_equal(h->nlevels, 2);
    assert_string_equal(h->levels[0].name, "socket");
    assert_group_range(h, 0, 0, 0, 1, 8);
    assert_group_range(h, 0, 1, 8, 1, 8);
    assert_group(h, 1, 0, 2, (int[]){0, 8});
    nc_hier_free(h);
    /* numa alone is not usable: flat, with the reason */
    char why[256];
    assert_int_equal(nc_topo_build(P, loc, lv, "numa", &h, why, sizeof why), NUMACOLL_OK);
    assert_null(h);
    assert_non_null(strstr(why, "not bound inside one unit"));
    /* unbound processes (whole machine): no level is usable, flat */
    for (int r = 0; r < P; r++)
        assert_int_equal(nc_topo_locality_of_list(m, "0-15", &loc[r]), NUMACOLL_OK);
    assert_int_equal(nc_topo_usable(P, loc, lv), 0u);
    assert_int_equal(nc_topo_build(P, loc, lv, "l2,l3,numa,socket", &h, why, sizeof why),
                     NUMACOLL_OK);
    assert_null(h);
    /* bound to NUMA nodes (--bind-to numa): numa and socket usable, l3 too (same units) */
    for (int r = 0; r < P; r++) {
        snprintf(list, sizeof list, "%d-%d", (r % 4) * 4, (r % 4) * 4 + 3);
        assert_int_equal(nc_topo_locality_of_list(m, list, &loc[r]), NUMACOLL_OK);
    }
    usable = nc_topo_usable(P, loc, lv);
    assert_true(usable & (1u << NC_LVL_NUMA));
    assert_true(usable & (1u << NC_LVL_SOCKET));
    assert_int_equal(nc_topo_locality_of_list(m, "x-y", &loc[0]), NUMACOLL_ERR_ARG);
    nc_topo_machine_free(m);
}

/* the builder alone: input validation, and a level with only singletons is skipped */
static void test_builder_direct(void **state)
{
    (void)state;
    const char *names[] = {"a", "b"};
    int unit[2 * 4] = {0, 1, 2, 3, /* a: all singletons */ 0, 0, 1, 1};
    nc_hier_t *h;
    assert_int_equal(nc_hier_build(4, 2, unit, names, &h), NUMACOLL_OK);
    assert_int_equal(h->nlevels, 2);
    assert_string_equal(h->levels[0].name, "b");
    assert_group(h, 0, 0, 2, (int[]){0, 1});
    assert_group(h, 0, 1, 2, (int[]){2, 3});
    assert_group(h, 1, 0, 2, (int[]){0, 2});
    nc_hier_free(h);
    /* leader = lowest rank even when the unit numbers are in another order */
    int u2[5] = {7, 3, 7, 3, 9};
    assert_int_equal(nc_hier_build(5, 1, u2, names, &h), NUMACOLL_OK);
    assert_group(h, 0, 0, 2, (int[]){0, 2});
    assert_group(h, 0, 1, 2, (int[]){1, 3});
    assert_group(h, 0, 2, 1, (int[]){4});
    assert_group(h, 1, 0, 3, (int[]){0, 1, 4});
    nc_hier_free(h);
    int bad[2] = {0, -1};
    assert_int_equal(nc_hier_build(2, 1, bad, names, &h), NUMACOLL_ERR_ARG);
    assert_null(h);
    assert_int_equal(nc_hier_build(0, 1, bad, names, &h), NUMACOLL_ERR_ARG);
    nc_hier_free(NULL);
}

/* ---- the team path ------------------------------------------------------------------ */

typedef struct team_case {
    const char *syn, *map_by;
} team_case_t;

static int team_fn(nc_forkctx_t *c)
{
    const team_case_t *tc = c->arg;
    numacoll_team_t *t = c->team;
    if (t->numa_node != -1) return 10; /* simulated nodes never used for real memory */
    if (!nc_topo_team_simulated(t)) return 11;
    nc_topo_plan_t *p;
    if (nc_topo_plan_create(tc->syn, c->size, tc->map_by, &p) != NUMACOLL_OK) return 12;
    const char *sets[] = {"numa,socket", "numa", "socket", "l3,numa"};
    int rc = 0;
    for (int i = 0; i < 4 && !rc; i++) {
        nc_hier_t *want;
        if (nc_topo_build(c->size, p->loc, &p->lv, sets[i], &want, NULL, 0) != NUMACOLL_OK) rc = 13;
        const nc_hier_t *got = nc_topo_team_hier(t, sets[i]);
        if (!want || !got) {
            rc = 14;
        } else {
            char a[4096], b[4096];
            nc_hier_to_json(want, a, sizeof a);
            nc_hier_to_json(got, b, sizeof b);
            if (strcmp(a, b) != 0) {
                fprintf(stderr, "rank %d levels %s: team %s, planned %s\n", c->rank, sets[i], b, a);
                rc = 15;
            }
            if (nc_topo_team_hier(t, sets[i]) != got) rc = 16; /* cached */
        }
        nc_hier_free(want);
    }
    for (int r = 0; r < c->size && !rc; r++)
        if (nc_topo_team_numa_of(t, r) != p->loc[r].numa_os) rc = 17;
    if (nc_topo_team_numa_count(t) != 4) rc = 18; /* 16 ranks fill all 4 nodes */
    char d[1024];
    nc_topo_team_describe(t, d, sizeof d);
    if (!strstr(d, "synthetic")) rc = 19;
    nc_topo_plan_free(p);
    /* the hierarchy is usable by a collective on this team right away */
    if (!rc && numacoll_barrier(t) != NUMACOLL_OK) rc = 20;
    return rc;
}

static void run_synthetic_team(const char *map_by)
{
    team_case_t tc = {SMALL, map_by};
    setenv("NUMACOLL_TOPO_SYNTHETIC", SMALL, 1);
    setenv("NUMACOLL_TOPO_MAP_BY", map_by, 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    nc_forkresult_t res;
    int failed = nc_forkrun(16, 0, team_fn, &tc, 0, 60.0, &res);
    unsetenv("NUMACOLL_TOPO_SYNTHETIC");
    unsetenv("NUMACOLL_TOPO_MAP_BY");
    numacoll_config_reload();
    for (int r = 0; r < 16 && failed; r++)
        if (res.exit_code[r]) print_error("rank %d exit %d\n", r, res.exit_code[r]);
    assert_int_equal(failed, 0);
}

static void test_team_synthetic_core(void **state)
{
    (void)state;
    run_synthetic_team("core");
}
static void test_team_synthetic_numa(void **state)
{
    (void)state;
    run_synthetic_team("numa");
}

/* real machine: each process is bound to one CPU; the team's groups are what hwloc says */
static int real_fn(nc_forkctx_t *c)
{
    numacoll_team_t *t = c->team;
    if (nc_topo_team_simulated(t)) return 30;
    /* independent view through hwloc: the L3 (and NUMA node) covering my binding */
    hwloc_topology_t topo;
    hwloc_topology_init(&topo);
    hwloc_topology_load(topo);
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    hwloc_get_cpubind(topo, set, 0);
    hwloc_obj_t o = hwloc_get_obj_covering_cpuset(topo, set);
    hwloc_obj_t l3 = o ? (o->type == HWLOC_OBJ_L3CACHE
                              ? o
                              : hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_L3CACHE, o))
                       : NULL;
    int mine[2] = {l3 ? (int)l3->logical_index : -1,
                   l3 ? hwloc_get_nbobjs_inside_cpuset_by_type(topo, l3->cpuset, HWLOC_OBJ_CORE)
                      : 0};
    hwloc_obj_t node = NULL;
    int nnodes_inside = hwloc_get_nbobjs_inside_cpuset_by_type(topo, set, HWLOC_OBJ_NUMANODE);
    if (nnodes_inside == 0) /* NUMA nodes attached above the binding */
        for (hwloc_obj_t a = o; a && !node; a = a->parent)
            if (a->memory_arity == 1 && a->memory_first_child->type == HWLOC_OBJ_NUMANODE)
                node = a->memory_first_child;
    int node_os = node ? (int)node->os_index : -1;
    hwloc_bitmap_free(set);
    hwloc_topology_destroy(topo);
    int *all = malloc(sizeof(int) * 2 * (size_t)c->size);
    numacoll_fork_oob_allgather(mine, all, sizeof mine, c->oob);
    int rc = 0;
    const nc_hier_t *h = nc_topo_team_hier(t, "l3");
    int expect_l3 = 1;
    for (int r = 0; r < c->size; r++)
        expect_l3 &= all[2 * r] >= 0 && all[2 * r + 1] >= 2;
    if (!expect_l3 || c->size == 1) {
        if (h) rc = 31;
    } else {
        if (!h) rc = 32;
        /* same L3 <=> same group at the first level */
        for (int r = 0; r < c->size && !rc; r++)
            for (int q = 0; q < c->size && !rc; q++)
                if ((all[2 * r] == all[2 * q]) !=
                    (h->group_of[r] == h->group_of[q] && h->group_of[r] >= 0))
                    rc = 33;
    }
    if (node_os >= 0 && t->numa_node != node_os) rc = 34;
    free(all);
    return rc;
}

static void test_team_real_machine(void **state)
{
    (void)state;
    unsetenv("NUMACOLL_TOPO_SYNTHETIC");
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    nc_forkresult_t res;
    for (int P = 1; P <= 4; P++) {
        int failed = nc_forkrun(P, NC_FORK_BIND, real_fn, NULL, 0, 60.0, &res);
        for (int r = 0; r < P && failed; r++)
            if (res.exit_code[r]) print_error("P=%d rank %d exit %d\n", P, r, res.exit_code[r]);
        assert_int_equal(failed, 0);
    }
}

/* a bad synthetic string fails team creation on every member with a clear message */
static int bad_fn(nc_forkctx_t *c)
{
    numacoll_team_params_t prm;
    memset(&prm, 0, sizeof prm);
    prm.rank = c->rank;
    prm.size = c->size;
    prm.allgather = numacoll_fork_oob_allgather;
    prm.oob_ctx = c->oob;
    numacoll_team_t *t = NULL;
    int rc = numacoll_team_create(&prm, &t);
    if (rc == NUMACOLL_OK) {
        numacoll_team_destroy(t);
        return 40;
    }
    if (!strstr(numacoll_last_error(), "synthetic")) {
        fprintf(stderr, "message: %s\n", numacoll_last_error());
        return 41;
    }
    return 0;
}

static void test_team_bad_synthetic(void **state)
{
    (void)state;
    setenv("NUMACOLL_TOPO_SYNTHETIC", "pack:2 widget:4", 1);
    numacoll_config_reload();
    nc_forkresult_t res;
    int failed = nc_forkrun(3, NC_FORK_NO_TEAM, bad_fn, NULL, 0, 60.0, &res);
    unsetenv("NUMACOLL_TOPO_SYNTHETIC");
    numacoll_config_reload();
    assert_int_equal(failed, 0); /* (the failure comes before any segment exists) */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fig2_map_core),       cmocka_unit_test(test_fig3_map_numa),
        cmocka_unit_test(test_map_socket),          cmocka_unit_test(test_odd_sizes),
        cmocka_unit_test(test_level_sets),          cmocka_unit_test(test_levels_of_machine),
        cmocka_unit_test(test_usable_rule),         cmocka_unit_test(test_numa_above_packages),
        cmocka_unit_test(test_builder_direct),      cmocka_unit_test(test_team_synthetic_core),
        cmocka_unit_test(test_team_synthetic_numa), cmocka_unit_test(test_team_real_machine),
        cmocka_unit_test(test_team_bad_synthetic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
