/* Core: segments, teams, the wait policy's timeout and dead-peer reports, oversubscription. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/nc_internal.h"
#include "forkrun.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

static void set_env(const char *name, const char *value)
{
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
}

/* Every rank writes its rank into its own block; after a barrier all see everyone's. */
static int blocks_visible(nc_forkctx_t *c)
{
    numacoll_team_t *t = c->team;
    if (t->rank_stride % nc_page_size() || t->global_size % nc_page_size()) return 10;
    if (t->line != 128) return 11; /* the x86 default padding */
    char *mine = nc_team_rank_block(t, t->rank) + t->line * 8;
    snprintf(mine, 64, "rank %d was here", t->rank);
    if (numacoll_barrier(t)) return 12;
    for (int r = 0; r < t->size; r++) {
        char want[64];
        snprintf(want, sizeof want, "rank %d was here", r);
        if (strcmp(nc_team_rank_block(t, r) + t->line * 8, want) != 0) return 13;
        if (atomic_load(&nc_team_ctl(t, r)->pid) <= 0) return 14;
    }
    /* own block is placed (move_pages sees pages on a node) */
    size_t on = 0, off = 0;
    int node = nc_seg_check_placement(nc_team_rank_block(t, t->rank), t->rank_stride, 0, &on, &off);
    if (node < 0 || on + off == 0) return 15;
    return numacoll_barrier(t) ? 16 : 0;
}

static void test_team_segment(void **state)
{
    (void)state;
    int before = nc_count_shm_files();
    nc_forkresult_t res;
    for (int P = 1; P <= 5; P++)
        assert_int_equal(nc_forkrun(P, 0, blocks_visible, NULL, 0, 60, &res), 0);
    /* the name was unlinked at creation: nothing left behind */
    assert_int_equal(nc_count_shm_files(), before);
}

/* Rank 1 never enters the second barrier: with NUMACOLL_TIMEOUT the others must fail
 * with NUMACOLL_ERR_TIMEOUT naming rank 1, well before the harness's own limit. */
static int one_absent(nc_forkctx_t *c)
{
    numacoll_team_t *t = c->team;
    if (numacoll_barrier(t)) return 20;
    if (c->rank == 1) {
        sleep(4); /* absent, but alive */
        return 0;
    }
    uint64_t t0 = nc_now_ns();
    int rc = numacoll_barrier(t);
    double waited = (double)(nc_now_ns() - t0) / 1e9;
    if (rc != NUMACOLL_ERR_TIMEOUT) return 21;
    const char *msg = numacoll_last_error();
    if (!strstr(msg, "did not arrive: 1") || !strstr(msg, "NUMACOLL_TIMEOUT")) {
        fprintf(stderr, "unexpected message: %s\n", msg);
        return 22;
    }
    if (waited < 0.9 || waited > 3.0) return 23;
    return 0;
}

static void test_timeout_names_missing(void **state)
{
    (void)state;
    set_env("NUMACOLL_TIMEOUT", "1");
    nc_forkresult_t res;
    assert_int_equal(nc_forkrun(3, 0, one_absent, NULL, 0, 30, &res), 0);
    set_env("NUMACOLL_TIMEOUT", NULL);
}

/* Rank 2 exits without entering the barrier: the others see it as dead even without a
 * timeout (the harness limit would fail the test if they hung). */
static int one_dies(nc_forkctx_t *c)
{
    numacoll_team_t *t = c->team;
    if (numacoll_barrier(t)) return 30;
    if (c->rank == 2) _exit(0);
    int rc = numacoll_barrier(t);
    if (rc != NUMACOLL_ERR_PEER_DEAD) return 31;
    if (!strstr(numacoll_last_error(), "2 (exited)")) {
        fprintf(stderr, "unexpected message: %s\n", numacoll_last_error());
        return 32;
    }
    return 0;
}

static void test_dead_peer_detected(void **state)
{
    (void)state;
    int before = nc_count_shm_files();
    nc_forkresult_t res;
    assert_int_equal(nc_forkrun(4, 0, one_dies, NULL, 0, 30, &res), 0);
    assert_int_equal(nc_count_shm_files(), before);
}

static int check_oversub_values(nc_forkctx_t *c)
{
    int *expect = c->arg;
    return c->team->oversubscribed == expect[0] && (c->team->spin_limit == 0) == expect[0] ? 0 : 40;
}

static void test_oversubscription_values(void **state)
{
    (void)state;
    long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
    nc_forkresult_t res;
    int yes = 1, no = 0;
    assert_int_equal(nc_forkrun((int)ncpus + 2, 0, check_oversub_values, &yes, 0, 60, &res), 0);
    if (ncpus >= 2)
        assert_int_equal(nc_forkrun(2, NC_FORK_BIND, check_oversub_values, &no, 0, 60, &res), 0);
    set_env("NUMACOLL_OVERSUBSCRIBED", "no");
    assert_int_equal(nc_forkrun((int)ncpus + 2, 0, check_oversub_values, &no, 0, 60, &res), 0);
    set_env("NUMACOLL_OVERSUBSCRIBED", NULL);
}

/* Creation failing on one member fails on all, with the same status. */
static int failing_oob(const void *s, void *r, size_t n, void *ctx)
{
    (void)s;
    (void)r;
    (void)n;
    (void)ctx;
    return -1;
}

static void test_oob_failure(void **state)
{
    (void)state;
    numacoll_team_params_t p = {.rank = 0, .size = 1, .allgather = failing_oob};
    numacoll_team_t *t;
    assert_int_equal(numacoll_team_create(&p, &t), NUMACOLL_ERR_OOB);
    assert_non_null(strstr(numacoll_last_error(), "allgather"));
}

/* Run by tests/core.cmake inside a private mount namespace whose /dev/shm is tiny:
 * a team too large for it must fail cleanly (no SIGBUS) on every member. */
static int big_team(nc_forkctx_t *c)
{
    (void)c;
    return 0; /* team creation itself is what is tested (harness exits 3 on failure) */
}

static void test_small_shm(void **state)
{
    (void)state;
    if (!getenv("NC_TEST_SMALL_SHM")) skip();
    struct statvfs sv;
    assert_int_equal(statvfs("/dev/shm", &sv), 0);
    size_t avail = (size_t)sv.f_bavail * sv.f_frsize;
    /* enough processes that their page-sized blocks exceed what is free */
    int P = (int)(avail / nc_page_size()) + 8;
    if (P > 64) skip(); /* /dev/shm not small: nothing to test here */
    nc_forkresult_t res;
    int failed = nc_forkrun(P, 0, big_team, NULL, 0, 60, &res);
    assert_int_equal(failed, P);
    assert_false(res.timed_out);
    for (int r = 0; r < P && r < 64; r++)
        assert_int_equal(res.exit_code[r], 3); /* not SIGBUS */
    assert_int_equal(nc_count_shm_files(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_team_segment),       cmocka_unit_test(test_timeout_names_missing),
        cmocka_unit_test(test_dead_peer_detected), cmocka_unit_test(test_oversubscription_values),
        cmocka_unit_test(test_oob_failure),        cmocka_unit_test(test_small_shm),
    };
    if (getenv("NC_TEST_SMALL_SHM")) cmocka_set_test_filter("test_small_shm");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
