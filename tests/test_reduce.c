/*
 * Correctness of numacoll_allreduce / numacoll_reduce on forked teams of P = 1, 2, 3, 5, 8:
 *  - every allowed (type, op) pair against a serial reference computed here in the order
 *    include/numacoll/numacoll.h documents: ((x_0 op x_1) op x_2) ... in rank order for
 *    flat and rsag, each topology group in rank order and then the groups' results for hier
 *    (on synthetic multi-NUMA machines too); integers exact (signed SUM and PROD wrap),
 *    floating point bitwise (inputs of mixed magnitudes, signed zeros and NaNs, where the
 *    order shows), long double on its value bytes, MINLOC/MAXLOC with ties (the smaller
 *    index wins) for every pair type (the element model: test_reduce_elements.h);
 *  - sizes 0, 1, odd, around and at multiples of NUMACOLL_REDUCE_FRAGMENT, up to 64 MiB, in
 *    place (both forms) and not, every root, every algorithm and the automatic choice,
 *    2 to 16 slots, 32-byte and default padding, plain and streamed copies (and the
 *    copy-mode choice of stream.c from given call times);
 *  - results identical on every member and from call to call (same inputs, same bytes);
 *  - bad arguments, members that disagree on the call or on NUMACOLL_REDUCE_FRAGMENT: the
 *    documented error on every member, a message that names the problem, no hang, and the
 *    team's next reductions work.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "coll/reduce/reduce_internal.h"
#include "forkrun.h"
#include "test_reduce_elements.h"
#include "topo/topo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---- one call, checked ----------------------------------------------------------------- */

typedef struct rcase {
    const type_info_t *ti;
    numacoll_op_t op;
    size_t count;
    int root;          /* -1: allreduce */
    const char *alg;   /* NULL: numacoll_allreduce / numacoll_reduce; else reduce_with */
    int in_place;      /* 0: no; 1: NUMACOLL_IN_PLACE; 2: sendbuf == recvbuf */
    uint64_t seed;
    int same_as;       /* an earlier case with the same inputs, root and count, or -1 */
} rcase_t;

enum { GUARD = 3, MAX_CASES = 400, MAX_P = 8 };

/* one line on stderr: the member, case @p i and what went wrong */
static void report(const nc_forkctx_t *c, int i, const rcase_t *cs, const char *fmt, ...)
{
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    fprintf(stderr, "rank %d of %d, case %d: %s %s of %zu %s, root %d, alg %s, %s: %s\n",
            c->rank, c->size, i, cs->root < 0 ? "allreduce" : "reduce", numacoll_op_name(cs->op),
            cs->count, numacoll_dtype_name(cs->ti->dtype), cs->root,
            cs->alg ? cs->alg : "(default)",
            cs->in_place == 1 ? "NUMACOLL_IN_PLACE" : cs->in_place ? "sendbuf == recvbuf"
                                                                   : "out of place", what);
}

/* The groups of the call's fold if it is hier's (numacoll.h: each topology group in rank
 * order, then the groups' results), or NULL for the rank-order fold of flat and rsag (and
 * of hier on a team without group levels, which folds as flat does). After the call. */
static const nc_hier_t *hier_groups(numacoll_team_t *t, const rcase_t *cs)
{
    const char *alg = cs->alg && strcmp(cs->alg, "auto") != 0
                          ? cs->alg
                          : nc_reduce_choice(t, cs->count * cs->ti->size, cs->root);
    const nc_hier_t *h = t->reduce ? t->reduce->hier : NULL;
    return strcmp(alg, "hier") == 0 && h && h->nlevels > 0 ? h : NULL;
}

/* element k of hier's fold: at each level, each group folds its members' values in rank
 * order into its leader's (inputs at the lowest level, the partials of the level below
 * above it); the leader of the last level's group holds the result */
static void ref_hier(const rcase_t *cs, const nc_hier_t *h, size_t k, unsigned char *acc)
{
    unsigned char value[MAX_P][MAX_ELEM];
    for (int r = 0; r < h->nprocs; r++)
        gen(cs->ti, cs->op, cs->seed, r, k, value[r]);
    for (int l = 0; l < h->nlevels; l++)
        for (int g = 0; g < h->levels[l].ngroups; g++) {
            const nc_group_t *grp = &h->levels[l].groups[g];
            for (int i = 1; i < grp->size; i++)
                ref_step(cs->ti, cs->op, value[grp->members[0]], value[grp->members[i]]);
        }
    memcpy(acc, value[h->levels[h->nlevels - 1].groups[0].members[0]], cs->ti->size);
}

/* Run case @p i on this member and check its result against the reference; *hash: the
 * result's hash (0 without a result). Returns 0 or a failure code (printed). */
static int run_case(nc_forkctx_t *c, int i, const rcase_t *cs, uint64_t *hash, int *grouped)
{
    const type_info_t *ti = cs->ti;
    const size_t es = ti->size, n = cs->count;
    const int me = c->rank, gets = cs->root < 0 || cs->root == me;
    unsigned char *in = malloc(n * es + 1), *out = malloc((n + GUARD) * es);
    unsigned char acc[MAX_ELEM], x[MAX_ELEM];
    int fail = 0;
    if (!in || !out) return 40;
    for (size_t k = 0; k < n; k++)
        gen(ti, cs->op, cs->seed, me, k, in + k * es);
    int in_place = gets ? cs->in_place : 0;
    if (in_place) memcpy(out, in, n * es);
    else memset(out, 0x5C, n * es);
    memset(out + n * es, 0x5C, GUARD * es);
    const void *send = in_place == 1 ? NUMACOLL_IN_PLACE : in_place == 2 ? out : in;
    void *recv = gets || i % 2 ? out : NULL; /* a reduce's non-root may pass NULL */
    int rc = cs->alg ? numacoll_reduce_with(c->team, send, recv, n, ti->dtype, cs->op, cs->root,
                                            cs->alg)
             : cs->root < 0 ? numacoll_allreduce(c->team, send, recv, n, ti->dtype, cs->op)
                            : numacoll_reduce(c->team, send, recv, n, ti->dtype, cs->op, cs->root);
    *hash = 0;
    if (rc != NUMACOLL_OK) {
        report(c, i, cs, "returned %s: %s", numacoll_status_name(rc), numacoll_last_error());
        fail = 10;
    }
    const nc_hier_t *groups = rc ? NULL : hier_groups(c->team, cs);
    if (groups && gets) *grouped = 1;
    for (size_t k = 0; !fail && gets && k < n; k++) {
        if (groups) {
            ref_hier(cs, groups, k, acc);
        } else {
            gen(ti, cs->op, cs->seed, 0, k, acc);
            for (int r = 1; r < c->size; r++) {
                gen(ti, cs->op, cs->seed, r, k, x);
                ref_step(ti, cs->op, acc, x);
            }
        }
        if (!elem_equal(ti, acc, out + k * es)) {
            char want[200], got[200];
            report(c, i, cs, "element %zu differs from the %s fold: want %s, got %s", k,
                   groups ? "group-by-group" : "rank-order",
                   format_elem(want, sizeof want, ti, acc),
                   format_elem(got, sizeof got, ti, out + k * es));
            fail = 11;
        }
    }
    if (!fail && gets) *hash = hash_result(ti, out, n);
    for (size_t b = gets ? n * es : 0; !fail && recv && b < (n + GUARD) * es; b++)
        if (out[b] != 0x5C) {
            report(c, i, cs, "byte %zu of recvbuf changed (%zu bytes of result)", b,
                   gets ? n * es : 0);
            fail = 12;
        }
    for (size_t k = 0; !fail && !in_place && k < n; k++) {
        gen(ti, cs->op, cs->seed, me, k, acc);
        if (memcmp(acc, in + k * es, es)) {
            report(c, i, cs, "sendbuf element %zu changed", k);
            fail = 13;
        }
    }
    free(in);
    free(out);
    return fail;
}

typedef struct launch {
    rcase_t cases[MAX_CASES];
    int n;
    uint64_t *hashes; /* shared with the members: [case * MAX_P + rank] */
    int *grouped;     /* shared: [case] 1 if checked against hier's group-by-group fold */
} launch_t;

/* every member runs every case in order and leaves each result's hash */
static int cases_worker(nc_forkctx_t *c)
{
    const launch_t *l = c->arg;
    for (int i = 0; i < l->n; i++) {
        int fail = run_case(c, i, &l->cases[i], &l->hashes[i * MAX_P + c->rank],
                            &l->grouped[i]);
        if (fail) return fail;
    }
    return 0;
}

static void add(launch_t *l, rcase_t cs)
{
    assert_true(l->n < MAX_CASES);
    if (!cs.seed) cs.seed = (uint64_t)l->n * 7919u + 17u;
    l->cases[l->n++] = cs;
}

/* NULL: numacoll_allreduce / numacoll_reduce; then every algorithm numacoll.h names */
static const char *const algs[] = {NULL, "flat", "rsag", "hier", "rbcast", "auto"};
enum { NALGS = 5 }; /* named ones, from algs[1] */

/* every allowed (type, op) pair once, rotating counts, roots, algorithms and in-place
 * forms; then floating-point sums twice with the same inputs, for each algorithm */
static void add_every_pair(launch_t *l, int P)
{
    static const size_t counts[] = {1, 5, 37, 130, 67, 3};
    int j = 0;
    for (int t = 0; t < NTYPES; t++)
        for (int op = 0; op < NUMACOLL_OP_COUNT; op++) {
            if (!op_allowed(&types[t], (numacoll_op_t)op)) continue;
            add(l, (rcase_t){.ti = &types[t], .op = (numacoll_op_t)op, .count = counts[j % 6],
                             .root = j % (P + 1) - 1, .alg = algs[j % 5], .in_place = j % 3,
                             .same_as = -1});
            j++;
        }
    for (int t = 0; t < NTYPES; t++) {
        if (types[t].value.kind != 'f' || types[t].index.size) continue;
        for (int a = 0; a < 5; a++) {
            int first = l->n;
            for (int rep = 0; rep < 2; rep++)
                add(l, (rcase_t){.ti = &types[t], .op = NUMACOLL_OP_SUM, .count = 501,
                                 .root = -1, .alg = algs[a], .in_place = rep + a % 2,
                                 .seed = 4242u + (uint64_t)t, .same_as = rep ? first : -1});
        }
    }
}

/* sizes around the chunk size (@p fragment bytes) for element sizes 1, 8 and 32, each as
 * an allreduce and a reduce; @p big adds 3 MiB + 24 bytes of doubles, big == 2 also an
 * allreduce of 64 MiB + 8 bytes */
static void add_sizes(launch_t *l, int P, size_t fragment, int big)
{
    const type_info_t *szt[] = {type_of(NUMACOLL_INT8), type_of(NUMACOLL_DOUBLE),
                                type_of(NUMACOLL_LONG_DOUBLE_INT)};
    const numacoll_op_t szop[] = {NUMACOLL_OP_SUM, NUMACOLL_OP_SUM, NUMACOLL_OP_MAXLOC};
    int j = 0;
    for (int t = 0; t < 3; t++) {
        size_t per = fragment / szt[t]->size;
        const size_t counts[] = {0,   1,       2,           63,          per - 1,
                                 per, per + 1, 2 * per,     3 * per + 5, 9 * per + 3};
        for (size_t s = 0; s < sizeof counts / sizeof counts[0]; s++, j++) {
            add(l, (rcase_t){.ti = szt[t], .op = szop[t], .count = counts[s], .root = -1,
                             .alg = algs[1 + j % NALGS], .in_place = j % 3, .same_as = -1});
            add(l, (rcase_t){.ti = szt[t], .op = szop[t], .count = counts[s], .root = j % P,
                             .alg = algs[1 + (j + 1) % NALGS], .in_place = (j + 1) % 3,
                             .same_as = -1});
        }
    }
    for (int a = 0; big && a < 3; a++)
        add(l, (rcase_t){.ti = szt[1], .op = NUMACOLL_OP_SUM, .count = (3u << 20) / 8 + 3,
                         .root = a == 1 ? P - 1 : -1, .alg = algs[1 + a], .in_place = a,
                         .same_as = -1});
    /* the largest size the issue names: 64 MiB and one element, the automatic choice */
    if (big == 2)
        add(l, (rcase_t){.ti = szt[1], .op = NUMACOLL_OP_SUM, .count = (64u << 20) / 8 + 1,
                         .root = -1, .alg = algs[4], .in_place = 0, .same_as = -1});
}

/* NULL: the default of each; @p stream "on" or "off" also sets NUMACOLL_REDUCE_STREAM_MIN
 * to 0, so that every size copies in that mode */
static void set_env_stream(const char *fragment, const char *slots, const char *stream)
{
    nc_test_clear_env();
    setenv("NUMACOLL_TIMEOUT", "30", 1); /* a hang becomes an error naming the culprit */
    if (fragment) setenv("NUMACOLL_REDUCE_FRAGMENT", fragment, 1);
    if (slots) setenv("NUMACOLL_REDUCE_SLOTS", slots, 1);
    if (stream) {
        setenv("NUMACOLL_REDUCE_STREAM", stream, 1);
        setenv("NUMACOLL_REDUCE_STREAM_MIN", "0", 1);
    }
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
}

static void set_env(const char *fragment, const char *slots)
{
    set_env_stream(fragment, slots, NULL);
}

/* @p worker on P members: none may fail or time out, and no segment may be left */
static void run_members(int P, nc_forkrun_fn worker, void *arg)
{
    int baseline = nc_shm_baseline();
    nc_forkresult_t res;
    int failed = nc_forkrun(P, NC_FORK_BIND, worker, arg, 0, 60, &res);
    assert_int_equal(res.timed_out, 0);
    assert_int_equal(failed, 0);
    assert_true(nc_shm_settle(baseline) <= baseline);
}

/* the cases of @p l on P members; then every member's result of an allreduce is the same,
 * and a case that repeats another's inputs has the same result. Returns the number of
 * cases checked against hier's group-by-group fold. */
static int run_launch(int P, launch_t *l)
{
    size_t bytes = (size_t)l->n * (MAX_P * sizeof(uint64_t) + sizeof(int));
    l->hashes = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(l->hashes != MAP_FAILED);
    l->grouped = (int *)(l->hashes + (size_t)l->n * MAX_P);
    run_members(P, cases_worker, l);
    int allreduces = 0, repeats = 0, grouped = 0;
    for (int i = 0; i < l->n; i++) {
        const rcase_t *cs = &l->cases[i];
        const uint64_t *h = &l->hashes[i * MAX_P];
        int at = cs->root < 0 ? 0 : cs->root;
        assert_true(h[at] != 0);
        for (int r = 1; cs->root < 0 && r < P; r++)
            assert_true(h[r] == h[0]);
        allreduces += cs->root < 0;
        grouped += l->grouped[i];
        if (cs->same_as < 0) continue;
        assert_true(h[at] == l->hashes[cs->same_as * MAX_P + at]);
        repeats++;
    }
    printf("P=%d: %d calls checked (%d against hier's group-by-group fold; %d allreduces "
           "identical on every member, %d repeats identical to their first call)\n", P, l->n,
           grouped, allreduces, repeats);
    munmap(l->hashes, bytes);
    return grouped;
}

static launch_t the_launch;

static void run_pairs_and_sizes(int P, const char *fragment, const char *slots,
                                const char *stream, int big)
{
    set_env_stream(fragment, slots, stream);
    memset(&the_launch, 0, sizeof the_launch);
    add_every_pair(&the_launch, P);
    /* the chunk size: the setting rounded up to 64 bytes (numacoll-info) */
    add_sizes(&the_launch, P, nc_round_up(nc_cfg_size(NC_CFG_REDUCE_FRAGMENT), 64), big);
    run_launch(P, &the_launch);
    set_env(NULL, NULL);
}

static void test_p1(void **state)
{
    (void)state;
    run_pairs_and_sizes(1, "4K", NULL, NULL, 0);
}

/* the default chunk size, slots and copy-mode choice (auto: its first calls of each size
 * class alternate plain and streamed copies), 3 MiB messages and one of 64 MiB */
static void test_p2(void **state)
{
    (void)state;
    run_pairs_and_sizes(2, NULL, NULL, NULL, 2);
}

/* 4 KiB chunks: the 3 MiB messages run 769 chunks through the slots; every copy others
 * read streamed */
static void test_p3(void **state)
{
    (void)state;
    run_pairs_and_sizes(3, "4K", NULL, "on", 1);
}

/* chunks of 4160 bytes (4100 rounded up), not a power of two, through 2 slots; streamed */
static void test_p5(void **state)
{
    (void)state;
    run_pairs_and_sizes(5, "4100", "2", "on", 0);
}

/* oversubscribed on a small machine; plain copies */
static void test_p8(void **state)
{
    (void)state;
    run_pairs_and_sizes(8, "4K", NULL, "off", 0);
}

/* The copy-mode choice (stream.c): the mode a decider keeps from its call times */
static void test_stream_choice(void **state)
{
    (void)state;
    rd_mode_times_t t;
    memset(&t, 0, sizeof t);
    /* no sample of a mode yet: the current best stays */
    rd_stream_record(&t, 0, 100000, 1 << 20); /* 1 MiB in 100 us: 97 ns per KiB */
    assert_int_equal(rd_stream_pick(&t, 0), 0);
    assert_int_equal(rd_stream_pick(&t, 1), 1);
    /* streamed at half the time per byte, measured on a message of another size */
    rd_stream_record(&t, 1, 25000, 1 << 19);
    assert_int_equal(rd_stream_pick(&t, 0), 1);
    assert_int_equal(rd_stream_pick(&t, 1), 1);
    /* medians: plain {97, 97, 97} against streamed {48, 9765, 9765}: plain now */
    rd_stream_record(&t, 0, 100000, 1 << 20);
    rd_stream_record(&t, 0, 100000, 1 << 20);
    rd_stream_record(&t, 1, 10000000, 1 << 20);
    rd_stream_record(&t, 1, 10000000, 1 << 20);
    assert_int_equal(rd_stream_pick(&t, 1), 0);
    /* within 10%: no change either way */
    memset(&t, 0, sizeof t);
    rd_stream_record(&t, 0, 100000, 1 << 20);
    rd_stream_record(&t, 1, 95000, 1 << 20);
    assert_int_equal(rd_stream_pick(&t, 0), 0);
    assert_int_equal(rd_stream_pick(&t, 1), 1);
    /* only the last 4 samples count: 4 fast streamed calls replace 4 slow ones */
    for (int i = 0; i < 4; i++)
        rd_stream_record(&t, 1, 10000000, 1 << 20);
    assert_int_equal(rd_stream_pick(&t, 1), 0);
    for (int i = 0; i < 4; i++)
        rd_stream_record(&t, 1, 20000, 1 << 20);
    assert_int_equal(rd_stream_pick(&t, 0), 1);
}

/* hier on synthetic machines, rank r on NUMA node r mod #nodes: 2 packages x 2 NUMA nodes
 * x 2 cores at P = 4 (NUMA and top levels) and P = 8 (NUMA, socket, top), and 2 NUMA nodes
 * of 3 cores at P = 5 (groups {0, 2, 4} and {1, 3}: uneven, ranks not consecutive). Every
 * case whose algorithm is hier (named, or auto up to 4 KiB) is checked against the
 * group-by-group fold, the others against the rank-order one. */
static void test_hier_synthetic(void **state)
{
    (void)state;
    static const struct {
        int P;
        const char *machine;
    } runs[] = {{4, "pack:2 numa:2 core:2 pu:1"}, {8, "pack:2 numa:2 core:2 pu:1"},
                {5, "pack:1 numa:2 core:3 pu:1"}};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        set_env("4K", NULL);
        setenv("NUMACOLL_TOPO_SYNTHETIC", runs[i].machine, 1);
        setenv("NUMACOLL_TOPO_MAP_BY", "numa", 1);
        assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
        memset(&the_launch, 0, sizeof the_launch);
        add_every_pair(&the_launch, runs[i].P);
        if (i == 0) add_sizes(&the_launch, runs[i].P, 4096, 0);
        printf("%s: ", runs[i].machine);
        assert_true(run_launch(runs[i].P, &the_launch) > 0);
    }
    set_env(NULL, NULL);
}

/* NUMACOLL_REDUCE_SLOTS from 2 to 16 with the smallest and the default padding unit
 * (NUMACOLL_CACHELINE): the reductions work, 20 chunks of 4 KiB through the slots. The
 * signatures fit in the posted line up to 3 slots (32 bytes) or 15 (auto on x86: 128). */
static void test_slots_and_lines(void **state)
{
    (void)state;
    static const struct {
        const char *line, *slots;
    } settings[] = {{"32", "2"}, {"32", "4"}, {"32", "16"}, {NULL, "7"}, {NULL, "8"},
                    {NULL, "16"}};
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        set_env("4K", settings[i].slots);
        if (settings[i].line) setenv("NUMACOLL_CACHELINE", settings[i].line, 1);
        assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
        memset(&the_launch, 0, sizeof the_launch);
        for (int a = 0; a < 3; a++)
            add(&the_launch, (rcase_t){.ti = type_of(NUMACOLL_DOUBLE), .op = NUMACOLL_OP_SUM,
                                       .count = 20 * 512 + 7, .root = a - 1, .alg = algs[1 + a],
                                       .same_as = -1});
        printf("NUMACOLL_CACHELINE=%s NUMACOLL_REDUCE_SLOTS=%s: ",
               settings[i].line ? settings[i].line : "auto", settings[i].slots);
        run_launch(2, &the_launch);
    }
    set_env(NULL, NULL);
}

/* ---- the types' sizes and names ------------------------------------------------------- */

static void test_types(void **state)
{
    (void)state;
    assert_int_equal(NTYPES, NUMACOLL_DTYPE_COUNT);
    for (int t = 0; t < NTYPES; t++) {
        assert_int_equal(numacoll_dtype_size(types[t].dtype), types[t].size);
        assert_string_not_equal(numacoll_dtype_name(types[t].dtype), "?");
    }
    assert_int_equal(numacoll_dtype_size(NUMACOLL_DTYPE_COUNT), 0);
    assert_string_equal(numacoll_dtype_name((numacoll_dtype_t)-1), "?");
    assert_string_equal(numacoll_op_name(NUMACOLL_OP_MAXLOC), "maxloc");
    assert_string_equal(numacoll_op_name(NUMACOLL_OP_COUNT), "?");
    /* the registry holds every algorithm numacoll.h names (algs[1..4]), and only those */
    int n = 0;
    const numacoll_algorithm_info_t *info = numacoll_reduce_algorithms(&n);
    assert_int_equal(n, NALGS - 1);
    for (int a = 1; a < NALGS; a++) {
        int found = 0;
        for (int i = 0; i < n; i++)
            found += strcmp(info[i].name, algs[a]) == 0 && info[i].description[0];
        assert_int_equal(found, 1);
    }
}

/* ---- bad arguments ------------------------------------------------------------------ */

/* a small allreduce, checked: the team works after a failed call */
static int team_works(nc_forkctx_t *c, int after)
{
    rcase_t ok = {.ti = type_of(NUMACOLL_DOUBLE), .op = NUMACOLL_OP_SUM, .count = 700,
                  .root = -1, .seed = 99u + (uint64_t)after, .same_as = -1};
    uint64_t hash;
    int grouped;
    return run_case(c, 1000 + after, &ok, &hash, &grouped) ? 30 + after : 0;
}

/* rc is @p want and the message holds @p n1 and @p n2 (if not NULL) */
static int check_error(const nc_forkctx_t *c, const char *what, int rc, int want, const char *n1,
                       const char *n2)
{
    const char *msg = rc ? numacoll_last_error() : "";
    /* the parts of a message wrapped by its callers are never empty (no ": :") */
    if (rc == want && (!n1 || strstr(msg, n1)) && (!n2 || strstr(msg, n2)) &&
        !strstr(msg, ": :"))
        return 0;
    fprintf(stderr, "rank %d of %d, %s: %s (wanted %s naming '%s' and '%s'): %s\n", c->rank,
            c->size, what, numacoll_status_name(rc), numacoll_status_name(want), n1 ? n1 : "",
            n2 ? n2 : "", msg);
    return 1;
}

static int errors_worker(nc_forkctx_t *c)
{
    numacoll_team_t *t = c->team;
    const int me = c->rank, P = c->size;
    double in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8];
    const numacoll_dtype_t D = NUMACOLL_DOUBLE;
    const numacoll_op_t SUM = NUMACOLL_OP_SUM;
    char n1[96], n2[96];
    int bad = 0, step = 0;
#define EXPECT(what, call, want, a, b)                                                             \
    do {                                                                                           \
        bad += check_error(c, what, call, want, a, b);                                             \
        if (want != NUMACOLL_OK || step % 4 == 0) bad += team_works(c, step);                      \
        step++;                                                                                    \
    } while (0)
    EXPECT("BAND on double", numacoll_allreduce(t, in, out, 8, D, NUMACOLL_OP_BAND),
           NUMACOLL_ERR_ARG, "op band is not defined on double", "allowed: sum, prod, min, max");
    EXPECT("MINLOC on int32", numacoll_allreduce(t, in, out, 8, NUMACOLL_INT32,
                                                  NUMACOLL_OP_MINLOC),
           NUMACOLL_ERR_ARG, "op minloc is not defined on int32", "allowed: every op but minloc");
    EXPECT("SUM on double_int", numacoll_reduce(t, in, out, 4, NUMACOLL_DOUBLE_INT, SUM, 0),
           NUMACOLL_ERR_ARG, "op sum is not defined on double_int", "allowed: minloc, maxloc");
    snprintf(n1, sizeof n1, "datatype %d unknown", NUMACOLL_DTYPE_COUNT);
    snprintf(n2, sizeof n2, "allowed: 0..%d", NUMACOLL_DTYPE_COUNT - 1);
    EXPECT("datatype past the enum",
           numacoll_allreduce(t, in, out, 8, NUMACOLL_DTYPE_COUNT, SUM), NUMACOLL_ERR_ARG, n1,
           n2);
    EXPECT("datatype -1", numacoll_allreduce(t, in, out, 8, (numacoll_dtype_t)-1, SUM),
           NUMACOLL_ERR_ARG, "datatype -1 unknown", n2);
    snprintf(n1, sizeof n1, "op %d unknown", NUMACOLL_OP_COUNT);
    EXPECT("op past the enum", numacoll_allreduce(t, in, out, 8, D, NUMACOLL_OP_COUNT),
           NUMACOLL_ERR_ARG, n1, "numacoll_op_t");
    snprintf(n1, sizeof n1, "root=%d", P);
    snprintf(n2, sizeof n2, "allowed: 0..%d", P - 1);
    EXPECT("root = P", numacoll_reduce(t, in, out, 8, D, SUM, P), NUMACOLL_ERR_ARG, n1, n2);
    EXPECT("root -1", numacoll_reduce(t, in, out, 8, D, SUM, -1), NUMACOLL_ERR_ARG, "root=-1",
           n2);
    EXPECT("NULL recvbuf", numacoll_allreduce(t, in, NULL, 8, D, SUM), NUMACOLL_ERR_ARG,
           "recvbuf is NULL", "numacoll_allreduce");
    EXPECT("NULL sendbuf", numacoll_allreduce(t, NULL, out, 8, D, SUM), NUMACOLL_ERR_ARG,
           "sendbuf is NULL", "numacoll_allreduce");
    /* the root fails too (NULL recvbuf), so nobody waits for a member that left */
    EXPECT("NULL sendbuf of a reduce's non-root",
           numacoll_reduce(t, me ? NULL : in, me ? out : NULL, 8, D, SUM, 0), NUMACOLL_ERR_ARG,
           me ? "sendbuf is NULL" : "recvbuf is NULL", "numacoll_reduce");
    /* IN_PLACE on the non-roots (the root's NULL recvbuf fails it too) */
    snprintf(n1, sizeof n1, "NUMACOLL_IN_PLACE on rank %d", me);
    EXPECT("NUMACOLL_IN_PLACE on a non-root",
           numacoll_reduce(t, NUMACOLL_IN_PLACE, me ? out : NULL, 8, D, SUM, 0),
           NUMACOLL_ERR_ARG, me ? n1 : "recvbuf is NULL", me ? "only the root" : NULL);
    EXPECT("unknown algorithm", numacoll_reduce_with(t, in, out, 8, D, SUM, -1, "ring"),
           NUMACOLL_ERR_ARG, "'ring' unknown", "allowed: auto, flat, rsag");
    EXPECT("count beyond the address space",
           numacoll_allreduce(t, in, out, SIZE_MAX / 4, D, SUM), NUMACOLL_ERR_TOOBIG,
           "exceed the address space", "double");
    /* allowed: nothing to read or write */
    EXPECT("count 0, NULL buffers", numacoll_allreduce(t, NULL, NULL, 0, D, SUM), NUMACOLL_OK,
           NULL, NULL);
    EXPECT("reduce of count 0, NULL buffers",
           numacoll_reduce_with(t, NULL, NULL, 0, D, SUM, P - 1, "rsag"), NUMACOLL_OK, NULL,
           NULL);
#undef EXPECT
    bad += check_error(c, "NULL team", numacoll_allreduce(NULL, in, out, 8, D, SUM),
                       NUMACOLL_ERR_ARG, "team is NULL", NULL);
    return bad ? 20 : 0;
}

static void test_bad_arguments(void **state)
{
    (void)state;
    set_env(NULL, NULL);
    for (int P = 1; P <= 3; P++)
        run_members(P, errors_worker, NULL);
}

/* ---- members that disagree --------------------------------------------------------- */

typedef struct call_args {
    numacoll_dtype_t dtype;
    numacoll_op_t op;
    size_t count;
    int root;
    const char *alg;
} call_args_t;

typedef struct mismatch {
    const char *what;
    call_args_t base, odd; /* the odd member's arguments and everybody else's */
} mismatch_t;

static const mismatch_t mismatches[] = {
    {"count (1 and 6 chunks)", {NUMACOLL_DOUBLE, NUMACOLL_OP_SUM, 10, -1, NULL},
     {NUMACOLL_DOUBLE, NUMACOLL_OP_SUM, 3000, -1, NULL}},
    {"count (6 chunks and 0)", {NUMACOLL_DOUBLE, NUMACOLL_OP_SUM, 3000, -1, "rsag"},
     {NUMACOLL_DOUBLE, NUMACOLL_OP_SUM, 0, -1, "rsag"}},
    {"op", {NUMACOLL_DOUBLE, NUMACOLL_OP_SUM, 700, -1, "flat"},
     {NUMACOLL_DOUBLE, NUMACOLL_OP_PROD, 700, -1, "flat"}},
    {"datatype of the same size", {NUMACOLL_INT32, NUMACOLL_OP_SUM, 33, 0, NULL},
     {NUMACOLL_FLOAT, NUMACOLL_OP_SUM, 33, 0, NULL}},
    {"root", {NUMACOLL_DOUBLE, NUMACOLL_OP_MAX, 5000, 0, "rsag"},
     {NUMACOLL_DOUBLE, NUMACOLL_OP_MAX, 5000, 2, "rsag"}},
    {"algorithm", {NUMACOLL_UINT16, NUMACOLL_OP_BOR, 600, -1, "flat"},
     {NUMACOLL_UINT16, NUMACOLL_OP_BOR, 600, -1, "rsag"}},
    {"allreduce and reduce", {NUMACOLL_INT64, NUMACOLL_OP_SUM, 9, -1, "flat"},
     {NUMACOLL_INT64, NUMACOLL_OP_SUM, 9, 1, "flat"}},
};
enum { NMISMATCH = sizeof mismatches / sizeof mismatches[0] };

/* Each mismatch with each member as the odd one: every member returns NUMACOLL_ERR_ARG
 * naming the first member (in rank order) whose arguments differ from its own (but a
 * reduce's non-root of one flat chunk, which may return NUMACOLL_OK), and a checked
 * allreduce follows. */
static int mismatch_worker(nc_forkctx_t *c)
{
    static unsigned char in[5000 * 8], out[5000 * 8];
    const int me = c->rank;
    int bad = 0, step = 0;
    for (int m = 0; m < NMISMATCH; m++)
        for (int odd = 0; odd < c->size; odd++, step++) {
            const mismatch_t *mm = &mismatches[m];
            const call_args_t *a = me == odd ? &mm->odd : &mm->base;
            int named = me != odd ? odd : odd == 0 ? 1 : 0;
            char want[96], what[96];
            snprintf(want, sizeof want, "rank %d passed other arguments than rank %d", named, me);
            snprintf(what, sizeof what, "%s differs on rank %d", mm->what, odd);
            int rc = numacoll_reduce_with(c->team, in, out, a->count, a->dtype, a->op, a->root,
                                          a->alg);
            /* a reduce's non-root whose flat call is one chunk (4K) leaves after posting and
             * compares nothing: the root and the others report the mismatch */
            size_t bytes = a->count * numacoll_dtype_size(a->dtype);
            int flat = a->alg ? strcmp(a->alg, "flat") == 0 : bytes <= 4096;
            int leaves = a->root >= 0 && me != a->root && flat && bytes <= 4096;
            if (!(leaves && rc == NUMACOLL_OK))
                bad += check_error(c, what, rc, NUMACOLL_ERR_ARG, want, "every member must pass");
            bad += team_works(c, step);
        }
    return bad ? 20 : 0;
}

static void test_mismatch(void **state)
{
    (void)state;
    set_env("4K", NULL);
    run_members(3, mismatch_worker, NULL);
    set_env(NULL, NULL);
}

/* ---- one member with invalid arguments ---------------------------------------------- */

/* Each kind of invalid argument on one member at a time: it gets its own error, the others
 * NUMACOLL_ERR_ARG naming it (but a reduce's non-root of one flat chunk, which may return
 * NUMACOLL_OK), and a checked allreduce follows on every member (nobody pairs the failed
 * call with another member's next one). The first call of the team is one of them. */
static int invalid_worker(nc_forkctx_t *c)
{
    static unsigned char in[3000 * 8], out[3000 * 8];
    const int me = c->rank;
    int bad = 0, step = 0;
    for (int k = 0; k < 7; k++)
        for (int odd = 0; odd < c->size; odd++, step++) {
            const int mine = me == odd;
            int rc, root = -1;
            const char *own;
            switch (k) {
            case 0: /* small: flat, or rbcast on more members than CPUs */
                rc = numacoll_allreduce(c->team, in, mine ? NULL : out, 8, NUMACOLL_DOUBLE,
                                        NUMACOLL_OP_SUM);
                own = "recvbuf is NULL";
                break;
            case 1: /* rsag (or rbcast) */
                rc = numacoll_allreduce(c->team, in, mine ? NULL : out, 3000, NUMACOLL_DOUBLE,
                                        NUMACOLL_OP_SUM);
                own = "recvbuf is NULL";
                break;
            case 2:
                rc = numacoll_allreduce(c->team, in, out, 8,
                                        mine ? (numacoll_dtype_t)77 : NUMACOLL_DOUBLE,
                                        NUMACOLL_OP_SUM);
                own = "datatype 77";
                break;
            case 3:
                rc = numacoll_reduce_with(c->team, in, out, 100, NUMACOLL_INT32, NUMACOLL_OP_MAX,
                                          -1, mine ? "no-such-algorithm" : NULL);
                own = "no-such-algorithm";
                break;
            case 4:
                root = 2 % c->size;
                rc = numacoll_reduce(c->team, mine ? NULL : in, out, 50, NUMACOLL_INT64,
                                     NUMACOLL_OP_SUM, root);
                own = "sendbuf is NULL";
                break;
            case 5: /* a reduce whose root this member gets wrong */
                root = 0;
                rc = numacoll_reduce(c->team, in, out, 50, NUMACOLL_INT64, NUMACOLL_OP_SUM,
                                     mine ? -1 : 0);
                own = "root=-1";
                break;
            default: /* in place on a non-root, 3000 elements */
                root = (odd + 1) % c->size;
                rc = numacoll_reduce(c->team, mine ? NUMACOLL_IN_PLACE : in, out, 3000,
                                     NUMACOLL_DOUBLE, NUMACOLL_OP_SUM, root);
                own = "NUMACOLL_IN_PLACE on rank";
                break;
            }
            char what[64], blame[64];
            snprintf(what, sizeof what, "invalid argument %d on rank %d", k, odd);
            snprintf(blame, sizeof blame, "rank %d could not take part", odd);
            const int leaves = root >= 0 && me != root && !mine; /* may leave after posting */
            if (c->size > 1 && !(leaves && rc == NUMACOLL_OK))
                bad += mine ? check_error(c, what, rc, rc == NUMACOLL_OK ? -1 : rc, own, NULL)
                            : check_error(c, what, rc, NUMACOLL_ERR_ARG, blame, NULL);
            bad += team_works(c, step);
        }
    return bad ? 20 : 0;
}

static void test_one_member_invalid(void **state)
{
    (void)state;
    set_env(NULL, NULL);
    run_members(3, invalid_worker, NULL);
    /* every algorithm of an allreduce: rbcast's broadcasts too */
    setenv("NUMACOLL_ALLREDUCE", "rbcast", 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    run_members(3, invalid_worker, NULL);
    setenv("NUMACOLL_ALLREDUCE", "rsag", 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
    run_members(2, invalid_worker, NULL);
    set_env(NULL, NULL);
}

/* Rank 1 sets another NUMACOLL_REDUCE_FRAGMENT: the team's first reduction fails on every
 * member with NUMACOLL_ERR_CONFIG naming the setting, and again at the next try; once rank
 * 1 spells the same size otherwise (4096 for 4K), the reductions work. */
static int fragment_worker(nc_forkctx_t *c)
{
    int bad = 0;
    if (c->rank == 1) {
        setenv("NUMACOLL_REDUCE_FRAGMENT", "8K", 1);
        if (numacoll_config_reload() != NUMACOLL_OK) return 21;
    }
    double in[100] = {0}, out[100];
    const char *blame = c->rank == 1 ? "differs from rank 0's setting" : "rank 1 failed";
    for (int attempt = 0; attempt < 2; attempt++) {
        int rc = numacoll_allreduce(c->team, in, out, 100, NUMACOLL_DOUBLE, NUMACOLL_OP_SUM);
        bad += check_error(c, "NUMACOLL_REDUCE_FRAGMENT=8K on rank 1", rc, NUMACOLL_ERR_CONFIG,
                           "NUMACOLL_REDUCE_FRAGMENT=8K", blame);
    }
    if (c->rank == 1) {
        setenv("NUMACOLL_REDUCE_FRAGMENT", "4096", 1);
        if (numacoll_config_reload() != NUMACOLL_OK) return 22;
    }
    bad += team_works(c, 0);
    return bad ? 20 : 0;
}

static void test_fragment_mismatch(void **state)
{
    (void)state;
    set_env("4K", NULL);
    run_members(3, fragment_worker, NULL);
    set_env(NULL, NULL);
}

int main(void)
{
    /* NC_TEST_FILTER=test_name (cmocka's wildcards) runs only the matching tests */
    if (getenv("NC_TEST_FILTER")) cmocka_set_test_filter(getenv("NC_TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stream_choice),
        cmocka_unit_test(test_types),
        cmocka_unit_test(test_p1),
        cmocka_unit_test(test_p2),
        cmocka_unit_test(test_p3),
        cmocka_unit_test(test_p5),
        cmocka_unit_test(test_p8),
        cmocka_unit_test(test_hier_synthetic),
        cmocka_unit_test(test_slots_and_lines),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_mismatch),
        cmocka_unit_test(test_one_member_invalid),
        cmocka_unit_test(test_fragment_mismatch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
