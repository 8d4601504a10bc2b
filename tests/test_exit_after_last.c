/*
 * Members that exit right after their last collective must never be reported dead by a
 * member still inside that collective: their part of it is done.
 *
 * The dead-member check of a slow wait reads a member's completion count, then looks at its
 * process. A member that completes and exits between the two looks is gone, with its part
 * done. Here the check pauses between the two looks (nc_wait_debug_peer_check_pause), and
 * the last rank enters the last collective late (so the others wait slowly and check) and
 * exits as soon as it is done; every member must return NUMACOLL_OK. Every barrier
 * algorithm, a broadcast and an allreduce are the last collective, at P = 2 and 3; then
 * many short-lived teams without the pause, members exiting at their own pace.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/nc_internal.h"
#include "forkrun.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { LATE_US = 30000, PAUSE_NS = 40000000 };

typedef struct last_case {
    const char *barrier; /* the last collective: this barrier algorithm, or ... */
    int kind;            /* ... KIND_BCAST / KIND_ALLREDUCE */
    int late;            /* 1: the last rank enters the last collective LATE_US late */
    int calls;           /* collectives before the last one */
} last_case_t;

enum { KIND_BARRIER, KIND_BCAST, KIND_ALLREDUCE };

static int last_child(nc_forkctx_t *c)
{
    const last_case_t *lc = c->arg;
    double x[64];
    char what[96];
    for (int i = 0; i <= lc->calls; i++) {
        int last = i == lc->calls;
        if (last && lc->late && c->rank == c->size - 1) usleep(LATE_US);
        int rc;
        if (lc->kind == KIND_BCAST) {
            for (int k = 0; k < 64; k++)
                x[k] = c->rank == 0 ? i + k : -1;
            rc = numacoll_bcast(c->team, x, sizeof x, 0);
            snprintf(what, sizeof what, "bcast %d", i);
            if (rc == NUMACOLL_OK)
                for (int k = 0; k < 64; k++)
                    if (x[k] != i + k) return 20;
        } else if (lc->kind == KIND_ALLREDUCE) {
            for (int k = 0; k < 64; k++)
                x[k] = c->rank + k;
            rc = numacoll_allreduce(c->team, NUMACOLL_IN_PLACE, x, 64, NUMACOLL_DOUBLE,
                                    NUMACOLL_OP_SUM);
            snprintf(what, sizeof what, "allreduce %d", i);
            int P = c->size;
            if (rc == NUMACOLL_OK)
                for (int k = 0; k < 64; k++)
                    if (x[k] != (double)P * k + P * (P - 1) / 2) return 21;
        } else {
            rc = numacoll_barrier_with(c->team, lc->barrier);
            snprintf(what, sizeof what, "barrier %d (%s)", i, lc->barrier);
        }
        if (rc != NUMACOLL_OK) {
            fprintf(stderr, "rank %d of %d: %s of %d failed: %s: %s\n", c->rank, c->size, what,
                    lc->calls, numacoll_status_name(rc), numacoll_last_error());
            return 10;
        }
    }
    return 0; /* the harness destroys the team (local) and exits at once */
}

static void run(const last_case_t *lc, int P)
{
    nc_forkresult_t res;
    int failed = nc_forkrun(P, 0, last_child, (void *)lc, 0, 60, &res);
    if (failed)
        fprintf(stderr, "%s, P=%d: %d member(s) failed\n",
                lc->kind == KIND_BCAST ? "bcast" : lc->kind == KIND_ALLREDUCE ? "allreduce"
                                                                              : lc->barrier,
                P, failed);
    assert_int_equal(failed, 0);
}

/* the race made certain: the check pauses between its two looks, the last rank is late */
static void test_exit_while_checked(void **state)
{
    (void)state;
    nc_wait_debug_peer_check_pause(PAUSE_NS);
    int nalg;
    const numacoll_algorithm_info_t *algs = numacoll_barrier_algorithms(&nalg);
    for (int P = 2; P <= 3; P++) {
        for (int a = 0; a < nalg; a++) {
            last_case_t lc = {.barrier = algs[a].name, .kind = KIND_BARRIER, .late = 1,
                              .calls = 3};
            run(&lc, P);
        }
        last_case_t bc = {.kind = KIND_BCAST, .late = 1, .calls = 3};
        run(&bc, P);
        last_case_t ar = {.kind = KIND_ALLREDUCE, .late = 1, .calls = 3};
        run(&ar, P);
    }
    nc_wait_debug_peer_check_pause(0);
}

/* many short-lived teams, members leaving as soon as their last barrier returns */
static void test_many_short_teams(void **state)
{
    (void)state;
    int nalg;
    const numacoll_algorithm_info_t *algs = numacoll_barrier_algorithms(&nalg);
    for (int round = 0; round < 40; round++) {
        last_case_t lc = {.barrier = algs[round % nalg].name, .kind = KIND_BARRIER,
                          .calls = 20 + round % 7};
        run(&lc, 3 + round % 3);
    }
}

int main(void)
{
    nc_test_clear_env();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_while_checked),
        cmocka_unit_test(test_many_short_teams),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
