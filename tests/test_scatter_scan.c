/*
 * Correctness of numacoll_reduce_scatter_block, numacoll_reduce_scatter, numacoll_scan and
 * numacoll_exscan on forked teams of P = 1, 2, 3, 5, 8:
 *  - results bitwise against a serial fold computed here in rank order, ((x_0 op x_1) op
 *    x_2) ...: every allowed (type, op) pair at P = 3 (test_reduce_elements.h's element
 *    model: inputs whose bits show the order), representative pairs at every P;
 *  - sizes from 0 to 3 MiB (one chunk, many chunks, flat and chain scans), uneven
 *    reduce_scatter counts with zeros, in place (MPI's meanings) and not, and untouched
 *    bytes after every output; exscan leaves member 0's recvbuf alone (a canary);
 *  - members that disagree on the count, the counts or the type: NUMACOLL_ERR_ARG on every
 *    member naming the other member and itself, and the team's next call works; bad
 *    arguments: a message naming them; a killed member: NUMACOLL_ERR_PEER_DEAD naming it;
 *  - small calls write only the slots' first pages (NUMACOLL_REDUCE_EAGER): the rest of a
 *    member's reduction area stays out of memory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "coll/reduce/reduce_internal.h"
#include "forkrun.h"
#include "test_reduce_elements.h"

#include <signal.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef enum { RSB, RS, SCAN, EXSCAN } kind_t;
static const char *const kind_names[] = {"reduce_scatter_block", "reduce_scatter", "scan",
                                         "exscan"};

typedef struct scase {
    kind_t kind;
    const type_info_t *ti;
    numacoll_op_t op;
    size_t count;  /* rsb: recvcount; rs: the base of the counts; scans: count */
    int in_place;
    uint64_t seed;
} scase_t;

enum { GUARD = 3, MAX_CASES = 1200 };

typedef struct case_list {
    int n;
    scase_t c[MAX_CASES];
} case_list_t;

/* member m's count of a reduce_scatter: uneven, every third member none */
static size_t counts_of(const scase_t *cs, int m)
{
    if (cs->kind == RSB) return cs->count;
    return m % 3 == 1 ? 0 : cs->count + (size_t)m * 37;
}

static void report(const nc_forkctx_t *c, int i, const scase_t *cs, const char *fmt, ...)
{
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    fprintf(stderr, "rank %d of %d, case %d: %s %s of %zu %s%s: %s\n", c->rank, c->size, i,
            kind_names[cs->kind], numacoll_op_name(cs->op), cs->count,
            numacoll_dtype_name(cs->ti->dtype), cs->in_place ? ", in place" : "", what);
}

/* element k (of the whole vector) of the fold of members 0..last, in rank order */
static void ref_fold(const scase_t *cs, int last, size_t k, unsigned char *acc)
{
    unsigned char x[MAX_ELEM];
    gen(cs->ti, cs->op, cs->seed, 0, k, acc);
    for (int r = 1; r <= last; r++) {
        gen(cs->ti, cs->op, cs->seed, r, k, x);
        ref_step(cs->ti, cs->op, acc, x);
    }
}

static int run_case(nc_forkctx_t *c, int i, const scase_t *cs)
{
    const type_info_t *ti = cs->ti;
    const size_t es = ti->size;
    const int me = c->rank, P = c->size, scan = cs->kind >= SCAN;
    size_t counts[64], off = 0, total = 0;
    for (int m = 0; m < P; m++) {
        counts[m] = scan ? cs->count : counts_of(cs, m);
        if (m < me) off += counts[m];
        total += counts[m];
    }
    if (scan) total = cs->count, off = 0;
    const size_t mine = counts[me];
    /* in place: recvbuf holds the input (the whole vector), else its own buffer */
    const size_t out_n = cs->in_place ? total : mine;
    unsigned char *in = malloc(total * es + 1), *out = malloc((out_n + GUARD) * es + 1);
    unsigned char *before = malloc((out_n + GUARD) * es + 1);
    unsigned char acc[MAX_ELEM];
    if (!in || !out || !before) return 40;
    for (size_t k = 0; k < total; k++)
        gen(ti, cs->op, cs->seed, me, k, in + k * es);
    memset(out, me == 0 && cs->kind == EXSCAN ? 0x5A : 0x5C, (out_n + GUARD) * es);
    if (cs->in_place) memcpy(out, in, total * es);
    memcpy(before, out, (out_n + GUARD) * es);
    const void *send = cs->in_place ? NUMACOLL_IN_PLACE : in;
    int rc;
    switch (cs->kind) {
    case RSB:
        rc = numacoll_reduce_scatter_block(c->team, send, out, cs->count, ti->dtype, cs->op);
        break;
    case RS: rc = numacoll_reduce_scatter(c->team, send, out, counts, ti->dtype, cs->op); break;
    case SCAN: rc = numacoll_scan(c->team, send, out, cs->count, ti->dtype, cs->op); break;
    default: rc = numacoll_exscan(c->team, send, out, cs->count, ti->dtype, cs->op); break;
    }
    int fail = 0;
    if (rc != NUMACOLL_OK) {
        report(c, i, cs, "returned %s: %s", numacoll_status_name(rc), numacoll_last_error());
        fail = 10;
    }
    if (!fail && me == 0 && cs->kind == EXSCAN) {
        if (memcmp(out, before, (out_n + GUARD) * es)) {
            report(c, i, cs, "member 0's recvbuf was written");
            fail = 11;
        }
    } else {
        const int last = cs->kind == EXSCAN ? me - 1 : cs->kind == SCAN ? me : P - 1;
        for (size_t k = 0; !fail && k < mine; k++) {
            ref_fold(cs, last, off + k, acc);
            if (!elem_equal(ti, acc, out + k * es)) {
                char want[200], got[200];
                report(c, i, cs, "element %zu differs from the rank-order fold: want %s, got %s",
                       k, format_elem(want, sizeof want, ti, acc),
                       format_elem(got, sizeof got, ti, out + k * es));
                fail = 12;
            }
        }
        /* nothing after the output is written (in place: after the input vector) */
        size_t end = cs->in_place ? total : mine;
        if (!fail && memcmp(out + end * es, before + end * es, GUARD * es)) {
            report(c, i, cs, "bytes after the output were written");
            fail = 13;
        }
    }
    free(in);
    free(out);
    free(before);
    return fail;
}

static int cases_child(nc_forkctx_t *c)
{
    const case_list_t *l = c->arg;
    for (int i = 0; i < l->n; i++) {
        int rc = run_case(c, i, &l->c[i]);
        if (rc) return rc;
    }
    return 0;
}

static void run_cases(int P, const case_list_t *l, double timeout)
{
    nc_forkresult_t res;
    int failed = nc_forkrun(P, 0, cases_child, (void *)l, 0, timeout, &res);
    assert_int_equal(res.timed_out, 0);
    assert_int_equal(failed, 0);
}

static void add(case_list_t *l, kind_t kind, numacoll_dtype_t dt, numacoll_op_t op, size_t count,
                int in_place)
{
    assert_true(l->n < MAX_CASES);
    l->c[l->n] = (scase_t){kind, type_of(dt), op, count, in_place, 1000u + (uint64_t)l->n};
    l->n++;
}

static case_list_t g_list; /* large: not on the stack */

static void clear_env(void)
{
    nc_test_clear_env();
    setenv("NUMACOLL_TIMEOUT", "20", 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
}

/* every allowed (type, op) pair, each kind, at P = 3 */
static void test_all_pairs(void **state)
{
    (void)state;
    clear_env();
    g_list.n = 0;
    for (int t = 0; t < NTYPES; t++)
        for (int op = 0; op <= NUMACOLL_OP_MAXLOC; op++) {
            if (!op_allowed(&types[t], (numacoll_op_t)op)) continue;
            int ip = (t + op) % 2;
            add(&g_list, RSB, types[t].dtype, (numacoll_op_t)op, 5, ip);
            add(&g_list, RS, types[t].dtype, (numacoll_op_t)op, 3, !ip);
            add(&g_list, SCAN, types[t].dtype, (numacoll_op_t)op, 7, ip);
            add(&g_list, EXSCAN, types[t].dtype, (numacoll_op_t)op, 7, !ip);
        }
    run_cases(3, &g_list, 120);
}

/* representative pairs at every P; sizes 0 to many chunks (NUMACOLL_REDUCE_FRAGMENT 32K) */
static void test_sizes(void **state)
{
    (void)state;
    static const struct {
        numacoll_dtype_t dt;
        numacoll_op_t op;
    } pairs[] = {{NUMACOLL_DOUBLE, NUMACOLL_OP_SUM},
                 {NUMACOLL_INT32, NUMACOLL_OP_PROD},
                 {NUMACOLL_LONG_DOUBLE_INT, NUMACOLL_OP_MINLOC},
                 {NUMACOLL_UINT8, NUMACOLL_OP_BXOR},
                 {NUMACOLL_FLOAT, NUMACOLL_OP_MAX}}; /* signed zeros, NaNs: order shows */
    static const size_t sizes[] = {0, 1, 100, 9000};
    static const int Ps[] = {1, 2, 3, 5, 8};
    clear_env();
    for (size_t p = 0; p < sizeof Ps / sizeof Ps[0]; p++) {
        g_list.n = 0;
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            for (size_t q = 0; q < sizeof pairs / sizeof pairs[0]; q++)
                for (int k = RSB; k <= EXSCAN; k++)
                    add(&g_list, (kind_t)k, pairs[q].dt, pairs[q].op, sizes[s],
                        (int)(s + q + (size_t)k) % 2);
        if (Ps[p] == 3) { /* MiB: slices and prefixes of many chunks */
            add(&g_list, RSB, NUMACOLL_DOUBLE, NUMACOLL_OP_SUM, 1 << 17, 0);       /* 1 MiB each */
            add(&g_list, RS, NUMACOLL_FLOAT, NUMACOLL_OP_SUM, 150000, 1);
            add(&g_list, SCAN, NUMACOLL_DOUBLE, NUMACOLL_OP_SUM, 3 << 17, 0);      /* 3 MiB */
            add(&g_list, EXSCAN, NUMACOLL_INT64, NUMACOLL_OP_MAX, 3 << 17, 1);
            add(&g_list, SCAN, NUMACOLL_FLOAT, NUMACOLL_OP_PROD, 1 << 18, 1);
        }
        run_cases(Ps[p], &g_list, 120);
    }
}

/* ---- mismatches, bad arguments, a killed member --------------------------------------- */

/* rc is NUMACOLL_ERR_ARG and the message names member @p other and us */
static int names_both(int rc, int other, int me)
{
    char a[64], b[64];
    snprintf(a, sizeof a, "rank %d passed other arguments", other);
    snprintf(b, sizeof b, "than rank %d", me);
    const char *msg = numacoll_last_error();
    if (rc == NUMACOLL_ERR_ARG && strstr(msg, a) && strstr(msg, b)) return 1;
    fprintf(stderr, "rank %d: %s: %s\n", me, numacoll_status_name(rc), msg);
    return 0;
}

static int mismatch_child(nc_forkctx_t *c)
{
    const int me = c->rank;
    double in[4096], out[4096];
    for (int k = 0; k < 4096; k++)
        in[k] = me + k;
    /* rank 1 passes another count: everyone names its first differing member */
    int rc = numacoll_scan(c->team, in, out, me == 1 ? 101 : 100, NUMACOLL_DOUBLE,
                           NUMACOLL_OP_SUM);
    if (!names_both(rc, me == 0 ? 1 : me == 1 ? 0 : 1, me)) return 1;
    /* large: scan-chain against scan-flat on rank 2 */
    rc = numacoll_exscan(c->team, in, out, me == 2 ? 100 : 4000, NUMACOLL_DOUBLE, NUMACOLL_OP_SUM);
    if (!names_both(rc, me == 2 ? 0 : 2, me)) return 2;
    /* the same total cut in other slices on rank 2 */
    size_t counts[3] = {10, 20, 30}, odd[3] = {20, 10, 30};
    rc = numacoll_reduce_scatter(c->team, in, out, me == 2 ? odd : counts, NUMACOLL_DOUBLE,
                                 NUMACOLL_OP_SUM);
    if (!names_both(rc, me == 2 ? 0 : 2, me)) return 3;
    /* another type on rank 0 */
    rc = numacoll_reduce_scatter_block(c->team, in, out, 50,
                                       me == 0 ? NUMACOLL_INT64 : NUMACOLL_DOUBLE,
                                       NUMACOLL_OP_SUM);
    if (!names_both(rc, me == 0 ? 1 : 0, me)) return 4;
    /* the team works afterwards */
    rc = numacoll_scan(c->team, in, out, 100, NUMACOLL_DOUBLE, NUMACOLL_OP_SUM);
    double want = 0; /* out[7]: the sum over r <= me of r + 7 */
    for (int r = 0; r <= me; r++)
        want += r + 7;
    if (rc || out[7] != want) {
        fprintf(stderr, "rank %d: scan after mismatches: %s, out[7] %g want %g\n", me,
                numacoll_status_name(rc), out[7], want);
        return 5;
    }
    return 0;
}

static void test_mismatch(void **state)
{
    (void)state;
    clear_env();
    nc_forkresult_t res;
    assert_int_equal(nc_forkrun(3, 0, mismatch_child, NULL, 0, 60, &res), 0);
}

/* @p rc is NUMACOLL_ERR_ARG and the message holds @p what */
static int arg_error(int rc, const char *what)
{
    if (rc == NUMACOLL_ERR_ARG && strstr(numacoll_last_error(), what)) return 1;
    fprintf(stderr, "want NUMACOLL_ERR_ARG naming '%s', got %s: %s\n", what,
            numacoll_status_name(rc), numacoll_last_error());
    return 0;
}

static int bad_args_child(nc_forkctx_t *c)
{
    numacoll_team_t *t = c->team;
    double in[64] = {1}, out[64];
    if (!arg_error(numacoll_scan(NULL, in, out, 1, NUMACOLL_DOUBLE, NUMACOLL_OP_SUM),
                   "team is NULL"))
        return 1;
    if (!arg_error(numacoll_reduce_scatter(t, in, out, NULL, NUMACOLL_DOUBLE, NUMACOLL_OP_SUM),
                   "recvcounts is NULL"))
        return 2;
    if (!arg_error(numacoll_exscan(t, in, out, 4, NUMACOLL_FLOAT, NUMACOLL_OP_BAND), "allowed"))
        return 3;
    if (!arg_error(numacoll_scan(t, in, out, 4, (numacoll_dtype_t)99, NUMACOLL_OP_SUM),
                   "allowed"))
        return 4;
    if (!arg_error(numacoll_scan(t, NULL, out, 4, NUMACOLL_DOUBLE, NUMACOLL_OP_SUM),
                   "sendbuf is NULL"))
        return 5;
    if (!arg_error(numacoll_reduce_scatter_block(t, in, NULL, 4, NUMACOLL_DOUBLE,
                                                 NUMACOLL_OP_SUM),
                   "recvbuf is NULL"))
        return 6;
    /* exscan's member 0 may pass no recvbuf; the team still works */
    int rc = numacoll_exscan(t, in, c->rank ? out : NULL, 3, NUMACOLL_DOUBLE, NUMACOLL_OP_SUM);
    if (rc || (c->rank == 1 && out[0] != 1)) return 7;
    return 0;
}

static void test_bad_args(void **state)
{
    (void)state;
    clear_env();
    nc_forkresult_t res;
    assert_int_equal(nc_forkrun(2, 0, bad_args_child, NULL, 0, 60, &res), 0);
}

/* One member alone passes invalid arguments (the team's first reduction among them): it
 * gets its own error, the others NUMACOLL_ERR_ARG naming it, and the next call works on
 * every member (nobody pairs the failed call with another's next one). */
static int one_bad_check(nc_forkctx_t *c, int rc, const char *own, int step)
{
    const int me = c->rank;
    double in[64], out[64];
    if (me == 1 ? !strstr(numacoll_last_error(), own)
                : !strstr(numacoll_last_error(), "rank 1 could not take part")) {
        fprintf(stderr, "rank %d, step %d: %s: %s\n", me, step, numacoll_status_name(rc),
                numacoll_last_error());
        return 1;
    }
    for (int k = 0; k < 64; k++)
        in[k] = me * 10 + k;
    rc = numacoll_scan(c->team, in, out, 64, NUMACOLL_DOUBLE, NUMACOLL_OP_SUM);
    double want = 0; /* out[5]: the sum over r <= me of r * 10 + 5 */
    for (int r = 0; r <= me; r++)
        want += r * 10 + 5;
    if (rc || out[5] != want) {
        fprintf(stderr, "rank %d, scan after step %d: %s (%s), out[5] %g want %g\n", me, step,
                numacoll_status_name(rc), rc ? numacoll_last_error() : "", out[5], want);
        return 1;
    }
    return 0;
}

static int one_bad_child(nc_forkctx_t *c)
{
    numacoll_team_t *t = c->team;
    const int bad = c->rank == 1;
    double in[64] = {0}, out[64];
    size_t counts[3] = {4, 0, 5};
    int rc = numacoll_scan(t, in, bad ? NULL : out, 8, NUMACOLL_DOUBLE, NUMACOLL_OP_SUM);
    if (rc != NUMACOLL_ERR_ARG || one_bad_check(c, rc, "recvbuf is NULL", 1)) return 1;
    rc = numacoll_exscan(t, in, out, 8, NUMACOLL_DOUBLE,
                         bad ? NUMACOLL_OP_BXOR : NUMACOLL_OP_SUM);
    if (rc != NUMACOLL_ERR_ARG || one_bad_check(c, rc, "not defined on double", 2)) return 2;
    rc = numacoll_reduce_scatter(t, in, out, bad ? NULL : counts, NUMACOLL_DOUBLE,
                                 NUMACOLL_OP_SUM);
    if (rc != NUMACOLL_ERR_ARG || one_bad_check(c, rc, "recvcounts is NULL", 3)) return 3;
    rc = numacoll_reduce_scatter_block(t, bad ? NULL : in, out, 4, NUMACOLL_DOUBLE,
                                       NUMACOLL_OP_SUM);
    if (rc != NUMACOLL_ERR_ARG || one_bad_check(c, rc, "sendbuf is NULL", 4)) return 4;
    rc = numacoll_scan(t, in, out, bad ? SIZE_MAX / 4 : 8, NUMACOLL_DOUBLE, NUMACOLL_OP_SUM);
    if (rc != (bad ? NUMACOLL_ERR_TOOBIG : NUMACOLL_ERR_ARG) ||
        one_bad_check(c, rc, "exceed the address space", 5))
        return 5;
    return 0;
}

static void test_one_member_bad_args(void **state)
{
    (void)state;
    clear_env();
    nc_forkresult_t res;
    assert_int_equal(nc_forkrun(3, 0, one_bad_child, NULL, 0, 60, &res), 0);
}

static int killed_child(nc_forkctx_t *c)
{
    const int victim = 2, large = *(int *)c->arg;
    static double in[1 << 16], out[1 << 16];
    /* a call that works, so that the victim dies with the reduction buffers set up */
    if (numacoll_scan(c->team, in, out, 10, NUMACOLL_DOUBLE, NUMACOLL_OP_SUM)) return 1;
    if (c->rank == victim) kill(getpid(), SIGKILL);
    int rc = large ? numacoll_scan(c->team, in, out, 1 << 16, NUMACOLL_DOUBLE, NUMACOLL_OP_SUM)
                   : numacoll_reduce_scatter_block(c->team, in, out, 10, NUMACOLL_DOUBLE,
                                                   NUMACOLL_OP_SUM);
    if (rc == NUMACOLL_ERR_PEER_DEAD && nc_msg_names_rank(numacoll_last_error(), victim))
        return 0;
    fprintf(stderr, "rank %d: want NUMACOLL_ERR_PEER_DEAD naming %d, got %s: %s\n", c->rank,
            victim, numacoll_status_name(rc), numacoll_last_error());
    return 2;
}

static void test_killed_member(void **state)
{
    (void)state;
    int baseline = nc_shm_baseline();
    nc_test_clear_env();
    setenv("NUMACOLL_TIMEOUT", "4", 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    for (int large = 0; large <= 1; large++) {
        nc_forkresult_t res;
        nc_forkrun(3, 0, killed_child, &large, 0, 60, &res);
        assert_int_equal(res.timed_out, 0);
        assert_int_equal(res.exit_code[0], 0);
        assert_int_equal(res.exit_code[1], 0);
        assert_int_equal(res.exit_code[2], 128 + SIGKILL);
    }
    assert_int_equal(nc_shm_settle(baseline), baseline);
}

/* Pages of this member's reduction area that are in memory (mincore on the shared file) */
static size_t area_pages_in_memory(numacoll_team_t *t)
{
    nc_reduce_team_t *r = t->reduce;
    return nc_pages_in_memory(rd_area(r, t->rank), r->area_stride);
}

/* every slot used by small reduce-scatters and scans: only the eager pages are touched */
static int small_child(nc_forkctx_t *c)
{
    double in[64], out[64];
    for (int k = 0; k < 64; k++)
        in[k] = c->rank + k;
    for (int i = 0; i < 40; i++) {
        int rc = i % 2 ? numacoll_reduce_scatter_block(c->team, in, out, 3, NUMACOLL_DOUBLE,
                                                       NUMACOLL_OP_SUM)
                       : numacoll_scan(c->team, in, out, 7, NUMACOLL_DOUBLE, NUMACOLL_OP_SUM);
        if (rc) return 1;
    }
    size_t pages = area_pages_in_memory(c->team);
    /* the control page, two pages per in slot (header and eager bytes), one per result */
    size_t expect_max = 1 + 3 * (size_t)c->team->reduce->slots;
    if (pages <= expect_max) return 0;
    fprintf(stderr, "rank %d: %zu pages of the reduction area in memory after small calls; at "
                    "most %zu expected\n", c->rank, pages, expect_max);
    return 2;
}

static void test_small_calls_stay_eager(void **state)
{
    (void)state;
    clear_env();
    nc_forkresult_t res;
    assert_int_equal(nc_forkrun(4, 0, small_child, NULL, 0, 60, &res), 0);
}

/* NUMACOLL_REDUCE_STREAM=auto chooses the copy mode of reduce-scatters and scans apart from
 * the allreduces': every member counts their calls per kind, and the decider (member 0 of a
 * reduce-scatter, the last member of a scan) has timed both modes after the first four */
static uint64_t kind_calls(const nc_reduce_team_t *r, int kind)
{
    uint64_t n = 0;
    for (int c = 0; c < RD_STREAM_CLASSES; c++)
        n += r->class_calls[kind][c];
    return n;
}
static int both_modes_timed(const nc_reduce_team_t *r, int kind)
{
    for (int c = 0; c < RD_STREAM_CLASSES; c++)
        if (r->times[kind][c].count[0] >= 2 && r->times[kind][c].count[1] >= 2) return 1;
    return 0;
}
static int stream_auto_child(nc_forkctx_t *c)
{
    enum { N = 8192, CALLS = 6 }; /* 64 KiB: above NUMACOLL_REDUCE_STREAM_MIN */
    const int P = c->team->size, me = c->rank;
    double *in = malloc((size_t)P * N * sizeof *in), *out = malloc((size_t)N * sizeof *out);
    if (!in || !out) return 1;
    for (size_t k = 0; k < (size_t)P * N; k++)
        in[k] = me + (double)(k % 7);
    for (int i = 0; i < CALLS; i++) {
        if (numacoll_reduce_scatter_block(c->team, in, out, N, NUMACOLL_DOUBLE, NUMACOLL_OP_SUM))
            return 2;
        for (size_t k = 0; k < N; k += 1021) /* sum over members of m + (me N + k) % 7 */
            if (out[k] != P * (P - 1) / 2.0 + P * (double)(((size_t)me * N + k) % 7)) return 3;
        if (numacoll_scan(c->team, in, out, N, NUMACOLL_DOUBLE, NUMACOLL_OP_SUM)) return 4;
        for (size_t k = 0; k < N; k += 1021)
            if (out[k] != me * (me + 1) / 2.0 + (me + 1) * (double)(k % 7)) return 5;
    }
    const nc_reduce_team_t *r = c->team->reduce;
    const int counted = getenv("NC_TEST_EXPECT_COUNTED")[0] == '1';
    if (kind_calls(r, RD_KIND_RSCATTER) != (counted ? CALLS : 0) ||
        kind_calls(r, RD_KIND_SCAN) != (counted ? CALLS : 0) ||
        kind_calls(r, RD_KIND_ALLREDUCE) != 0 || kind_calls(r, RD_KIND_REDUCE) != 0) {
        fprintf(stderr, "rank %d: calls counted per kind %llu %llu %llu %llu\n", me,
                (unsigned long long)kind_calls(r, RD_KIND_ALLREDUCE),
                (unsigned long long)kind_calls(r, RD_KIND_REDUCE),
                (unsigned long long)kind_calls(r, RD_KIND_RSCATTER),
                (unsigned long long)kind_calls(r, RD_KIND_SCAN));
        return 6;
    }
    if (counted && me == 0 && !both_modes_timed(r, RD_KIND_RSCATTER)) return 7;
    if (counted && me == P - 1 && !both_modes_timed(r, RD_KIND_SCAN)) return 8;
    free(in), free(out);
    return 0;
}

static void test_stream_auto(void **state)
{
    (void)state;
    nc_forkresult_t res;
    clear_env(); /* NUMACOLL_REDUCE_STREAM=auto */
    setenv("NC_TEST_EXPECT_COUNTED", "1", 1);
    assert_int_equal(nc_forkrun(3, 0, stream_auto_child, NULL, 0, 60, &res), 0);
    clear_env();
    setenv("NUMACOLL_REDUCE_STREAM", "off", 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    setenv("NC_TEST_EXPECT_COUNTED", "0", 1);
    assert_int_equal(nc_forkrun(3, 0, stream_auto_child, NULL, 0, 60, &res), 0);
    clear_env();
    unsetenv("NC_TEST_EXPECT_COUNTED");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_pairs),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_mismatch),
        cmocka_unit_test(test_bad_args),
        cmocka_unit_test(test_one_member_bad_args),
        cmocka_unit_test(test_killed_member),
        cmocka_unit_test(test_small_calls_stay_eager),
        cmocka_unit_test(test_stream_auto),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
