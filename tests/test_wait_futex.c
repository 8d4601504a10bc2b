/*
 * Kernel sleeps of the wait policy (src/core/wait.c), forced with
 * NUMACOLL_WAIT_FUTEX_AFTER_US=0 (sleep at the first slow step):
 *  - a member sleeping on a flag is woken by the post of its writer (barrier, bcast,
 *    allreduce): the writer posts only once the sleeper has announced itself, and the
 *    sleeper's kernel sleeps must end by a wake-up at least once (with lost wake-ups every
 *    sleep would end by its time limit, NC_FUTEX_SLEEP_MAX_NS), and the results are right;
 *  - a member that exits while another sleeps is still found dead (no NUMACOLL_TIMEOUT);
 *  - NUMACOLL_TIMEOUT still ends a wait that sleeps in the kernel;
 *  - a bad value of the variable is an error naming it and the allowed values.
 * Nothing here depends on timing: the writer waits for the sleeper's announcement.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/nc_internal.h"
#include "forkrun.h"

#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { P = 2, ROUNDS = 12 };

static void set_env(const char *name, const char *value)
{
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
}

/* Until some member of the team is announced as sleeping in the kernel (its count in one
 * of the team's sleeper buckets); 0 once seen, -1 after about 20 s (a broken test). */
static int await_sleeper(numacoll_team_t *t)
{
    for (long i = 0; i < 20L * 1000 * 1000 / 50; i++) {
        for (int b = 0; b < NC_SLEEP_BUCKETS; b++)
            if (atomic_load_explicit(&t->sleepers[b], memory_order_relaxed)) return 0;
        usleep(50);
    }
    return -1;
}

enum { OP_BARRIER, OP_BCAST, OP_ALLREDUCE };

/* Rank 0 is the late writer: it enters each collective only once rank 1 sleeps in it.
 * Rank 1 checks the results and its kernel sleeps: exit 12 if it never slept, 13 if no
 * sleep ended by a wake-up, 14 for a wrong result. */
static int wake_child(nc_forkctx_t *c)
{
    const int op = *(const int *)c->arg;
    int bad = 0;
    /* round -1 sets up the collective's state (through the bootstrap's allgather, whose
     * waits do not sleep in the kernel): rank 0 does not wait for a sleeper there */
    for (int i = -1; i < ROUNDS; i++) {
        if (c->rank == 0 && i >= 0 && await_sleeper(c->team)) return 10;
        int rc;
        if (op == OP_BARRIER) {
            rc = numacoll_barrier(c->team);
        } else if (op == OP_BCAST) {
            char buf[64];
            memset(buf, c->rank == 0 ? 'b' + i : 0, sizeof buf);
            rc = numacoll_bcast(c->team, buf, sizeof buf, 0);
            for (size_t k = 0; rc == 0 && k < sizeof buf; k++)
                bad |= buf[k] != 'b' + i;
        } else {
            double in = c->rank + i, out = 0;
            rc = numacoll_allreduce(c->team, &in, &out, 1, NUMACOLL_DOUBLE, NUMACOLL_OP_SUM);
            bad |= rc == 0 && out != 1 + 2.0 * i;
        }
        if (rc) {
            fprintf(stderr, "rank %d, round %d: %s\n", c->rank, i, numacoll_last_error());
            return 11;
        }
    }
    uint64_t sleeps, woken;
    nc_wait_futex_counts(&sleeps, &woken);
    if (c->rank == 1 && getenv("NC_TEST_VERBOSE"))
        fprintf(stderr, "rank 1: %llu kernel sleeps, %llu ended by a wake-up\n",
                (unsigned long long)sleeps, (unsigned long long)woken);
    if (bad) return 14;
    if (c->rank == 1 && sleeps == 0) return 12;
    if (c->rank == 1 && woken == 0) return 13;
    return 0;
}

static void run_wake(int op)
{
    set_env("NUMACOLL_WAIT_FUTEX_AFTER_US", "0");
    nc_forkresult_t res;
    nc_forkrun(P, 0, wake_child, &op, 0, 60, &res);
    set_env("NUMACOLL_WAIT_FUTEX_AFTER_US", NULL);
    assert_int_equal(res.timed_out, 0);
    assert_int_equal(res.exit_code[0], 0);
    assert_int_equal(res.exit_code[1], 0);
}

static void test_barrier_wakes(void **state)
{
    (void)state;
    run_wake(OP_BARRIER);
}
static void test_bcast_wakes(void **state)
{
    (void)state;
    run_wake(OP_BCAST);
}
static void test_allreduce_wakes(void **state)
{
    (void)state;
    run_wake(OP_ALLREDUCE);
}

/* Rank 0 exits (fault 0) or stays away for 3 s (fault 1) once rank 1 sleeps in a barrier;
 * rank 1 must fail with the expected status, naming rank 0, after sleeping in the kernel:
 * exit 0 if so, 20 + what went wrong otherwise. */
static int fault_child(nc_forkctx_t *c)
{
    const int hang = *(const int *)c->arg;
    if (c->rank == 0) {
        if (await_sleeper(c->team)) return 10;
        if (!hang) _exit(0); /* gone without entering the barrier */
        sleep(3);
        (void)numacoll_barrier(c->team); /* fails: rank 1 gave up */
        return 0;
    }
    int rc = numacoll_barrier(c->team);
    uint64_t sleeps, woken;
    nc_wait_futex_counts(&sleeps, &woken);
    if (getenv("NC_TEST_VERBOSE"))
        fprintf(stderr, "rank 1: %s (%llu kernel sleeps)\n", numacoll_last_error(),
                (unsigned long long)sleeps);
    if (rc != (hang ? NUMACOLL_ERR_TIMEOUT : NUMACOLL_ERR_PEER_DEAD)) return 21;
    if (!nc_msg_names_rank(numacoll_last_error(), 0)) return 22;
    if (sleeps == 0) return 23;
    return 0;
}

static void run_fault(int hang)
{
    set_env("NUMACOLL_WAIT_FUTEX_AFTER_US", "0");
    set_env("NUMACOLL_TIMEOUT", hang ? "0.5" : NULL);
    nc_forkresult_t res;
    nc_forkrun(P, 0, fault_child, &hang, 0, 60, &res);
    set_env("NUMACOLL_TIMEOUT", NULL);
    set_env("NUMACOLL_WAIT_FUTEX_AFTER_US", NULL);
    assert_int_equal(res.timed_out, 0);
    assert_int_equal(res.exit_code[1], 0);
}

/* no NUMACOLL_TIMEOUT: only the dead-member check (every 20 ms) can end the wait */
static void test_dead_peer_found_while_sleeping(void **state)
{
    (void)state;
    run_fault(0);
}

static void test_timeout_while_sleeping(void **state)
{
    (void)state;
    run_fault(1);
}

static void test_bad_value(void **state)
{
    (void)state;
    const char *bad[] = {"-2", "soon", "1e3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("NUMACOLL_WAIT_FUTEX_AFTER_US", bad[i], 1);
        assert_int_equal(numacoll_config_reload(), NUMACOLL_ERR_CONFIG);
        const char *msg = numacoll_last_error();
        assert_non_null(strstr(msg, "NUMACOLL_WAIT_FUTEX_AFTER_US"));
        assert_non_null(strstr(msg, "-1..1000000000"));
    }
    set_env("NUMACOLL_WAIT_FUTEX_AFTER_US", NULL);
}

int main(void)
{
    nc_test_clear_env();
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_barrier_wakes),
        cmocka_unit_test(test_bcast_wakes),
        cmocka_unit_test(test_allreduce_wakes),
        cmocka_unit_test(test_dead_peer_found_while_sleeping),
        cmocka_unit_test(test_timeout_while_sleeping),
        cmocka_unit_test(test_bad_value),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
