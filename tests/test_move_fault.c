/*
 * A member killed in the middle of a run of data-movement calls: the victim runs calls
 * until a timer kills it (SIGALRM, whose default action ends the process at once, like
 * SIGKILL: no handler, no clean-up), wherever it is: copying a chunk into its slots,
 * reading another's, inside process_vm_readv, or waiting. The survivors must not hang:
 * each fails with NUMACOLL_ERR_PEER_DEAD naming the victim, every call they completed
 * before delivered the right bytes, and nothing is left in /dev/shm. Cases: allgather of
 * 1 MiB (both paths), gather of 256 KiB to a root that survives and one that is the victim,
 * scatter from the victim (both paths) and from a survivor (single copy: the root gives up
 * its call and waits for the live reader that may still read its buffer). And a member
 * that stops, alive, before a call: NUMACOLL_ERR_TIMEOUT naming it (test_hung_member).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "forkrun.h"
#include "test_move_common.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

enum { P = 3, KILL_AFTER = 3, MAX_CALLS = 100000 };

typedef struct fcase {
    const char *name;
    const char *mode;
    kind_t kind;
    size_t bytes;
    int root;
    int victim;
} fcase_t;

typedef struct report {
    int rc;
    int calls;
    int bad;
    char msg[512];
} report_t;

static const fcase_t *the_case;
static report_t *reports; /* shared: one per member */

static int fault_child(nc_forkctx_t *c)
{
    const fcase_t *fc = the_case;
    report_t *rep = &reports[c->rank];
    for (int i = 0; i < MAX_CALLS; i++) {
        if (c->rank == fc->victim && i == KILL_AFTER) {
            /* dies 0.2 to 3 ms into the calls from here */
            struct itimerval it = {{0, 0}, {0, 200 + (long)(getpid() % 2800)}};
            setitimer(ITIMER_REAL, &it, NULL);
        }
        mcase_t mc = {fc->kind, fc->bytes, fc->root, 0, (unsigned)i, 0};
        /* quiet: mc_run prints the failure, which is expected here */
        int saved = dup(2), devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 2);
        int wrong = mc_run(c->team, c->rank, c->size, &mc, i);
        dup2(saved, 2);
        close(saved), close(devnull);
        const char *msg = numacoll_last_error();
        if (wrong && strstr(msg, "exited before completing")) {
            rep->rc = NUMACOLL_ERR_PEER_DEAD;
            rep->calls = i;
            snprintf(rep->msg, sizeof rep->msg, "%s", msg);
            return 0;
        }
        if (wrong) {
            rep->bad++;
            rep->rc = -1000;
            snprintf(rep->msg, sizeof rep->msg, "call %d: wrong bytes or another error: %s", i,
                     msg);
            return 1;
        }
    }
    rep->calls = MAX_CALLS;
    return c->rank == fc->victim ? 0 : 1;
}

static void run_case(const fcase_t *fc)
{
    nc_test_clear_env();
    setenv("NUMACOLL_TIMEOUT", "10", 1);
    setenv("NUMACOLL_MOVE", fc->mode, 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    the_case = fc;
    reports = mmap(NULL, P * sizeof *reports, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
    assert_true(reports != MAP_FAILED);
    memset(reports, 0, P * sizeof *reports);
    int baseline = nc_shm_baseline();
    nc_forkresult_t res;
    nc_forkrun(P, NC_FORK_BIND, fault_child, NULL, 0, 60, &res);
    assert_int_equal(res.timed_out, 0);
    assert_int_equal(res.exit_code[fc->victim], 128 + SIGALRM);
    for (int r = 0; r < P; r++) {
        if (r == fc->victim) continue;
        const report_t *rep = &reports[r];
        int ok = res.exit_code[r] == 0 && rep->bad == 0 && rep->rc == NUMACOLL_ERR_PEER_DEAD &&
                 rep->calls >= KILL_AFTER && nc_msg_names_rank(rep->msg, fc->victim);
        if (!ok)
            fprintf(stderr, "%s: survivor %d: exit %d, %d calls, %d bad: %s\n", fc->name, r,
                    res.exit_code[r], rep->calls, rep->bad, rep->msg);
        assert_true(ok);
    }
    printf("%s: the survivors failed with PEER_DEAD naming rank %d after %d to %d calls\n",
           fc->name, fc->victim, reports[(fc->victim + 1) % P].calls,
           reports[(fc->victim + 2) % P].calls);
    assert_true(nc_shm_settle(baseline) <= baseline);
    munmap(reports, P * sizeof *reports);
    nc_test_clear_env();
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
}

static const fcase_t cases[] = {
    {"allgather 1 MiB, copy", "copy", ALLGATHER, 1 << 20, -1, 1},
    {"allgather 1 MiB, cma", "cma", ALLGATHER, 1 << 20, -1, 2},
    {"gather 256 KiB to a survivor, cma", "cma", GATHER, 256 << 10, 0, 1},
    {"gather 256 KiB to the victim, copy", "copy", GATHER, 256 << 10, 2, 2},
    {"scatter 256 KiB from the victim, cma", "cma", SCATTER, 256 << 10, 0, 0},
    {"scatter 1 MiB from a survivor to the victim, cma", "cma", SCATTER, 1 << 20, 0, 2},
    {"scatter 256 KiB from the victim, copy", "copy", SCATTERV, 256 << 10, 1, 1},
};

static void test_killed_member(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i]);
}

/* A member that stops before a call without dying: with NUMACOLL_TIMEOUT=1 the others fail
 * with NUMACOLL_ERR_TIMEOUT naming it as not arrived, within a few seconds, in both paths */
static int hang_child(nc_forkctx_t *c)
{
    report_t *rep = &reports[c->rank];
    char *sb = calloc(1, 1 << 20), *rb = calloc(P, 1 << 20);
    if (!sb || !rb) return 2;
    for (int i = 0; i < 10; i++) {
        if (c->rank == 1 && i == KILL_AFTER) {
            sleep(3); /* the others give up meanwhile (after 1 s) */
            _exit(0);
        }
        uint64_t t0 = (uint64_t)time(NULL);
        int rc = numacoll_allgather(c->team, sb, rb, 1 << 20);
        if (rc != NUMACOLL_OK) {
            rep->rc = rc;
            rep->calls = i;
            rep->bad = (int)((uint64_t)time(NULL) - t0); /* seconds it took */
            snprintf(rep->msg, sizeof rep->msg, "%s", numacoll_last_error());
            return 0;
        }
    }
    return 1;
}

static void test_hung_member(void **state)
{
    (void)state;
    static const char *modes[] = {"copy", "cma"};
    for (int m = 0; m < 2; m++) {
        nc_test_clear_env();
        setenv("NUMACOLL_TIMEOUT", "1", 1);
        setenv("NUMACOLL_MOVE", modes[m], 1);
        assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
        reports = mmap(NULL, P * sizeof *reports, PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        assert_true(reports != MAP_FAILED);
        memset(reports, 0, P * sizeof *reports);
        nc_forkresult_t res;
        nc_forkrun(P, NC_FORK_BIND, hang_child, NULL, 0, 60, &res);
        assert_int_equal(res.timed_out, 0);
        for (int r = 0; r < P; r++) {
            if (r == 1) continue;
            const report_t *rep = &reports[r];
            int ok = res.exit_code[r] == 0 && rep->rc == NUMACOLL_ERR_TIMEOUT &&
                     rep->calls == KILL_AFTER && rep->bad <= 3 && nc_msg_names_late(rep->msg, 1);
            if (!ok)
                fprintf(stderr, "%s: rank %d: exit %d, call %d, %d s: %s: %s\n", modes[m], r,
                        res.exit_code[r], rep->calls, rep->bad, numacoll_status_name(rep->rc),
                        rep->msg);
            assert_true(ok);
        }
        munmap(reports, P * sizeof *reports);
    }
    nc_test_clear_env();
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_killed_member),
        cmocka_unit_test(test_hung_member),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
