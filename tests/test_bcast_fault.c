/*
 * Faults in a run of broadcasts: one member of a 4-process team is killed with SIGKILL
 * (or hangs, alive) before its call number KILL_AT. The roots rotate (call i from rank
 * i mod P), so the victim is a root, a receiver and, in the k-ary and chain trees, a node
 * that forwards to others. For the inline, queue (one set and several sets per call) and
 * CMA paths and for the flat, binary and chain trees:
 *  - the survivors do not hang: each ends with NUMACOLL_ERR_PEER_DEAD (a hung victim:
 *    NUMACOLL_ERR_TIMEOUT, NUMACOLL_TIMEOUT=1.5) and the message names the victim;
 *  - they stop within a bounded number of calls after the victim's last one (a root may
 *    run ahead of its receivers only by its queue depth);
 *  - every broadcast a survivor did complete delivered the right bytes;
 *  - nothing is left in /dev/shm.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "coll/bcast/bcast.h"
#include "core/nc_internal.h"
#include "forkrun.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

enum { P = 4 };

typedef struct fault_case {
    const char *name;
    size_t bytes;
    int kill_at;           /* the victim's call number that never happens */
    const char *env[3][2]; /* NUMACOLL_* settings of this case (NULL-terminated) */
} fault_case_t;

typedef struct report {
    int rc;
    int calls; /* the failing call's number */
    int bad;   /* broadcasts that completed with wrong bytes */
    char msg[512];
} report_t;

typedef struct args {
    const fault_case_t *fc;
    int victim;
    int hang; /* the victim sleeps instead of dying */
    report_t *reps;
} args_t;

static unsigned char pattern(int call, size_t j)
{
    return (unsigned char)(call * 131 + (int)(j % 251) * 7 + 1);
}

static int fault_child(nc_forkctx_t *c)
{
    const args_t *a = c->arg;
    report_t *rep = &a->reps[c->rank];
    size_t n = a->fc->bytes;
    unsigned char *buf = malloc(n);
    if (!buf) return 40;
    unsigned seed = 91u + (unsigned)c->rank;
    for (int i = 1; i <= 100000; i++) {
        if (c->rank == a->victim && i == a->fc->kill_at) {
            if (!a->hang) kill(getpid(), SIGKILL);
            sleep(5); /* hung, not dead: the others must time out */
        }
        int root = i % P;
        if (c->rank == root)
            for (size_t j = 0; j < n; j++)
                buf[j] = pattern(i, j);
        else
            memset(buf, 0, n);
        if ((i & 15) == 0) nc_random_delay(&seed, 2000);
        int rc = numacoll_bcast(c->team, buf, n, root);
        if (rc) {
            rep->rc = rc;
            rep->calls = i;
            snprintf(rep->msg, sizeof rep->msg, "%s", numacoll_last_error());
            free(buf);
            return 0;
        }
        for (size_t j = 0; j < n; j++)
            if (buf[j] != pattern(i, j)) {
                rep->bad++;
                break;
            }
    }
    free(buf);
    return 50; /* the broadcasts went on without the victim */
}

static void set_case_env(const fault_case_t *fc, const char *timeout)
{
    nc_test_clear_env();
    setenv("NUMACOLL_TIMEOUT", timeout, 1);
    for (int e = 0; e < 3 && fc->env[e][0]; e++)
        setenv(fc->env[e][0], fc->env[e][1], 1);
    const char *backend = getenv("NC_TEST_SHM_BACKEND");
    if (backend) setenv("NUMACOLL_SHM_BACKEND", backend, 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
}

static void run_case(const fault_case_t *fc, int victim, int hang, report_t *reps)
{
    memset(reps, 0, P * sizeof *reps);
    args_t a = {.fc = fc, .victim = victim, .hang = hang, .reps = reps};
    nc_forkresult_t res;
    nc_forkrun(P, NC_FORK_BIND, fault_child, &a, 0, 40, &res);
    assert_int_equal(res.timed_out, 0);
    for (int r = 0; r < P; r++) {
        if (r == victim && !hang) {
            assert_int_equal(res.exit_code[r], 128 + SIGKILL);
            continue;
        }
        int ok_rc = reps[r].rc == NUMACOLL_ERR_PEER_DEAD || reps[r].rc == NUMACOLL_ERR_TIMEOUT;
        int ok_calls = r == victim || (reps[r].calls >= fc->kill_at - 8 &&
                                       reps[r].calls <= fc->kill_at + 8 + P);
        if (res.exit_code[r] != 0 || !ok_rc || reps[r].bad || !ok_calls ||
            (r != victim && !nc_msg_names_rank(reps[r].msg, victim)) || getenv("NC_TEST_VERBOSE"))
            fprintf(stderr, "%s, victim %d%s: rank %d exit %d rc %s at call %d, %d bad: %s\n",
                    fc->name, victim, hang ? " (hung)" : "", r, res.exit_code[r],
                    numacoll_status_name(reps[r].rc), reps[r].calls, reps[r].bad, reps[r].msg);
        assert_int_equal(res.exit_code[r], 0);
        assert_true(ok_rc);
        assert_int_equal(reps[r].bad, 0);
        if (r == victim) continue; /* the hung one wakes into a team the others left */
        assert_true(nc_msg_names_rank(reps[r].msg, victim));
        /* a dead member is found by its pid within 20 ms of slow waiting, long before
         * the timeout; an alive one only by the timeout */
        if (hang && reps[r].rc == NUMACOLL_ERR_PEER_DEAD)
            /* a member that timed out first and exited can be found dead by one that waits
             * on it (a loaded machine spreads the timeouts): its report must still name the
             * hung member, as a live one that did not arrive */
            assert_true(nc_msg_names_late(reps[r].msg, victim));
        else
            assert_int_equal(reps[r].rc, hang ? NUMACOLL_ERR_TIMEOUT : NUMACOLL_ERR_PEER_DEAD);
        /* a root runs ahead of a missing receiver by at most its inline blocks (8) or its
         * queue's sets; within P calls the victim is a root the others wait for */
        assert_true(reps[r].calls >= fc->kill_at - 8);
        assert_true(reps[r].calls <= fc->kill_at + 8 + P);
    }
}

static void test_kill(void **state)
{
    const fault_case_t *fc = *state;
    int baseline = nc_shm_baseline();
    /* a dead member is found by its pid, not by the timeout: the timeout only bounds a
     * wait on a live member, which a loaded machine can stall for seconds (4 members on 2
     * CPUs moving 3 MiB in 64 KiB fragments) */
    set_case_env(fc, "20");
    report_t *reps =
        mmap(NULL, P * sizeof *reps, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(reps != MAP_FAILED);
    /* a leaf of every tree, rank 0 (the first root after the kill when kill_at % P == 3;
     * the tree's top) and rank 1 (inner node of the binary tree and the chain) */
    const int victims[] = {P - 1, 0, 1};
    for (size_t v = 0; v < sizeof victims / sizeof victims[0]; v++)
        run_case(fc, victims[v], 0, reps);
    munmap(reps, P * sizeof *reps);
    assert_true(nc_shm_settle(baseline) <= baseline);
    nc_test_clear_env();
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
}

/* a member that stops calling, alive: the others fail with NUMACOLL_ERR_TIMEOUT after
 * NUMACOLL_TIMEOUT seconds, naming it, and it fails too instead of hanging */
static void test_hang(void **state)
{
    const fault_case_t *fc = *state;
    set_case_env(fc, "1.5");
    report_t *reps =
        mmap(NULL, P * sizeof *reps, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(reps != MAP_FAILED);
    run_case(fc, 2, 1, reps);
    munmap(reps, P * sizeof *reps);
    nc_test_clear_env();
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
}

/* A CMA root that gives up while a receiver has not read its buffer yet: rank 1 dies before
 * call 5, rank 2 enters it 200 ms late, and the root, once its call has failed, overwrites
 * its buffer and stays alive for 400 ms (a program that goes on). Rank 2 must fail with
 * NUMACOLL_ERR_PEER_DEAD naming rank 1, not copy the changed buffer and return success, and
 * not fail with process_vm_readv's error once the root's process is gone (the race that
 * made the CMA case above fail once in CI). */
enum { LATE_P = 3, LATE_CALL = 5 };

static int cma_late_child(nc_forkctx_t *c)
{
    report_t *rep = &((report_t *)c->arg)[c->rank];
    size_t n = 1024 * 1024;
    unsigned char *buf = malloc(n);
    if (!buf) return 40;
    nc_bcast_info_t info;
    for (int i = 1; i <= LATE_CALL; i++) {
        if (i == LATE_CALL && c->rank == 1) kill(getpid(), SIGKILL);
        if (i == LATE_CALL && c->rank == 2) usleep(200000);
        for (size_t j = 0; j < n; j++)
            buf[j] = c->rank == 0 ? pattern(i, j) : 0;
        int rc = numacoll_bcast(c->team, buf, n, 0);
        if (i == 1 && (nc_bcast_info(c->team, &info) != NUMACOLL_OK || !info.cma_ok)) {
            rep->calls = -1; /* no CMA here: nothing to test */
            break;
        }
        if (rc) {
            rep->rc = rc;
            rep->calls = i;
            snprintf(rep->msg, sizeof rep->msg, "%s", numacoll_last_error());
            break;
        }
        for (size_t j = 0; j < n; j++)
            if (buf[j] != pattern(i, j)) {
                rep->bad++;
                break;
            }
    }
    if (c->rank == 0 && rep->rc != NUMACOLL_OK) {
        memset(buf, 0xEE, n);
        usleep(400000);
    }
    free(buf);
    return 0;
}

static void test_cma_late_reader(void **state)
{
    (void)state;
    int baseline = nc_shm_baseline();
    nc_test_clear_env();
    setenv("NUMACOLL_TIMEOUT", "5", 1);
    setenv("NUMACOLL_BCAST_TREE", "flat", 1);
    setenv("NUMACOLL_BCAST_CMA_MIN", "64K", 1);
    const char *backend = getenv("NC_TEST_SHM_BACKEND");
    if (backend) setenv("NUMACOLL_SHM_BACKEND", backend, 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    report_t *reps = mmap(NULL, LATE_P * sizeof *reps, PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(reps != MAP_FAILED);
    memset(reps, 0, LATE_P * sizeof *reps);
    nc_forkresult_t res;
    nc_forkrun(LATE_P, NC_FORK_BIND, cma_late_child, reps, 0, 30, &res);
    assert_int_equal(res.timed_out, 0);
    int no_cma = reps[0].calls == -1;
    for (int r = 0; r < LATE_P && !no_cma; r++) {
        if (r == 1) {
            assert_int_equal(res.exit_code[r], 128 + SIGKILL);
            continue;
        }
        fprintf(stderr, "rank %d: exit %d, %s at call %d, %d bad: %s\n", r, res.exit_code[r],
                numacoll_status_name(reps[r].rc), reps[r].calls, reps[r].bad, reps[r].msg);
        assert_int_equal(res.exit_code[r], 0);
        assert_int_equal(reps[r].bad, 0);
        assert_int_equal(reps[r].calls, LATE_CALL);
        assert_int_equal(reps[r].rc, NUMACOLL_ERR_PEER_DEAD);
        assert_true(nc_msg_names_rank(reps[r].msg, 1));
    }
    munmap(reps, LATE_P * sizeof *reps);
    assert_true(nc_shm_settle(baseline) <= baseline);
    nc_test_clear_env();
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    if (no_cma) skip(); /* process_vm_readv not permitted here */
}

static const fault_case_t cases[] = {
    {"inline 8 B, flat", 8, 303, {{"NUMACOLL_BCAST_TREE", "flat"}, {NULL, NULL}}},
    {"inline 200 B, binary", 200, 302, {{"NUMACOLL_BCAST_TREE", "kary"}, {NULL, NULL}}},
    {"queue 64 KiB, chain", 64 * 1024, 301, {{"NUMACOLL_BCAST_TREE", "chain"}, {NULL, NULL}}},
    {"queue 3 MiB in 256 KiB sets, binary",
     3 * 1024 * 1024,
     43,
     {{"NUMACOLL_BCAST_TREE", "kary"},
      {"NUMACOLL_BCAST_FRAGMENT", "64K"},
      {"NUMACOLL_BCAST_SLOTS", "4"}}},
    {"CMA 1 MiB, flat",
     1024 * 1024,
     62,
     {{"NUMACOLL_BCAST_TREE", "flat"}, {"NUMACOLL_BCAST_CMA_MIN", "64K"}, {NULL, NULL}}},
};

int main(void)
{
    enum { NC = sizeof cases / sizeof cases[0] };
    struct CMUnitTest tests[NC + 3];
    int n = 0;
    for (int i = 0; i < NC; i++)
        tests[n++] = (struct CMUnitTest){
            .name = cases[i].name, .test_func = test_kill, .initial_state = (void *)&cases[i]};
    tests[n++] = (struct CMUnitTest){
        .name = "hung member, inline", .test_func = test_hang, .initial_state = (void *)&cases[0]};
    tests[n++] = (struct CMUnitTest){
        .name = "hung member, queue", .test_func = test_hang, .initial_state = (void *)&cases[2]};
    tests[n++] = (struct CMUnitTest){.name = "CMA root gives up, late reader",
                                     .test_func = test_cma_late_reader};
    /* NC_TEST_SKIP: a cmocka pattern of cases to leave out (the posix-backend run skips
     * the hung-member cases, which do not depend on the backend) */
    if (getenv("NC_TEST_SKIP")) cmocka_set_skip_filter(getenv("NC_TEST_SKIP"));
    return _cmocka_run_group_tests("bcast_fault", tests, (size_t)n, NULL, NULL);
}
