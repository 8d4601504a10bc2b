/* Core: segments, teams, the wait policy's timeout and dead-peer reports, oversubscription. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/nc_internal.h"
#include "forkrun.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
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
    /* rank 1, alive, named as not arrived (beside it, the other waiter may be named as
     * exited: it timed out at the same time and its process ended) */
    if (!nc_msg_names_late(msg, 1) || !strstr(msg, "NUMACOLL_TIMEOUT=1 s expired")) {
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

/* Fork a child named @p comm (a command name with ')' and spaces, as /proc/<pid>/stat shows
 * it in parentheses) that exits at once if @p exit_now, else sleeps until killed (or its
 * parent ends). Returns
 * once the child's name is set (alive) or it has exited (left a zombie: WNOWAIT). */
static pid_t named_child(const char *comm, int exit_now)
{
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t parent = getpid();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_NAME, comm);
        if (exit_now) _exit(0);
        /* ends with the test program even if an assertion skips the kill below */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(0);
        if (write(ready[1], "x", 1) != 1) _exit(1);
        for (;;)
            pause();
    }
    close(ready[1]);
    if (exit_now) {
        siginfo_t si;
        assert_int_equal(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
    } else {
        char c;
        assert_int_equal(read(ready[0], &c, 1), 1);
    }
    close(ready[0]);
    return pid;
}

/* A process that has exited but is not yet reaped (a zombie) counts as gone: a member
 * killed while its parent waits for something else stays one. The state is read after the
 * last ')' of /proc/<pid>/stat: the names here would mislead a parse at the first one. */
static void test_zombie_is_gone(void **state)
{
    (void)state;
    assert_false(nc_pid_gone(0));
    assert_false(nc_pid_gone(getpid()));
    pid_t live = named_child("q) Z x", 0);
    pid_t zombie = named_child("a) S (b", 1);
    assert_false(nc_pid_gone(live));
    assert_true(nc_pid_gone(zombie));
    assert_int_equal(waitpid(zombie, NULL, 0), zombie);
    assert_true(nc_pid_gone(zombie)); /* reaped: no such process */
    kill(live, SIGKILL);
    siginfo_t si;
    assert_int_equal(waitid(P_PID, (id_t)live, &si, WEXITED | WNOWAIT), 0);
    assert_true(nc_pid_gone(live)); /* killed, not yet reaped */
    assert_int_equal(waitpid(live, NULL, 0), live);
    if (getuid() != 0) return;
    /* as root: seen from another user (kill() fails with EPERM), a zombie is gone too and a
     * live process is not */
    zombie = named_child("root's zombie", 1);
    pid_t checker = fork();
    assert_true(checker >= 0);
    if (checker == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0) _exit(2);
        _exit(!nc_pid_gone(zombie) ? 3 : nc_pid_gone(getppid()) ? 4 : 0);
    }
    int st;
    assert_int_equal(waitpid(checker, &st, 0), checker);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_int_equal(waitpid(zombie, NULL, 0), zombie);
}

/* Does the list after "rank(s) " in @p msg (as "1, 2 (exited)") name rank @p r? */
static int names_oob_rank(const char *msg, int r)
{
    const char *p = strstr(msg, "rank(s) ");
    if (!p) return 0;
    p += 8;
    while (*p >= '0' && *p <= '9') {
        char *end;
        if (strtol(p, &end, 10) == r) return 1;
        p = end;
        while (*p == ' ' || *p == ',' || *p == '(' || (*p >= 'a' && *p <= 'z') || *p == ')')
            if (*p++ == ')') break;
        while (*p == ',' || *p == ' ')
            p++;
    }
    return 0;
}

/* The fork bootstrap's barrier with NUMACOLL_TIMEOUT=1e-6 while rank 2 is late: the others
 * fail with NUMACOLL_ERR_TIMEOUT saying that NUMACOLL_TIMEOUT=1e-6 expired while they
 * waited for rank 2; a rank that exits before arriving is named as exited. */
static int oob_late_member(nc_forkctx_t *c)
{
    int exits = *(int *)c->arg;
    if (c->rank == 2) {
        if (exits) _exit(0);
        usleep(300000);
        numacoll_fork_oob_barrier(c->oob); /* completes the round or times out: either */
        return 0;
    }
    int rc = numacoll_fork_oob_barrier(c->oob);
    const char *msg = numacoll_last_error();
    int ok = exits ? rc == NUMACOLL_ERR_PEER_DEAD && strstr(msg, "2 (exited)")
                   : rc == NUMACOLL_ERR_TIMEOUT && strstr(msg, "NUMACOLL_TIMEOUT=1e-6 s expired");
    if (!ok || !names_oob_rank(msg, 2)) {
        fprintf(stderr, "rank %d: status %d, unexpected message: %s\n", c->rank, rc, msg);
        return 50;
    }
    return 0;
}

static void test_fork_oob_reports(void **state)
{
    (void)state;
    nc_forkresult_t res;
    int exits = 0;
    set_env("NUMACOLL_TIMEOUT", "1e-6");
    assert_int_equal(nc_forkrun(3, NC_FORK_NO_TEAM, oob_late_member, &exits, 0, 30, &res), 0);
    set_env("NUMACOLL_TIMEOUT", NULL);
    exits = 1;
    assert_int_equal(nc_forkrun(3, NC_FORK_NO_TEAM, oob_late_member, &exits, 0, 30, &res), 0);
}

/* Team creation with NUMACOLL_TIMEOUT=1e-6 while rank 2 is late: creation fails on the
 * others with a message saying that the timeout expired (the fork bootstrap's reason
 * carried through the team's set-up), naming rank 2, not only that "the OOB allgather
 * callback failed". */
static int team_late_member(nc_forkctx_t *c)
{
    numacoll_team_params_t p = {.rank = c->rank,
                                .size = c->size,
                                .allgather = numacoll_fork_oob_allgather,
                                .oob_ctx = c->oob};
    numacoll_team_t *t = NULL;
    if (c->rank == 2) usleep(300000);
    int rc = numacoll_team_create(&p, &t);
    if (rc == NUMACOLL_OK) {
        numacoll_team_destroy(t);
        return c->rank == 2 ? 0 : 60; /* the others cannot have waited 300 ms */
    }
    if (c->rank == 2) return 0; /* late: the others are gone, any failure is fine */
    const char *msg = numacoll_last_error();
    if (!strstr(msg, "NUMACOLL_TIMEOUT=1e-6 s expired") || !names_oob_rank(msg, 2)) {
        fprintf(stderr, "rank %d: status %d, unexpected message: %s\n", c->rank, rc, msg);
        return 61;
    }
    return 0;
}

static void test_team_create_timeout_says_so(void **state)
{
    (void)state;
    nc_forkresult_t res;
    set_env("NUMACOLL_TIMEOUT", "1e-6");
    int failed = nc_forkrun(3, NC_FORK_NO_TEAM, team_late_member, NULL, 0, 30, &res);
    set_env("NUMACOLL_TIMEOUT", NULL);
    assert_int_equal(failed, 0);
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

/* A team of 2 bound to 2 CPUs, whose members say (params.node_procs) that their job has
 * @p arg[0] processes on the node: more than the node's CPUs makes it oversubscribed
 * (waits yield at once), whatever the team's own size; rank 1 says 0 (unknown), the team
 * takes the largest. Before, only the members' own count counted: the row communicators of
 * a 2 x 2 grid in 4 processes on 2 CPUs spun, about 10x slower than the MPI's own. */
static int check_job_oversub(nc_forkctx_t *c)
{
    const int *arg = c->arg;
    numacoll_team_params_t p = {.rank = c->rank,
                                .size = c->size,
                                .allgather = numacoll_fork_oob_allgather,
                                .oob_ctx = c->oob,
                                .node_procs = c->rank == 0 ? arg[0] : 0};
    numacoll_team_t *t = NULL;
    if (numacoll_team_create(&p, &t) != NUMACOLL_OK) return 50;
    char d[1024];
    numacoll_team_describe(t, d, sizeof d);
    int over = t->oversubscribed, spin = (int)t->spin_limit;
    int said = strstr(d, "oversubscribed: the job has") != NULL;
    numacoll_team_destroy(t);
    if (over != arg[1] || (spin == 0) != arg[1] || said != arg[1]) {
        fprintf(stderr, "rank %d: node_procs %d: oversubscribed %d, spin %d, expected %d: %s\n",
                c->rank, arg[0], over, spin, arg[1], d);
        return 51;
    }
    return 0;
}

static void test_oversubscription_job(void **state)
{
    (void)state;
    long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpus < 2) skip(); /* a team of 2 is oversubscribed by itself */
    nc_forkresult_t res;
    int more[2] = {(int)ncpus + 1, 1}, fit[2] = {(int)ncpus, 0};
    const int fl = NC_FORK_NO_TEAM | NC_FORK_BIND;
    assert_int_equal(nc_forkrun(2, fl, check_job_oversub, more, 0, 60, &res), 0);
    assert_int_equal(nc_forkrun(2, fl, check_job_oversub, fit, 0, 60, &res), 0);
    set_env("NUMACOLL_OVERSUBSCRIBED", "no");
    more[1] = 0;
    assert_int_equal(nc_forkrun(2, fl, check_job_oversub, more, 0, 60, &res), 0);
    set_env("NUMACOLL_OVERSUBSCRIBED", NULL);
}

/* Members that differ in a setting that chooses the team's barrier or layout (here rank 1
 * sets NUMACOLL_BARRIER, or NUMACOLL_OVERSUBSCRIBED): creation fails on every member with
 * NUMACOLL_ERR_CONFIG naming it. Before, the team was made and its first barrier hung (each
 * member ran its own algorithm). */
static int differing_setting(nc_forkctx_t *c)
{
    const char *const *kv = c->arg;
    if (c->rank == 1 && (setenv(kv[0], kv[1], 1) != 0 || numacoll_config_reload() != NUMACOLL_OK))
        return 70;
    numacoll_team_params_t p = {.rank = c->rank,
                                .size = c->size,
                                .allgather = numacoll_fork_oob_allgather,
                                .oob_ctx = c->oob};
    numacoll_team_t *t = NULL;
    int rc = numacoll_team_create(&p, &t);
    if (rc == NUMACOLL_OK) {
        numacoll_barrier(t); /* hung before: let the harness's time limit say so */
        numacoll_team_destroy(t);
        return 71;
    }
    if (rc != NUMACOLL_ERR_CONFIG || !strstr(numacoll_last_error(), kv[0])) {
        fprintf(stderr, "rank %d: status %d: %s\n", c->rank, rc, numacoll_last_error());
        return 72;
    }
    return 0;
}

static void test_team_settings_differ(void **state)
{
    (void)state;
    nc_forkresult_t res;
    const char *barrier[2] = {"NUMACOLL_BARRIER", "dissemination"};
    const char *over[2] = {"NUMACOLL_OVERSUBSCRIBED", "yes"};
    set_env("NUMACOLL_BARRIER", "combining-tree");
    assert_int_equal(nc_forkrun(3, NC_FORK_NO_TEAM, differing_setting, barrier, 0, 10, &res), 0);
    set_env("NUMACOLL_BARRIER", NULL);
    set_env("NUMACOLL_OVERSUBSCRIBED", "no");
    assert_int_equal(nc_forkrun(3, NC_FORK_NO_TEAM, differing_setting, over, 0, 10, &res), 0);
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

/* NUMACOLL_SHM_HUGEPAGES. Each rank creates an 8 MiB segment whose own ranges are not
 * 2 MiB-aligned and reports, for its mapping (from /proc/self/smaps), whether the VMA has
 * the "nh" flag (MADV_NOHUGEPAGE) and how many kB are mapped as huge pages; rank 0 also the
 * growth of /proc/meminfo's ShmemHugePages while the segment exists. Under
 * tests/core.cmake's test_core_thp the kernel's shmem_enabled is "always" and
 * NC_TEST_THP_FORCED=1: then "system" must show huge pages (so the check can see them)
 * and "off" none. */
typedef struct thp_report {
    int nh[8];
    long huge_kb[8];
    long meminfo_growth_kb;
} thp_report_t;

/* the smaps entry of the mapping that starts at @p base: VmFlags has "nh"; huge kB */
static int smaps_of(const void *base, int *nh, long *huge_kb)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[512];
    int in = 0, found = 0;
    *nh = 0, *huge_kb = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = lo == (unsigned long)(uintptr_t)base;
            found |= in;
            continue;
        }
        if (!in) continue;
        if (!strncmp(line, "ShmemPmdMapped:", 15) || !strncmp(line, "FilePmdMapped:", 14))
            *huge_kb += atol(strchr(line, ':') + 1);
        if (!strncmp(line, "VmFlags:", 8)) *nh = strstr(line, " nh") != NULL;
    }
    fclose(f);
    return found ? 0 : -1;
}

static int seg_thp(nc_forkctx_t *c)
{
    thp_report_t *rep = c->arg; /* shared with the parent */
    size_t ps = nc_page_size(), size = (size_t)8 << 20, glob = 16 * ps;
    size_t own = ((size - glob) / (size_t)c->size) / ps * ps;
    long before = c->rank == 0 ? nc_meminfo_kb("ShmemHugePages") : 0;
    if (numacoll_fork_oob_barrier(c->oob)) return 30;
    nc_seg_t seg;
    if (nc_seg_create_collective(c->rank, c->size, numacoll_fork_oob_allgather, c->oob, size, glob,
                                 glob + (size_t)c->rank * own, own, own, -1, "the THP test",
                                 &seg) != NUMACOLL_OK)
        return 31;
    memset(seg.base, 0, glob); /* everyone touches the global range too */
    if (numacoll_fork_oob_barrier(c->oob)) return 32;
    if (smaps_of(seg.base, &rep->nh[c->rank], &rep->huge_kb[c->rank])) return 33;
    if (c->rank == 0) rep->meminfo_growth_kb = nc_meminfo_kb("ShmemHugePages") - before;
    if (numacoll_fork_oob_barrier(c->oob)) return 34;
    nc_seg_destroy(&seg);
    return 0;
}

static void test_seg_hugepages(void **state)
{
    (void)state;
    int forced = getenv("NC_TEST_THP_FORCED") != NULL;
    if (access("/sys/kernel/mm/transparent_hugepage", F_OK) != 0) skip(); /* no THP: no flag */
    const char *modes[] = {"off", "system"};
    for (int m = 0; m < 2; m++) {
        /* ShmemHugePages counts the whole system's: another process that creates shmem
         * while shmem_enabled=always may grow it during "off"; up to 3 tries, our own
         * segment's pages grow it in every one (and "system" gets 3 tries to see one) */
        for (int attempt = 1;; attempt++) {
            set_env("NUMACOLL_SHM_HUGEPAGES", modes[m]);
            nc_forkresult_t res;
            thp_report_t *shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE,
                                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
            assert_true(shared != MAP_FAILED);
            int P = 3;
            int failed = nc_forkrun(P, NC_FORK_NO_TEAM, seg_thp, shared, 0, 60, &res);
            thp_report_t rep = *shared;
            munmap(shared, sizeof *shared);
            assert_int_equal(failed, 0);
            long huge = 0;
            for (int r = 0; r < P; r++) {
                assert_int_equal(rep.nh[r], m == 0); /* the flag exactly when "off" */
                huge += rep.huge_kb[r];
            }
            printf("NUMACOLL_SHM_HUGEPAGES=%s: huge pages mapped %ld kB, ShmemHugePages +%ld "
                   "kB%s\n",
                   modes[m], huge, rep.meminfo_growth_kb,
                   forced ? " (shmem_enabled=always)" : "");
            if (m == 0) {
                assert_int_equal(huge, 0);
                if (forced && rep.meminfo_growth_kb > 0 && attempt < 3) continue;
                if (forced) assert_true(rep.meminfo_growth_kb <= 0);
            } else if (forced) {
                /* the kernel may find no free 2 MiB block at once (memory fragmented,
                 * e.g. right after a build); it compacts in the background */
                if (rep.meminfo_growth_kb <= 0 && huge == 0 && attempt < 3) continue;
                assert_true(rep.meminfo_growth_kb > 0 || huge > 0);
            }
            break;
        }
    }
    set_env("NUMACOLL_SHM_HUGEPAGES", NULL);
}

/* Two threads' standalone waits (kvdb locks, the fork bootstrap) keep their own timeouts:
 * a thread that starts a wait with a 2 ms limit must not cut short another thread's wait
 * without one. */
typedef struct wait_pair {
    _Atomic int go, started, late_rc;
} wait_pair_t;

static void *unlimited_waiter(void *p)
{
    wait_pair_t *wp = p;
    nc_wait_t w;
    nc_wait_init_standalone(&w, "unlimited wait", 0);
    atomic_store(&wp->started, 1);
    int rc = 0;
    /* the main thread sets go after 300 ms; this wait has no limit and must see it */
    while (!atomic_load_explicit(&wp->go, memory_order_acquire) && rc == 0)
        rc = nc_wait_step(&w);
    atomic_store(&wp->late_rc, rc);
    return NULL;
}

static void test_standalone_timeouts_per_wait(void **state)
{
    (void)state;
    wait_pair_t wp = {0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, unlimited_waiter, &wp), 0);
    while (!atomic_load(&wp.started))
        sched_yield();
    nc_wait_t w;
    nc_wait_init_standalone(&w, "short wait", 2000000); /* 2 ms */
    int rc = 0;
    while (rc == 0) /* nobody ends this wait: it must time out */
        rc = nc_wait_step(&w);
    assert_int_equal(rc, NUMACOLL_ERR_TIMEOUT);
    struct timespec ts = {0, 300000000};
    nanosleep(&ts, NULL);
    atomic_store_explicit(&wp.go, 1, memory_order_release);
    pthread_join(th, NULL);
    if (atomic_load(&wp.late_rc) != 0)
        fail_msg("the unlimited wait ended with %s: %s",
                 numacoll_status_name(atomic_load(&wp.late_rc)), numacoll_last_error());
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_team_segment),       cmocka_unit_test(test_timeout_names_missing),
        cmocka_unit_test(test_dead_peer_detected), cmocka_unit_test(test_oversubscription_values),
        cmocka_unit_test(test_oversubscription_job),
        cmocka_unit_test(test_team_settings_differ),
        cmocka_unit_test(test_oob_failure),        cmocka_unit_test(test_small_shm),
        cmocka_unit_test(test_seg_hugepages),      cmocka_unit_test(test_zombie_is_gone),
        cmocka_unit_test(test_fork_oob_reports),   cmocka_unit_test(test_standalone_timeouts_per_wait),
        cmocka_unit_test(test_team_create_timeout_says_so),
    };
    if (getenv("NC_TEST_SMALL_SHM")) cmocka_set_test_filter("test_small_shm");
    if (getenv("NC_TEST_THP_FORCED")) cmocka_set_test_filter("test_seg_hugepages");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
