/*
 * Correctness of the data-movement collectives (numacoll_allgather(v), numacoll_gather(v),
 * numacoll_scatter(v), numacoll_alltoall(v)) on forked teams of P = 1, 2, 3, 5, 8:
 *  - block sizes 0, 1, odd, around and across the chunk (NUMACOLL_MOVE_FRAGMENT=4K: chunks
 *    of 4144 bytes), a few MiB at small P, 16 MiB at P = 2; every root at small P, two
 *    roots at P = 8;
 *  - v-forms with zero sizes, uneven sizes and displacements in reverse order that leave
 *    gaps: every byte of a receive buffer outside the received blocks (gaps, the tail, a
 *    non-root's buffer of gather) keeps its canary;
 *  - NUMACOLL_IN_PLACE at the root (gather, scatter) and in allgather(v);
 *  - each path forced (NUMACOLL_MOVE=copy, NUMACOLL_MOVE=cma) and the automatic choice;
 *  - a member that cannot get its slots' pages beyond NUMACOLL_MOVE_EAGER streams in short
 *    chunks, and every member's call still succeeds with the right bytes;
 *  - every byte received is the one its owner sent (a pattern of owner, destination and
 *    position), so a block in the wrong place, shifted, or from the wrong owner shows.
 * Errors (test_move_fault.c has a killed member): bad arguments name the argument, members
 * that disagree on sizes get NUMACOLL_ERR_ARG where the API says, and the team's next call
 * works.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "coll/move/move.h"
#include "core/nc_internal.h"
#include "forkrun.h"
#include "test_move_common.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- case lists ------------------------------------------------------------------------ */

enum { MAX_CASES = 600 };
typedef struct launch {
    int n;
    mcase_t cases[MAX_CASES];
} launch_t;

static void add(launch_t *l, mcase_t c)
{
    assert_true(l->n < MAX_CASES);
    l->cases[l->n++] = c;
}

/* the kinds with a root */
static int rooted(kind_t k)
{
    return k == GATHER || k == GATHERV || k == SCATTER || k == SCATTERV;
}

/* Sizes around the 4K fragment's chunk (4144 bytes), every kind, every root (@p all_roots)
 * or two, in place and not; @p big: a few MiB too */
static void add_cases(launch_t *l, int P, int all_roots, int big, kind_t last_kind)
{
    static const size_t sizes[] = {0, 1, 13, 100, 4143, 4145, 3 * 4144 + 5};
    unsigned seed = 1;
    for (int k = 0; k <= (int)last_kind; k++) {
        int nroots = rooted((kind_t)k) ? (all_roots ? P : 2) : 1;
        for (int r = 0; r < nroots; r++) {
            int root = rooted((kind_t)k) ? (all_roots ? r : r * (P - 1)) : -1;
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
                for (int ip = 0; ip < 2; ip++) {
                    /* in place: at every size for one root, at two sizes for the others */
                    if (ip && r > 0 && s % 3 != 1) continue;
                    add(l, (mcase_t){(kind_t)k, sizes[s], root, ip, seed++, 0});
                }
        }
        if (big) /* a few MiB, not a multiple of the chunk */
            add(l, (mcase_t){(kind_t)k, (3u << 20) + 5, rooted((kind_t)k) ? P - 1 : -1, k & 1,
                             seed++, 0});
    }
}

/* ---- running ----------------------------------------------------------------------------- */

static int cases_worker(nc_forkctx_t *c)
{
    const launch_t *l = c->arg;
    int bad = 0;
    for (int i = 0; i < l->n && bad < 5; i++)
        bad += mc_run(c->team, c->rank, c->size, &l->cases[i], i) != 0;
    return bad ? 20 : 0;
}

static void run_members(int P, nc_forkrun_fn worker, void *arg)
{
    int baseline = nc_shm_baseline();
    nc_forkresult_t res;
    int failed = nc_forkrun(P, NC_FORK_BIND, worker, arg, 0, 60, &res);
    assert_int_equal(res.timed_out, 0);
    assert_int_equal(failed, 0);
    assert_true(nc_shm_settle(baseline) <= baseline);
}

static void set_env(const char *mode, const char *cma_min)
{
    nc_test_clear_env();
    setenv("NUMACOLL_TIMEOUT", "30", 1); /* a hang becomes an error naming the culprit */
    setenv("NUMACOLL_MOVE_FRAGMENT", "4K", 1);
    if (mode) setenv("NUMACOLL_MOVE", mode, 1);
    if (cma_min) setenv("NUMACOLL_MOVE_CMA_MIN", cma_min, 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
}

static launch_t the_launch;

static void run_modes(int P, int all_roots, int big)
{
    /* auto with a threshold inside the sizes: both paths in one call of the v-forms */
    static const char *modes[][2] = {{"copy", NULL}, {"cma", NULL}, {"auto", "4145"}};
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        set_env(modes[m][0], modes[m][1]);
        memset(&the_launch, 0, sizeof the_launch);
        add_cases(&the_launch, P, all_roots, big && m < 2, ALLTOALLV);
        if (P == 2 && big && m < 2) /* the largest block the issue names, once per path */
            add(&the_launch, (mcase_t){ALLGATHERV, (16u << 20) + 1, -1, 0, 99, 0});
        run_members(P, cases_worker, &the_launch);
        printf("P=%d NUMACOLL_MOVE=%s: %d calls checked\n", P, modes[m][0], the_launch.n);
    }
    set_env(NULL, NULL);
}

static void test_p1(void **state)
{
    (void)state;
    run_modes(1, 1, 0);
}
static void test_p2(void **state)
{
    (void)state;
    run_modes(2, 1, 1);
}
static void test_p3(void **state)
{
    (void)state;
    run_modes(3, 1, 1);
}
static void test_p5(void **state)
{
    (void)state;
    run_modes(5, 1, 0);
}
static void test_p8(void **state)
{
    (void)state;
    run_modes(8, 0, 0);
}

/* ---- errors ------------------------------------------------------------------------------ */

/* rc is @p want and the message holds @p n1 and @p n2 (if not NULL) */
static int check_error(int me, const char *what, int rc, int want, const char *n1, const char *n2)
{
    const char *msg = rc ? numacoll_last_error() : "";
    if (rc == want && (!n1 || strstr(msg, n1)) && (!n2 || strstr(msg, n2))) return 0;
    fprintf(stderr, "rank %d, %s: %s (wanted %s naming '%s' and '%s'): %s\n", me, what,
            numacoll_status_name(rc), numacoll_status_name(want), n1 ? n1 : "", n2 ? n2 : "",
            msg);
    return 1;
}

/* a checked allgather and scatter after an error: the team still works */
static int team_works(nc_forkctx_t *c, int step)
{
    mcase_t a = {ALLGATHERV, 777, -1, 0, 500u + (unsigned)step, 0};
    mcase_t b = {SCATTER, 5000, c->size - 1, 0, 600u + (unsigned)step, 0};
    return mc_run(c->team, c->rank, c->size, &a, 1000 + step) ||
           mc_run(c->team, c->rank, c->size, &b, 2000 + step);
}

static int errors_worker(nc_forkctx_t *c)
{
    numacoll_team_t *t = c->team;
    const int me = c->rank, P = c->size;
    static char in[64 * 8], out[64 * 8];
    size_t sizes[8] = {8, 8, 8, 8, 8, 8, 8, 8}, displs[8] = {0, 8, 16, 24, 32, 40, 48, 56};
    char n1[96], n2[96], mine[96];
    int bad = 0, step = 0;
#define EXPECT(what, call, want, a, b)                                                             \
    do {                                                                                           \
        bad += check_error(me, what, call, want, a, b);                                            \
        bad += team_works(c, step);                                                                \
        step++;                                                                                    \
    } while (0)
    snprintf(n1, sizeof n1, "root=%d", P);
    snprintf(n2, sizeof n2, "allowed: 0..%d", P - 1);
    EXPECT("gather root = P", numacoll_gather(t, in, out, 8, P), NUMACOLL_ERR_ARG, n1, n2);
    EXPECT("scatterv root -1", numacoll_scatterv(t, in, sizes, displs, out, 8, -1),
           NUMACOLL_ERR_ARG, "root=-1", n2);
    EXPECT("NULL team", numacoll_allgather(NULL, in, out, 8), NUMACOLL_ERR_ARG, "team is NULL",
           NULL);
    /* one member's invalid argument: it names the argument, its readers name it */
    const int odd = P - 1;
    snprintf(mine, sizeof mine, "rank %d passed invalid arguments", odd);
    EXPECT("allgather, NULL recvbuf on one member",
           numacoll_allgather(t, in, me == odd ? NULL : out, 8), NUMACOLL_ERR_ARG,
           me == odd ? "recvbuf is NULL" : mine, "numacoll_allgather");
    EXPECT("allgather, NULL sendbuf on one member",
           numacoll_allgather(t, me == odd ? NULL : in, out, 8), NUMACOLL_ERR_ARG,
           me == odd ? "sendbuf is NULL" : mine, "numacoll_allgather");
    EXPECT("allgatherv, NULL displs on one member",
           numacoll_allgatherv(t, in, 8, out, sizes, me == odd ? NULL : displs), NUMACOLL_ERR_ARG,
           me == odd ? "displs is NULL" : mine, "numacoll_allgatherv");
    EXPECT("allgatherv, sendbytes != recvbytes[me] on one member",
           numacoll_allgatherv(t, in, me == odd ? 9 : 8, out, sizes, displs), NUMACOLL_ERR_ARG,
           me == odd ? "sendbytes=9" : mine, me == odd ? "must be equal" : NULL);
    /* the root's invalid argument: every receiver of scatter fails; gather's senders do
     * not read anything and return OK */
    EXPECT("scatter, NULL sendbuf at the root",
           numacoll_scatter(t, me == 0 ? NULL : in, out, 8, 0), NUMACOLL_ERR_ARG,
           me == 0 ? "sendbuf is NULL" : "rank 0 passed invalid arguments", NULL);
    EXPECT("gatherv, NULL recvbytes at the root",
           numacoll_gatherv(t, in, 8, out, me == 0 ? NULL : sizes, displs, 0),
           me == 0 ? NUMACOLL_ERR_ARG : NUMACOLL_OK, me == 0 ? "recvbytes is NULL" : NULL, NULL);
    snprintf(n1, sizeof n1, "NUMACOLL_IN_PLACE on rank %d", me);
    EXPECT("gather, NUMACOLL_IN_PLACE on a non-root",
           numacoll_gather(t, NUMACOLL_IN_PLACE, out, 8, 0),
           me == 0 ? (P > 1 ? NUMACOLL_ERR_ARG : NUMACOLL_OK) : NUMACOLL_ERR_ARG,
           me == 0 ? (P > 1 ? "passed invalid arguments" : NULL) : n1, NULL);
    EXPECT("scatter, NUMACOLL_IN_PLACE on a non-root",
           numacoll_scatter(t, in, (void *)NUMACOLL_IN_PLACE, 8, 0),
           me == 0 ? NUMACOLL_OK : NUMACOLL_ERR_ARG, me == 0 ? NULL : n1,
           me == 0 ? NULL : "only the root");
    /* allowed: nothing to read or write */
    EXPECT("allgather of 0 bytes, NULL buffers", numacoll_allgather(t, NULL, NULL, 0),
           NUMACOLL_OK, NULL, NULL);
    EXPECT("gather, NULL recvbuf on the non-roots",
           numacoll_gather(t, in, me == 0 ? out : NULL, 8, 0), NUMACOLL_OK, NULL, NULL);
#undef EXPECT
    return bad ? 20 : 0;
}

static void test_bad_arguments(void **state)
{
    (void)state;
    set_env(NULL, NULL);
    for (int P = 1; P <= 3; P++)
        run_members(P, errors_worker, NULL);
}

/* Members that disagree on the sizes, each member the odd one in turn, under both paths */
static int mismatch_worker(nc_forkctx_t *c)
{
    numacoll_team_t *t = c->team;
    const int me = c->rank, P = c->size;
    static char in[3 * 20000], out[3 * 3 * 20000];
    int bad = 0, step = 0;
    for (int odd = 0; odd < P; odd++) {
        char want[96];
        size_t b = me == odd ? 20000 : 10;
        /* allgather: every member sees the odd signature (or, the odd one, the others') */
        if (me == odd) snprintf(want, sizeof want, "passed other arguments than rank %d", me);
        else snprintf(want, sizeof want, "rank %d passed other arguments than rank %d", odd, me);
        bad += check_error(me, "allgather, one member's size differs",
                           numacoll_allgather(t, in, out, b), NUMACOLL_ERR_ARG, want,
                           "every member must pass the same");
        bad += team_works(c, step++);
        /* allgatherv: one member's view of the sizes differs */
        size_t sizes[3] = {5, 6, 7}, displs[3] = {0, 5, 11};
        if (me == odd) sizes[(odd + 1) % P] = 4;
        bad += check_error(me, "allgatherv, one member's recvbytes differ",
                           numacoll_allgatherv(t, in, sizes[me], out, sizes, displs),
                           NUMACOLL_ERR_ARG, "passed other arguments", NULL);
        bad += team_works(c, step++);
        /* gather: the root finds it; the other senders do not (documented) */
        int root = (odd + 1) % P;
        int rc = numacoll_gather(t, in, out, b, root);
        if (me == root) {
            snprintf(want, sizeof want, "rank %d", odd);
            bad += check_error(me, "gather, one sender's size differs", rc, NUMACOLL_ERR_ARG,
                               want, NULL);
        } else if (me != odd) {
            bad += check_error(me, "gather, a sender", rc, NUMACOLL_OK, NULL, NULL);
        }
        bad += team_works(c, step++);
        /* scatterv: the receiver whose size differs finds it */
        size_t ss[3] = {100, 200, 300}, sd[3] = {0, 100, 300};
        size_t expect = me == odd ? 150 + (size_t)me : ss[me];
        rc = numacoll_scatterv(t, in, ss, sd, out, expect, root);
        if (me == odd && me != root) {
            snprintf(want, sizeof want, "sends %zu bytes to rank %d, which expects %zu", ss[me],
                     me, expect);
            bad += check_error(me, "scatterv, a receiver's size differs", rc, NUMACOLL_ERR_ARG,
                               want, NULL);
        } else if (me != odd) {
            bad += check_error(me, "scatterv, the others", rc, NUMACOLL_OK, NULL, NULL);
        }
        bad += team_works(c, step++);
    }
    return bad ? 20 : 0;
}

static void test_mismatch(void **state)
{
    (void)state;
    static const char *modes[] = {"copy", "cma"};
    for (int m = 0; m < 2; m++) {
        set_env(modes[m], NULL);
        run_members(3, mismatch_worker, NULL);
    }
    set_env(NULL, NULL);
}

/* Rank 1 sets another NUMACOLL_MOVE_FRAGMENT: the team's first call fails on every member
 * with NUMACOLL_ERR_CONFIG naming the setting (again at the next try); once rank 1 spells
 * the same size otherwise (4096 for 4K), the calls work. */
static int fragment_worker(nc_forkctx_t *c)
{
    int bad = 0;
    if (c->rank == 1) {
        setenv("NUMACOLL_MOVE_FRAGMENT", "8K", 1);
        if (numacoll_config_reload() != NUMACOLL_OK) return 21;
    }
    char in[64], out[3 * 64];
    memset(in, 1, sizeof in);
    const char *blame = c->rank == 1 ? "differs from rank 0's setting" : "rank 1 failed";
    for (int attempt = 0; attempt < 2; attempt++)
        bad += check_error(c->rank, "NUMACOLL_MOVE_FRAGMENT=8K on rank 1",
                           numacoll_allgather(c->team, in, out, 64), NUMACOLL_ERR_CONFIG,
                           "NUMACOLL_MOVE_FRAGMENT=8K", blame);
    if (c->rank == 1) {
        setenv("NUMACOLL_MOVE_FRAGMENT", "4096", 1);
        if (numacoll_config_reload() != NUMACOLL_OK) return 22;
    }
    bad += team_works(c, 0);
    return bad ? 20 : 0;
}

static void test_fragment_mismatch(void **state)
{
    (void)state;
    set_env(NULL, NULL);
    run_members(3, fragment_worker, NULL);
}

/* The slots get the pages beyond NUMACOLL_MOVE_EAGER at the first call whose stream needs
 * them. A member that cannot get them streams that call in short chunks within the eager
 * part (NUMACOLL_MOVE_EAGER=256: chunks of 240 bytes, a ring of 4 slots is 960 bytes), and
 * the call succeeds on every member with the right bytes: the victim fails its populate
 * at every call, as the root and as a non-root, for every kind, with blocks from one short
 * chunk to many rings of them; it says so once (NUMACOLL_VERBOSE=1). Then it gets its
 * pages and the team moves a large block in full chunks. */
static int lazy_worker(nc_forkctx_t *c)
{
    const int victim = *(const int *)c->arg, P = c->size;
    static const kind_t kinds[] = {GATHER, GATHERV, SCATTER, SCATTERV,
                                   ALLGATHER, ALLGATHERV, ALLTOALL, ALLTOALLV};
    /* 200: a stream of one short chunk; 230: two, beyond the eager part at every P (at
     * P = 2 with single copy from 4145 bytes, the only streams that need the pages) */
    static const size_t sizes[] = {200, 230, 5000, 40000};
    char log[] = "/tmp/numacoll-test-move-XXXXXX";
    int fd = -1, saved = -1, bad = 0, i = 0;
    char in[64], out[3 * 64];
    memset(in, 1, sizeof in);
    if (numacoll_allgather(c->team, in, out, 64) != NUMACOLL_OK) return 21; /* set-up */
    if (c->rank == victim) {
        fd = mkstemp(log);
        saved = dup(2);
        if (fd < 0 || saved < 0 || dup2(fd, 2) < 0) return 22;
    }
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (int r = 0; r < (rooted(kinds[k]) ? 2 : 1); r++)
            for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
                mcase_t m = {kinds[k], sizes[z], rooted(kinds[k]) ? (victim + r) % P : -1, 0,
                             (unsigned)(i + 1), 0};
                if (c->rank == victim) nc_seg_debug_fail_populate(1);
                bad += mc_run(c->team, c->rank, P, &m, i++) != 0;
            }
    if (c->rank == victim) {
        nc_seg_debug_fail_populate(0);
        dup2(saved, 2);
        close(saved);
        char text[4096] = "";
        ssize_t n = pread(fd, text, sizeof text - 1, 0);
        text[n > 0 ? n : 0] = 0;
        close(fd), unlink(log);
        const char *say = "streams its blocks in chunks of 240 bytes instead of 4144";
        const char *first = strstr(text, say);
        if (!first || strstr(first + 1, say)) {
            fprintf(stderr, "rank %d: not one verbose line saying it streams in short chunks: "
                            "%s\n", c->rank, text);
            bad++;
        }
    }
    mcase_t a = {ALLGATHERV, 65536, -1, 0, 99, 0};
    bad += mc_run(c->team, c->rank, P, &a, i) != 0;
    return bad ? 20 : 0;
}

static void test_lazy_pages_fail(void **state)
{
    (void)state;
    /* copy: every block in short chunks; auto from 4145 bytes: the larger blocks by single
     * copy (not oversubscribed), next to streamed ones in the v-forms */
    static const char *modes[][2] = {{"copy", NULL}, {"auto", "4145"}};
    static int victims[][2] = {{2, 0}, {2, 1}, {3, 0}, {3, 2}}; /* P, victim */
    for (int m = 0; m < 2; m++) {
        set_env(modes[m][0], modes[m][1]);
        setenv("NUMACOLL_MOVE_EAGER", "256", 1);
        setenv("NUMACOLL_MOVE_SLOTS", "4", 1);
        setenv("NUMACOLL_VERBOSE", "1", 1);
        assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
        for (int v = m; v < 4; v += 1 + m) /* auto: P=2 victim 1, P=3 victim 2 */
            run_members(victims[v][0], lazy_worker, &victims[v][1]);
    }
    set_env(NULL, NULL);
}

/* ---- single copy not permitted ------------------------------------------------------ */

/* Drop CAP_SYS_PTRACE from our effective set (root may read any process otherwise) */
static int drop_ptrace_capability(void)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    if (syscall(SYS_capget, &h, d) != 0) return -1;
    d[CAP_SYS_PTRACE / 32].effective &= ~(1u << (CAP_SYS_PTRACE % 32));
    return (int)syscall(SYS_capset, &h, d);
}

/* Rank 0 may not read rank 1 (rank 0 without CAP_SYS_PTRACE, rank 1 not dumpable): only
 * rank 0's probe fails, yet every member must turn single copy off (NUMACOLL_MOVE=cma),
 * rank 0 must say so (NUMACOLL_VERBOSE=1), and the blocks still arrive. */
static int not_permitted_worker(nc_forkctx_t *c)
{
    int bad = 0;
    char log[] = "/tmp/numacoll-test-move-XXXXXX";
    int fd = -1, saved = -1;
    if (c->rank == 0) {
        if (drop_ptrace_capability() != 0) return 21;
        fd = mkstemp(log);
        saved = dup(2);
        if (fd < 0 || saved < 0 || dup2(fd, 2) < 0) return 22;
    }
    if (c->rank == 1 && prctl(PR_SET_DUMPABLE, 0) != 0) return 23;
    mcase_t a = {ALLGATHER, 100000, -1, 0, 7, 0}, b = {SCATTERV, 70000, 2, 0, 8, 0};
    bad += mc_run(c->team, c->rank, c->size, &a, 0);
    bad += mc_run(c->team, c->rank, c->size, &b, 1);
    if (nc_move_uses_cma(c->team, NC_MOVE_ALLTOALL, 1 << 20)) {
        fprintf(stderr, "rank %d: single copy still on\n", c->rank);
        bad++;
    }
    if (c->rank == 0) {
        dup2(saved, 2);
        char text[4096] = "";
        ssize_t n = pread(fd, text, sizeof text - 1, 0);
        text[n > 0 ? n : 0] = 0;
        close(fd), unlink(log);
        if (!strstr(text, "process_vm_readv from rank 1 failed") ||
            !strstr(text, "single copy is off")) {
            fprintf(stderr, "rank 0: no verbose line saying single copy is off: %s\n", text);
            bad++;
        }
    }
    return bad ? 20 : 0;
}

static void test_cma_not_permitted(void **state)
{
    (void)state;
    set_env("cma", NULL);
    setenv("NUMACOLL_VERBOSE", "1", 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    run_members(3, not_permitted_worker, NULL);
    set_env(NULL, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_p1),           cmocka_unit_test(test_p2),
        cmocka_unit_test(test_p3),           cmocka_unit_test(test_p5),
        cmocka_unit_test(test_p8),           cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_mismatch),     cmocka_unit_test(test_fragment_mismatch),
        cmocka_unit_test(test_cma_not_permitted), cmocka_unit_test(test_lazy_pages_fail),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
