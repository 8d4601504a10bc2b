/*
 * Faults in a run of reductions: one member of a 4-process team is killed with SIGKILL
 * (or hangs, alive) at its call number KILL_AT, before entering it or in the middle of it
 * (while it copies chunk DIE_CHUNK of its input, the chunks before it posted), in
 * allreduces and reduces of one chunk and of 7 and 16 chunks, with flat, rsag and hier (on a
 * synthetic machine of two NUMA nodes), the victim a root or not, a group's leader or
 * not. In every case:
 *  - the survivors do not hang: each fails in call KILL_AT with NUMACOLL_ERR_PEER_DEAD
 *    (a hung victim: NUMACOLL_ERR_TIMEOUT, NUMACOLL_TIMEOUT=1) naming the victim, within
 *    NUMACOLL_TIMEOUT of entering the call;
 *  - every reduction that completed before delivered the right sums;
 *  - nothing is left in /dev/shm (half the cases use POSIX named segments, where a file
 *    left behind would show).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "coll/reduce/reduce_internal.h"
#include "topo/topo.h"
#include "forkrun.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

enum { P = 4, KILL_AT = 5, DIE_CHUNK = 6, FRAGMENT = 4096 };
#define FRAGMENT_ENV "4K"
#define TIMEOUT_ENV "4" /* dead members are found within ~20 ms of slow waiting */

/* STALL: stopped in the middle of the call (as DURING, but alive) until the survivors have
 * failed, then killed */
typedef enum { BEFORE, DURING, HANG, STALL } when_t;
/* hier cases: the victim's place in its NUMA group (checked) */
typedef enum { NO_GROUPS, GROUP_MEMBER, GROUP_LEADER } role_t;

/* A reduce's non-root may finish calls without the victim: one when it waits for the
 * others' posts only at its next call, or, with one flat chunk per call (it leaves right
 * after posting), as many as it has slots (SLOTS_ENV) before it must wait for the root to
 * free one */
enum { LATE_CALLS = 4 };
#define SLOTS_ENV "4"

typedef struct fault_case {
    const char *name;
    int root;        /* -1: allreduce */
    const char *alg; /* "flat" or "rsag" */
    size_t count;    /* doubles */
    int victim;
    when_t when;
    int posix;       /* NUMACOLL_SHM_BACKEND=posix */
    role_t role;     /* not NO_GROUPS: a synthetic machine of 2 NUMA nodes of 2 cores */
} fault_case_t;

typedef struct report {
    int rc;
    int call;       /* the failing call's number */
    int bad;        /* completed reductions with a wrong sum */
    double seconds; /* from entering the failing call to its return */
    long victim_posted; /* chunks of the failing call the victim had posted then */
    char msg[512];
} report_t;

typedef struct shared {
    const fault_case_t *fc;
    report_t reps[P];
    atomic_int failed; /* members that have their report */
    role_t victim_role; /* its place in hier's lowest level of groups (after call 1) */
} shared_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* rank r's element k in call i: small integers, so every order of the sum is exact */
static double input(int r, size_t k, int i)
{
    return (double)(r * 1000 + (int)(k % 4096) + 7 * i);
}

static double expected_sum(size_t k, int i)
{
    double s = 0;
    for (int r = 0; r < P; r++)
        s += input(r, k, i);
    return s;
}

static shared_t *g_shared; /* the case's shared block, for stall_then_die */

static void die_now(int sig)
{
    (void)sig;
    kill(getpid(), SIGKILL);
}

/* the STALL victim's fault handler: alive and stuck inside the call until the survivors
 * have their reports (or 20 s), then dead as the DURING victims */
static void stall_then_die(int sig)
{
    (void)sig;
    struct timespec nap = {0, 10000000};
    for (int i = 0; i < 2000 && atomic_load(&g_shared->failed) < P - 1; i++)
        nanosleep(&nap, NULL);
    kill(getpid(), SIGKILL);
}

/* offset of the page the victim cannot read: the one that holds chunk DIE_CHUNK's start */
static size_t trap_offset(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (size_t)DIE_CHUNK * FRAGMENT / page * page;
}

/* Make the victim die, as SIGKILL, when its call copies the chunk that starts in the
 * trapped page of @p in: its fault handler kills it. The chunks before are posted. */
static int arm_mid_call_death(double *in, int stall)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = stall ? stall_then_die : die_now;
    if (sigaction(SIGSEGV, &sa, NULL) || sigaction(SIGBUS, &sa, NULL)) return -1;
    return mprotect((char *)in + trap_offset(), (size_t)sysconf(_SC_PAGESIZE), PROT_NONE);
}

/* the number of the last chunk member @p m has posted: the highest stamp of its in slots */
static uint64_t last_posted(const nc_reduce_team_t *state, int m)
{
    uint64_t last = 0;
    for (unsigned s = 0; state && s < state->slots; s++) {
        /* acquire: pairs with m's release of the stamp (nothing else is read) */
        uint64_t v = atomic_load_explicit(rd_stamp(state, m, s), memory_order_acquire);
        if (v > last) last = v;
    }
    return last;
}

static role_t role_of(const nc_reduce_team_t *state, int me)
{
    const nc_hier_t *h = state->hier;
    if (!h || h->nlevels == 0 || h->group_of[me] < 0) return NO_GROUPS;
    return h->levels[0].groups[h->group_of[me]].members[0] == me ? GROUP_LEADER : GROUP_MEMBER;
}

static int fault_child(nc_forkctx_t *c)
{
    shared_t *sh = c->arg;
    const fault_case_t *fc = sh->fc;
    g_shared = sh;
    report_t *rep = &sh->reps[c->rank];
    const size_t n = fc->count, page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t bytes = (n * sizeof(double) + page - 1) / page * page;
    double *in = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    double *out = malloc(n * sizeof *out);
    if (in == MAP_FAILED || !out) return 40;
    const int victim = c->rank == fc->victim;
    const int gets = fc->root < 0 || fc->root == c->rank;
    uint64_t kill_first_chunk = 0; /* the number of call KILL_AT's first chunk */
    for (int i = 1; i <= KILL_AT + LATE_CALLS + 1; i++) {
        for (size_t k = 0; k < n; k++)
            in[k] = input(c->rank, k, i);
        if (victim && i == KILL_AT) {
            if (fc->when == BEFORE) kill(getpid(), SIGKILL);
            if ((fc->when == DURING || fc->when == STALL) &&
                arm_mid_call_death(in, fc->when == STALL))
                return 41;
            /* hung: back once the survivors have failed (or after 20 s), into a team they
             * left */
            double until = now_s() + 20;
            while (fc->when == HANG && atomic_load(&sh->failed) < P - 1 && now_s() < until)
                usleep(10000);
        }
        const nc_reduce_team_t *state = c->team->reduce; /* set by the first call */
        if (i == 2 && victim) sh->victim_role = role_of(state, c->rank);
        if (i == KILL_AT) kill_first_chunk = state->next_chunk;
        double t0 = now_s();
        int rc = numacoll_reduce_with(c->team, in, out, n, NUMACOLL_DOUBLE, NUMACOLL_OP_SUM,
                                      fc->root, fc->alg);
        if (rc) {
            rep->rc = rc;
            rep->call = i;
            rep->seconds = now_s() - t0;
            snprintf(rep->msg, sizeof rep->msg, "%s", numacoll_last_error());
            rep->victim_posted =
                (long)last_posted(state, fc->victim) - (long)kill_first_chunk + 1;
            atomic_fetch_add(&sh->failed, 1);
            break;
        }
        for (size_t k = 0; gets && k < n; k++)
            if (out[k] != expected_sum(k, i)) {
                rep->bad++;
                break;
            }
    }
    munmap(in, bytes);
    free(out);
    return rep->rc ? 0 : 50; /* 50: the reductions went on without the victim */
}

static void set_case_env(const fault_case_t *fc)
{
    nc_test_clear_env();
    setenv("NUMACOLL_TIMEOUT", fc->when == HANG || fc->when == STALL ? "1" : TIMEOUT_ENV, 1);
    setenv("NUMACOLL_REDUCE_FRAGMENT", FRAGMENT_ENV, 1);
    setenv("NUMACOLL_REDUCE_SLOTS", SLOTS_ENV, 1);
    if (fc->posix) setenv("NUMACOLL_SHM_BACKEND", "posix", 1);
    if (fc->role != NO_GROUPS) {
        setenv("NUMACOLL_TOPO_SYNTHETIC", "pack:1 numa:2 core:2 pu:1", 1);
        setenv("NUMACOLL_TOPO_MAP_BY", "numa", 1);
    }
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
}

static void test_fault(void **state)
{
    const fault_case_t *fc = *state;
    int baseline = nc_shm_baseline();
    set_case_env(fc);
    shared_t *sh =
        mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(sh != MAP_FAILED);
    memset(sh, 0, sizeof *sh);
    sh->fc = fc;
    nc_forkresult_t res;
    nc_forkrun(P, NC_FORK_BIND, fault_child, sh, 0, 60, &res);
    assert_int_equal(res.timed_out, 0);
    const int hang = fc->when == HANG, v = fc->victim;
    double slowest = 0;
    int timeouts_naming_victim = 0;
    for (int r = 0; r < P; r++) {
        const report_t *rep = &sh->reps[r];
        if (r == v && !hang) {
            assert_int_equal(res.exit_code[r], 128 + SIGKILL);
            continue;
        }
        int named = nc_msg_names_rank(rep->msg, v);
        /* a survivor that timed out and exited can be found dead by one that still waits
         * (the timeouts spread on a loaded machine): that report names the hung member as
         * a live one that did not arrive */
        /* stalled: every member entered the call, so the timeout names the member the wait
         * was for (a survivor that waited on another survivor's flag finds that one gone) */
        const int stall = fc->when == STALL;
        int want_rc = (hang || stall) && rep->rc == NUMACOLL_ERR_PEER_DEAD ? NUMACOLL_ERR_PEER_DEAD
                      : hang || stall                                     ? NUMACOLL_ERR_TIMEOUT
                                                                          : NUMACOLL_ERR_PEER_DEAD;
        if (stall && rep->rc == NUMACOLL_ERR_PEER_DEAD) named = 1; /* names the gone survivor */
        if (hang && rep->rc == NUMACOLL_ERR_PEER_DEAD) named = nc_msg_names_late(rep->msg, v);
        /* a reduce's non-root may need nothing more of the victim after its own posts
         * (hier: a member of another group): it completes the call and fails at the next */
        int late_ok = fc->root >= 0 && r != fc->root && rep->call > KILL_AT &&
                      rep->call <= KILL_AT + LATE_CALLS;
        int ok = res.exit_code[r] == 0 && rep->bad == 0 && (rep->call == KILL_AT || late_ok) &&
                 (r == v || (rep->rc == want_rc && named));
        if (!ok || getenv("NC_TEST_VERBOSE"))
            fprintf(stderr, "%s, victim %d: rank %d exit %d, %s in call %d after %.3f s, "
                    "%d bad, victim posted %ld chunks: %s\n", fc->name, v, r, res.exit_code[r],
                    numacoll_status_name(rep->rc), rep->call, rep->seconds, rep->bad,
                    rep->victim_posted, rep->msg);
        assert_int_equal(res.exit_code[r], 0);
        assert_int_equal(rep->bad, 0);
        assert_true(rep->call == KILL_AT || late_ok);
        if (r == v) { /* the hung one wakes into a team the others left */
            assert_true(rep->rc == NUMACOLL_ERR_PEER_DEAD || rep->rc == NUMACOLL_ERR_TIMEOUT);
            continue;
        }
        assert_int_equal(rep->rc, want_rc);
        assert_true(named);
        if (strstr(rep->msg, ": :")) fail_msg("an empty part in \"%s\"", rep->msg);
        timeouts_naming_victim +=
            rep->rc == NUMACOLL_ERR_TIMEOUT && nc_msg_names_rank(rep->msg, v);
        /* killed before: none of call KILL_AT's chunks; mid-call: those before the trap,
         * and the trap's own chunk for a flat reduce's root, which does not post its input
         * but reads it in its fold, after stamping the chunk */
        const int mid = fc->when == DURING || fc->when == STALL;
        const int reads_late = fc->root == v && strcmp(fc->alg, "flat") == 0;
        assert_int_equal(rep->victim_posted,
                         mid ? (long)(trap_offset() / FRAGMENT) + reads_late : 0);
        if (rep->seconds > slowest) slowest = rep->seconds;
    }
    if (fc->role != NO_GROUPS) assert_int_equal(sh->victim_role, fc->role);
    if (fc->when == STALL) assert_true(timeouts_naming_victim >= 1);
    printf("%s: the survivors failed within %.3f s\n", fc->name, slowest);
    munmap(sh, sizeof *sh);
    assert_true(nc_shm_settle(baseline) <= baseline);
    nc_test_clear_env();
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
}

/* 16 chunks: the survivors cannot finish the call without the victim's chunk DIE_CHUNK
 * (a member runs at most NUMACOLL_REDUCE_SLOTS = SLOTS_ENV chunks ahead of the slowest) */
#define LONG (16 * FRAGMENT / sizeof(double))
/* DIE_CHUNK whole chunks and a part of one */
#define LAST (DIE_CHUNK * FRAGMENT / sizeof(double) + 100)

static const fault_case_t cases[] = {
    {"allreduce flat, 1 chunk, killed before", -1, "flat", 100, 3, BEFORE, 0, 0},
    {"allreduce rsag, 1 chunk, killed before", -1, "rsag", 300, 0, BEFORE, 1, 0},
    {"allreduce rsag, 16 chunks, killed mid-call", -1, "rsag", LONG, 1, DURING, 1, 0},
    {"allreduce flat, 16 chunks, killed mid-call", -1, "flat", LONG, 0, DURING, 0, 0},
    {"reduce flat, 1 chunk, root killed before", 2, "flat", 100, 2, BEFORE, 1, 0},
    {"reduce rsag, 1 chunk, non-root killed before", 0, "rsag", 300, 3, BEFORE, 0, 0},
    {"reduce rsag, 16 chunks, root killed mid-call", 1, "rsag", LONG, 1, DURING, 0, 0},
    {"reduce flat, 16 chunks, non-root killed mid-call", 0, "flat", LONG, 2, DURING, 1, 0},
    {"reduce flat, 16 chunks, root killed mid-call", 3, "flat", LONG + 5, 3, DURING, 0, 0},
    /* the trap in the last chunk: a survivor that ignored the failed wait for it would
     * return success */
    {"allreduce flat, 7 chunks, killed in the last", -1, "flat", LAST, 2, DURING, 1, 0},
    {"reduce rsag, 7 chunks, non-root killed in the last", 0, "rsag", LAST, 3, DURING, 0, 0},
    /* hier's NUMA groups {0, 2} and {1, 3} (ranks placed round-robin over the nodes); the
     * reduce's rank 2 needs nothing of group {1, 3} and may complete the call */
    {"allreduce hier, 16 chunks, group leader killed mid-call", -1, "hier", LONG, 1, DURING, 0,
     GROUP_LEADER},
    {"reduce hier, 7 chunks, group member killed in the last", 0, "hier", LAST, 3, DURING, 1,
     GROUP_MEMBER},
    {"allreduce rsag, 16 chunks, hung before", -1, "rsag", LONG, 2, HANG, 1, 0},
    {"allreduce flat, 16 chunks, stopped mid-call", -1, "flat", LONG, 1, STALL, 0, 0},
};

int main(void)
{
    /* NC_TEST_FILTER=<case name> (cmocka's wildcards) runs only the matching cases */
    if (getenv("NC_TEST_FILTER")) cmocka_set_test_filter(getenv("NC_TEST_FILTER"));
    enum { NC = sizeof cases / sizeof cases[0] };
    struct CMUnitTest tests[NC];
    for (int i = 0; i < NC; i++)
        tests[i] = (struct CMUnitTest){
            .name = cases[i].name, .test_func = test_fault, .initial_state = (void *)&cases[i]};
    return _cmocka_run_group_tests("reduce_fault", tests, NC, NULL, NULL);
}
