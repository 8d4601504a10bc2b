/*
 * Resources running out at one member: file descriptors (RLIMIT_NOFILE lowered to the
 * descriptors it holds) or address space (RLIMIT_AS lowered to what it maps). The creation
 * of a team, of the broadcast queues and of the reduction buffers must then fail on EVERY
 * member with the same status (agreed; nobody goes on with a missing segment, nobody
 * crashes or hangs), and once the limit is lifted the same team sets them up and moves the
 * right bytes. The victim is rank 0 (it creates each segment) or rank 1 (it attaches).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "coll/reduce/reduce_internal.h"
#include "core/nc_internal.h"
#include "forkrun.h"
#include "squeeze.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

enum { P = 3, LIMIT_FDS = 1, LIMIT_AS = 2 };
enum { BCAST_BYTES = 100000, REDUCE_COUNT = 5000 };

typedef struct ex_case {
    int victim;
    int limit; /* LIMIT_FDS or LIMIT_AS */
} ex_case_t;

/* the status each rank saw at each step, for the parent's cross-member comparison */
typedef struct ex_report {
    int create_rc, bcast_rc, reduce_rc;
} ex_report_t;

/* Lower this process's soft limit so that the next descriptor or the next mapping of more
 * than a few pages fails (256 KiB of address space left for the agreement's heap needs) */
static int squeeze(int limit, struct rlimit *saved)
{
    return nc_test_squeeze(limit == LIMIT_FDS ? RLIMIT_NOFILE : RLIMIT_AS, 256u << 10, saved);
}

static int lift(int limit, const struct rlimit *saved)
{
    return setrlimit(limit == LIMIT_FDS ? RLIMIT_NOFILE : RLIMIT_AS, saved);
}

static int ex_child(nc_forkctx_t *c)
{
    const ex_case_t *ec = c->arg;
    ex_report_t *rep = (ex_report_t *)c->shared + c->rank;
    int victim = c->rank == ec->victim;
    struct rlimit saved;
    numacoll_team_params_t p = {.rank = c->rank,
                                .size = c->size,
                                .allgather = numacoll_fork_oob_allgather,
                                .oob_ctx = c->oob};
    numacoll_team_t *t = NULL;

    /* 1. the team itself (out of descriptors it fails; the address space left holds its
     * few pages, so there it may succeed) */
    if (victim && squeeze(ec->limit, &saved) != 0) return 90;
    rep->create_rc = numacoll_team_create(&p, &t);
    if (victim && lift(ec->limit, &saved) != 0) return 91;
    if (rep->create_rc == NUMACOLL_OK) numacoll_team_destroy(t);
    t = NULL;
    if (numacoll_team_create(&p, &t) != NUMACOLL_OK) return 92;

    /* 2. the broadcast queues, at the first broadcast */
    unsigned char *buf = malloc(BCAST_BYTES);
    double *x = malloc(REDUCE_COUNT * sizeof *x);
    if (!buf || !x) return 93;
    memset(buf, c->rank == 1 ? 0x5a : 0, BCAST_BYTES);
    if (victim && squeeze(ec->limit, &saved) != 0) return 94;
    rep->bcast_rc = numacoll_bcast(t, buf, BCAST_BYTES, 1);
    if (rep->bcast_rc != NUMACOLL_OK && c->rank == ec->victim)
        fprintf(stderr, "rank %d: the broadcast's set-up failed as it should: %s\n", c->rank,
                numacoll_last_error());
    /* 3. the reduction buffers, at the first allreduce */
    for (int i = 0; i < REDUCE_COUNT; i++)
        x[i] = c->rank + i;
    rep->reduce_rc = numacoll_allreduce(t, NUMACOLL_IN_PLACE, x, REDUCE_COUNT, NUMACOLL_DOUBLE,
                                        NUMACOLL_OP_SUM);
    if (victim && lift(ec->limit, &saved) != 0) return 95;

    /* 4. the same team, limit lifted: everything works and moves the right bytes */
    if (numacoll_barrier(t) != NUMACOLL_OK) return 96;
    memset(buf, c->rank == 1 ? 0x5a : 0, BCAST_BYTES);
    if (numacoll_bcast(t, buf, BCAST_BYTES, 1) != NUMACOLL_OK) return 97;
    for (int i = 0; i < BCAST_BYTES; i++)
        if (buf[i] != 0x5a) return 98;
    for (int i = 0; i < REDUCE_COUNT; i++)
        x[i] = c->rank + i;
    if (numacoll_allreduce(t, NUMACOLL_IN_PLACE, x, REDUCE_COUNT, NUMACOLL_DOUBLE,
                           NUMACOLL_OP_SUM) != NUMACOLL_OK)
        return 99;
    for (int i = 0; i < REDUCE_COUNT; i++)
        if (x[i] != (double)(P * i + P * (P - 1) / 2)) return 100;
    free(buf), free(x);
    numacoll_team_destroy(t);
    return 0;
}

/* ex_child, then the comparison of every member's statuses (the reports live in the
 * harness's shared block, gone when nc_forkrun returns, so the children compare them) */
static int ex_agree_child(nc_forkctx_t *c)
{
    int rc = ex_child(c);
    if (rc) return rc;
    const ex_case_t *ec = c->arg;
    ex_report_t *reps = c->shared;
    /* everyone is past step 4's collectives, so every report is written */
    for (int r = 0; r < c->size; r++) {
        const ex_report_t *a = &reps[r], *b = &reps[0];
        if (a->create_rc != b->create_rc || a->bcast_rc != b->bcast_rc ||
            a->reduce_rc != b->reduce_rc) {
            fprintf(stderr,
                    "victim %d: ranks 0 and %d disagree: create %d/%d, bcast %d/%d, reduce "
                    "%d/%d\n",
                    ec->victim, r, b->create_rc, a->create_rc, b->bcast_rc, a->bcast_rc,
                    b->reduce_rc, a->reduce_rc);
            return 110;
        }
    }
    /* the squeeze must have made the set-ups fail (else the test tests nothing) */
    if (reps[0].bcast_rc == NUMACOLL_OK || reps[0].reduce_rc == NUMACOLL_OK) {
        fprintf(stderr, "victim %d, limit %d: set-up did not fail (bcast %d, reduce %d)\n",
                ec->victim, ec->limit, reps[0].bcast_rc, reps[0].reduce_rc);
        return 111;
    }
    if (ec->limit == LIMIT_FDS && reps[0].create_rc == NUMACOLL_OK) return 112;
    return 0;
}

static void run_case(int victim, int limit)
{
    ex_case_t ec = {.victim = victim, .limit = limit};
    nc_forkresult_t res;
    int base = nc_shm_baseline();
    int failed =
        nc_forkrun(P, NC_FORK_NO_TEAM, ex_agree_child, &ec, sizeof(ex_report_t) * P, 60, &res);
    for (int r = 0; r < P; r++)
        if (res.exit_code[r])
            fprintf(stderr, "victim %d, %s: rank %d exited %d\n", victim,
                    limit == LIMIT_FDS ? "descriptors" : "address space", r, res.exit_code[r]);
    assert_int_equal(failed, 0);
    assert_int_equal(nc_shm_settle(base), base);
}

/* The reduction buffers get the pages of larger chunks at the first call that needs them
 * (NUMACOLL_REDUCE_EAGER): a member that cannot get them fails that call, and so does every
 * other member (NUMACOLL_ERR_UNSUPPORTED), before any output is written; the next call
 * gets them and reduces right. An allreduce, and a reduce whose non-roots would otherwise
 * leave right after posting, each with the root and a non-root as the victim. */
typedef struct lazy_case {
    int victim, root; /* root -1: allreduce */
    size_t count;     /* doubles */
} lazy_case_t;

static int lazy_child(nc_forkctx_t *c)
{
    const lazy_case_t *lc = c->arg;
    size_t n = lc->count;
    double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    if (!x || !y) return 80;
    double one = c->rank;
    if (numacoll_allreduce(c->team, NUMACOLL_IN_PLACE, &one, 1, NUMACOLL_DOUBLE,
                           NUMACOLL_OP_SUM) != NUMACOLL_OK)
        return 81; /* the set-up: eager pages only */
    for (int attempt = 0; attempt < 2; attempt++) {
        if (attempt == 0 && c->rank == lc->victim) nc_seg_debug_fail_populate(1);
        for (size_t i = 0; i < n; i++)
            x[i] = c->rank + (double)i, y[i] = -1;
        int rc = lc->root < 0 ? numacoll_allreduce(c->team, x, y, n, NUMACOLL_DOUBLE,
                                                   NUMACOLL_OP_SUM)
                              : numacoll_reduce(c->team, x, y, n, NUMACOLL_DOUBLE,
                                                NUMACOLL_OP_SUM, lc->root);
        int gets = lc->root < 0 || lc->root == c->rank;
        if (attempt == 0) {
            if (rc != NUMACOLL_ERR_UNSUPPORTED) {
                fprintf(stderr, "rank %d (victim %d): first large call gave %s: %s\n", c->rank,
                        lc->victim, numacoll_status_name(rc), numacoll_last_error());
                return 82;
            }
            for (size_t i = 0; i < n; i++)
                if (y[i] != -1) return 83; /* nothing written */
            continue;
        }
        if (rc != NUMACOLL_OK) return 84;
        for (size_t i = 0; gets && i < n; i++)
            if (y[i] != (double)c->size * i + c->size * (c->size - 1) / 2) return 85;
    }
    free(x), free(y);
    return 0;
}

static void test_large_chunk_pages_fail(void **state)
{
    (void)state;
    const lazy_case_t cases[] = {{0, -1, 8192}, {2, -1, 8192}, {0, 0, 1024}, {1, 0, 1024}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        nc_forkresult_t res;
        int failed = nc_forkrun(P, 0, lazy_child, (void *)&cases[k], 0, 60, &res);
        for (int r = 0; r < P; r++)
            if (res.exit_code[r])
                fprintf(stderr, "case %zu: rank %d exited %d\n", k, r, res.exit_code[r]);
        assert_int_equal(failed, 0);
    }
}

/* Pages of this member's reduction area that are in memory (mincore on the shared file) */
static size_t area_pages_in_memory(numacoll_team_t *t)
{
    nc_reduce_team_t *r = t->reduce;
    return nc_pages_in_memory(rd_area(r, t->rank), r->area_stride);
}

/* allreduce of @p n doubles with a check of every element; 0 when right */
static int checked_allreduce(nc_forkctx_t *c, double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = c->rank + (double)i;
    if (numacoll_allreduce(c->team, NUMACOLL_IN_PLACE, x, n, NUMACOLL_DOUBLE,
                           NUMACOLL_OP_SUM) != NUMACOLL_OK)
        return 1;
    for (size_t i = 0; i < n; i++)
        if (x[i] != (double)c->size * i + c->size * (c->size - 1) / 2) return 2;
    return 0;
}

/* NUMACOLL_REDUCE_GIVE_BACK=16 (the test sets it): after a large allreduce, 16 small ones
 * keep the area's pages, the 17th gives back those beyond the eager bytes; a large one
 * then gets them again and reduces right; a large call in between restarts the count. */
static int give_back_child(nc_forkctx_t *c)
{
    enum { LARGE = 32768, SMALL = 8 };
    double *x = malloc(LARGE * sizeof *x);
    if (!x || checked_allreduce(c, x, LARGE)) return 70;
    size_t full = area_pages_in_memory(c->team);
    for (int i = 0; i < 16; i++)
        if (checked_allreduce(c, x, SMALL)) return 71;
    if (area_pages_in_memory(c->team) != full) return 72; /* not yet */
    if (checked_allreduce(c, x, SMALL)) return 73;
    size_t eager = area_pages_in_memory(c->team);
    /* the control page, two pages per in slot, one per result slot (4 KiB pages) */
    size_t expect_max = 1 + 3 * (size_t)c->team->reduce->slots;
    if (eager > expect_max || eager >= full / 2) {
        fprintf(stderr, "rank %d: %zu of %zu pages in memory after the give-back (at most %zu "
                        "expected)\n", c->rank, eager, full, expect_max);
        return 74;
    }
    if (checked_allreduce(c, x, LARGE)) return 75;
    if (area_pages_in_memory(c->team) != full) return 76;
    for (int round = 0; round < 3; round++) { /* 10 small, 1 large: never given back */
        for (int i = 0; i < 10; i++)
            if (checked_allreduce(c, x, SMALL)) return 77;
        if (checked_allreduce(c, x, LARGE)) return 78;
    }
    if (area_pages_in_memory(c->team) != full) return 79;
    free(x);
    return 0;
}

static void test_large_pages_given_back(void **state)
{
    (void)state;
    setenv("NUMACOLL_REDUCE_GIVE_BACK", "16", 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    nc_forkresult_t res;
    int failed = nc_forkrun(2, 0, give_back_child, NULL, 0, 60, &res);
    unsetenv("NUMACOLL_REDUCE_GIVE_BACK");
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    for (int r = 0; r < 2; r++)
        if (res.exit_code[r]) fprintf(stderr, "rank %d exited %d\n", r, res.exit_code[r]);
    assert_int_equal(failed, 0);
}

static void test_descriptors_exhausted(void **state)
{
    (void)state;
    for (int victim = 0; victim < 2; victim++)
        run_case(victim, LIMIT_FDS);
}

static void test_address_space_exhausted(void **state)
{
    (void)state;
#if defined(__SANITIZE_ADDRESS__)
    /* AddressSanitizer maps shadow memory as it goes: squeezed, the sanitizer fails */
    skip();
#endif
    for (int victim = 0; victim < 2; victim++)
        run_case(victim, LIMIT_AS);
}

int main(void)
{
    nc_test_clear_env();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_descriptors_exhausted),
        cmocka_unit_test(test_address_space_exhausted),
        cmocka_unit_test(test_large_chunk_pages_fail),
        cmocka_unit_test(test_large_pages_given_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
