/*
 * test_bcast, the broadcast state: the copy-mode selector learning from the receivers'
 * reports, the model's constants (measured, configured or the fallback) and the queue
 * memory populated at first use.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bcast/bcast_test.h"
#include "coll/bcast/bcast.h"
#include "core/nc_internal.h"
#include "forkrun.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The copy-mode selector learns from the receivers' reports: root 0 broadcasts the sizes of
 * a sel_args_t in turn with a barrier between calls, as a benchmark does. Each receiver
 * checks every byte; afterwards the root must hold, for every size's class, samples of each
 * candidate mode (all four from STREAM_OUT_MIN = 256 KiB on, plain and streamed root stores
 * from STREAM_MIN = 16 KiB) and none of the others, at least 3 of the one it uses (each mode
 * is run once first, those within 2x of the best twice more; a sample exists only if every
 * receiver's report of that run arrived and carried the run's tag and its number of
 * measured calls: 1 at 256 KiB, 16 at 16 KiB, 4 at 64 KiB), no run lost to a mixed count
 * (one root, calls apart: each run's calls are its own), finite positive estimates, and
 * use a candidate with no estimate below NC_BCAST_SEL_SWITCH times its own. */
typedef struct {
    size_t sizes[2];
    unsigned cands[2]; /* the candidate modes of each size (bit m: mode m) */
    int nsizes, iters;
    int procs, rotate; /* members; rotate: the root of call i is i mod procs */
} sel_args_t;

static int sel_worker(nc_forkctx_t *ctx)
{
    numacoll_team_t *t = ctx->team;
    const sel_args_t *a = ctx->arg;
    size_t max = a->sizes[0] > a->sizes[a->nsizes - 1] ? a->sizes[0] : a->sizes[a->nsizes - 1];
    unsigned char *buf = malloc(max), *want = malloc(max + 16);
    if (!buf || !want) return 90;
    /* a copy mode out of range is an error on every member, before anything moves */
    for (int bad = 0; bad < 2; bad++) {
        nc_bcast_opts_t o = NC_BCAST_OPTS_DEFAULT;
        o.copy_mode = bad ? NC_BCAST_SEL_MODES : -2;
        if (nc_bcast_run_opts(t, buf, a->sizes[0], 0, &o) != NUMACOLL_ERR_ARG) return 89;
        if (!strstr(numacoll_last_error(), "option copy_mode")) return 89;
    }
    for (int i = 0; i < a->iters; i++) {
        size_t n = a->sizes[i % a->nsizes];
        int root = a->rotate ? i % ctx->size : 0;
        fill(want, n, 0x5e1ull + (uint64_t)i);
        if (ctx->rank == root)
            memcpy(buf, want, n);
        else
            memset(buf, 0, n);
        if (numacoll_bcast(t, buf, n, root) != NUMACOLL_OK) return 91;
        if (memcmp(buf, want, n) != 0) return 92;
        if (numacoll_barrier(t) != NUMACOLL_OK) return 93;
    }
    int rc = 0;
    for (int j = 0; j < a->nsizes && (ctx->rank == 0 || a->rotate); j++) {
        size_t n = a->sizes[j];
        uint32_t cnt[NC_BCAST_SEL_MODES];
        double est[NC_BCAST_SEL_MODES];
        int best, adapt;
        if (nc_bcast_debug_sel(t, n, cnt, est, &best, &adapt) != NUMACOLL_OK) return 94;
        printf("selector of rank %d, %zu bytes: adapt %d, best mode %d; mode: samples/estimate "
               "(ns/B) of each mode with samples:",
               ctx->rank, n, adapt, best);
        for (int m = 0; m < NC_BCAST_SEL_MODES; m++)
            if (cnt[m]) printf(" %d: %u/%.3f", m, cnt[m], est[m]);
        printf("; runs lost (all classes) %llu\n", (unsigned long long)nc_bcast_debug_sel_lost(t));
        if (!adapt) {
            printf("selection is off (oversubscribed team): nothing to check\n");
            continue;
        }
        if (nc_bcast_debug_sel_lost(t) != 0) rc = 98; /* a receiver's sum mixed two runs */
        if (best < 0) { /* the selector never ran for this size */
            rc = 95;
            continue;
        }
        if (!(a->cands[j] >> best & 1)) rc = 99; /* not a candidate */
        for (int m = 0; m < NC_BCAST_SEL_MODES; m++) {
            if (!(a->cands[j] >> m & 1)) {
                if (cnt[m]) rc = 99; /* a mode that is not a candidate was measured */
                continue;
            }
            if (cnt[m] < 1 || cnt[best] < 3) rc = 95;     /* reports lost */
            if (!(est[m] > 0 && est[m] < 100)) rc = 96;   /* nonsense times */
            if (cnt[best] && est[m] < NC_BCAST_SEL_SWITCH * est[best])
                rc = 97; /* not using the best (or one within the switching margin) */
        }
    }
    free(buf);
    free(want);
    return rc;
}

static void run_sel(const sel_args_t *a)
{
    clear_env();
    setenv("NUMACOLL_BCAST_CMA_MIN", "0", 1); /* the queue path (test_bcast_cma's base) */
    if (a->procs > 2) { /* np > CPUs here: selection and STREAM_MIN's 16 KiB asked for */
        setenv("NUMACOLL_BCAST_ADAPT_OVERSUB", "1", 1);
        setenv("NUMACOLL_BCAST_STREAM_MIN", "16K", 1);
    }
    env_reload();
    nc_forkresult_t res;
    int failed = nc_forkrun(a->procs, NC_FORK_BIND, sel_worker, (void *)a, 0, 60, &res);
    assert_int_equal(res.timed_out, 0);
    assert_int_equal(failed, 0);
}

void test_copy_mode_selection(void **state)
{
    (void)state;
    sel_args_t a = {
        .sizes = {256 * 1024}, .cands = {0xf}, .nsizes = 1, .iters = 600, .procs = 2};
    run_sel(&a);
}

/* Samples of several calls each, and two classes whose runs take turns (one run open at a
 * time: the receivers keep one sum) */
void test_copy_mode_selection_runs(void **state)
{
    (void)state;
    sel_args_t a = {.sizes = {16 * 1024, 64 * 1024}, .cands = {0x303, 0x3}, .nsizes = 2,
                    .iters = 12000, .procs = 2};
    run_sel(&a);
}

/* 2-8 KiB: two halves (the queue's default there) or the model's one fragment (mode bit 2),
 * each at rotating offsets or not (bit 3), 8 KiB and 6000 bytes (two classes) alternating;
 * no streamed stores below STREAM_MIN. On the AMD VM the one fragment was 24 % faster at
 * 8 KiB in one regime, no rotation 13 % faster in the other; on the Intel VM the halves 30 %. */
void test_copy_mode_selection_split(void **state)
{
    (void)state;
    sel_args_t a = {.sizes = {8192, 6000}, .cands = {0x1111, 0x1111}, .nsizes = 2,
                    .iters = 32000, .procs = 2};
    run_sel(&a);
}

/* Three roots taking turns, each measuring its own runs: every receiver keeps a sum and a
 * report word per root, so no root's run is voided by another's (with one sum per receiver,
 * each root's first measured call restarted the others' sums). Three processes are more
 * than this VM's CPUs: NUMACOLL_BCAST_ADAPT_OVERSUB turns selection on for the team, and
 * NUMACOLL_BCAST_STREAM_MIN set to its default makes 16 KiB a selected size there too. */
void test_copy_mode_selection_roots(void **state)
{
    (void)state;
    sel_args_t a = {.sizes = {16 * 1024}, .cands = {0x3}, .nsizes = 1, .iters = 3000,
                    .procs = 3, .rotate = 1}; /* 16 measured calls a run */
    run_sel(&a);
}

/* The model's constants behind f and s: configured, measured (rank 0's on every member) or
 * the fallback of an oversubscribed team; f and s follow the model from them. */
typedef struct {
    int want_t, want_tw; /* expected t_measured / tw_measured (-1: measured, or the fallback
                          * if the team turns out oversubscribed on this machine) */
    double t, tw;        /* expected values in seconds (sources 0 and 2) */
    int mismatch;        /* rank 1 alone sets NUMACOLL_BCAST_MODEL_TW: an error on all */
} model_args_t;

static int model_worker(nc_forkctx_t *ctx)
{
    const model_args_t *a = ctx->arg;
    numacoll_team_t *t = ctx->team;
    char msg[100];
    memset(msg, ctx->rank == 0 ? 7 : 0, sizeof msg);
    if (a->mismatch) {
        if (ctx->rank == 1) {
            setenv("NUMACOLL_BCAST_MODEL_TW", "500", 1);
            if (numacoll_config_reload() != NUMACOLL_OK) return 89;
        }
        int rc = numacoll_bcast(t, msg, sizeof msg, 0);
        if (rc != NUMACOLL_ERR_CONFIG || !strstr(numacoll_last_error(), "differ")) return 79;
        return 0;
    }
    if (numacoll_bcast(t, msg, sizeof msg, 0) != NUMACOLL_OK || msg[99] != 7) return 80;
    nc_bcast_info_t in;
    if (nc_bcast_info(t, &in) != NUMACOLL_OK) return 81;
    int meas = t->oversubscribed ? 2 : 1;
    int want_t = a->want_t >= 0 ? a->want_t : meas, want_tw = a->want_tw >= 0 ? a->want_tw : meas;
    if (in.t_measured != want_t || in.tw_measured != want_tw) return 82;
    double tt = in.model.t, tw = in.model.t_w;
    if (want_t != 1 && fabs(tt - a->t) > 1e-15) return 83;
    if (want_tw != 1 && fabs(tw - a->tw) > 1e-12) return 83;
    if (!(tt > 0 && tt < 1e-6 && tw > 0 && tw < 1)) return 84;
    if (fabs(in.model.t_wo - 2 * tw) > 1e-15 || fabs(in.model.t_a - 0.2 * tw) > 1e-15) return 85;
    /* every member holds rank 0's constants */
    double r0[2] = {tt, tw};
    if (numacoll_bcast(t, r0, sizeof r0, 0) != NUMACOLL_OK) return 86;
    if (r0[0] != tt || r0[1] != tw) return 87;
    /* the geometry is the model's (auto budget: 4 MiB, oversubscribed 8 MiB; q = 2;
     * /dev/shm large enough here) */
    size_t budget = (t->oversubscribed ? 8 : 4) * MiB;
    size_t f = nc_bcast_model_fragment(&in.model, budget, nc_page_size());
    if (in.fragment_bytes != f || in.slots != nc_bcast_model_slots(budget, f, 4)) return 88;
    if (ctx->rank == 0)
        printf("model: t = %.4f ns/byte (source %d), t_W = %.1f ns (source %d) -> f = %zu, "
               "s = %zu\n",
               tt * 1e9, want_t, tw * 1e9, want_tw, in.fragment_bytes, in.slots);
    return 0;
}

/* model_worker on P forked members: every member must pass, none may time out */
static void run_model(int P, model_args_t *a)
{
    nc_forkresult_t res;
    assert_int_equal(nc_forkrun(P, NC_FORK_BIND, model_worker, a, 0, 60, &res), 0);
    assert_int_equal(res.timed_out, 0);
}

void test_model_constants(void **state)
{
    (void)state;
    clear_env(); /* configured: f = sqrt(4 MiB * 1 us / 0.25 ns) = 129528 -> 128 KiB, s = 32 */
    setenv("NUMACOLL_BCAST_MODEL_T", "0.25", 1);
    setenv("NUMACOLL_BCAST_MODEL_TW", "1000", 1);
    env_reload();
    model_args_t cfg = {.want_t = 0, .want_tw = 0, .t = 0.25e-9, .tw = 1e-6};
    run_model(2, &cfg);
    assert_int_equal(nc_bcast_model_fragment(&(nc_bcast_model_t){.t = 0.25e-9, .t_w = 1e-6},
                                             4 * MiB, 4096),
                     131072);
    clear_env(); /* measured, at P = 2 and 3 */
    env_reload();
    model_args_t meas = {.want_t = -1, .want_tw = -1, .t = 1e-10, .tw = 2e-7};
    for (int P = 2; P <= 3; P++)
        run_model(P, &meas);
    clear_env(); /* oversubscribed: the fallback constants, t_W alone configured */
    setenv("NUMACOLL_OVERSUBSCRIBED", "yes", 1);
    setenv("NUMACOLL_BCAST_MODEL_TW", "300", 1);
    env_reload();
    model_args_t over = {.want_t = 2, .want_tw = 0, .t = 1e-10, .tw = 3e-7};
    run_model(3, &over);
    clear_env(); /* one member configured differently: an error on every member, no hang */
    env_reload();
    model_args_t mis = {.mismatch = 1};
    run_model(3, &mis);
    clear_env();
    env_reload();
}

/* Queue memory at first use (NUMACOLL_BCAST_POPULATE): a root whose queue set cannot get
 * its memory (simulated: the next populate fails) fails that call on every member with
 * NUMACOLL_ERR_UNSUPPORTED, at the message's first op or in the middle of a message, and
 * the team goes on working; with `creation` nothing is populated later, so the injected
 * failure is never reached. */
typedef struct {
    int creation; /* NUMACOLL_BCAST_POPULATE=creation */
} pop_args_t;

static int pop_worker(nc_forkctx_t *ctx)
{
    const pop_args_t *a = ctx->arg;
    numacoll_team_t *t = ctx->team;
    int me = ctx->rank, P = ctx->size;
    size_t big = 3 * MiB; /* more than one set of the default 4 MiB queue: two ops */
    unsigned char *buf = malloc(big), *want = malloc(big);
    if (!buf || !want) return 70;
    struct {
        int root;
        size_t n;
        int fail; /* the root's fail-th populate from now fails (0: none) */
        int fails_here;
    } steps[] = {
        {0, 100, 0, 0},                /* inline: sets the team up, no queue touched */
        {1, 100 * 1024, 1, 1},         /* root 1's first queue message: its set 0 fails */
        {1, 100 * 1024, 0, 0},         /* and is populated on the next try */
        {1, big, 0, 0},                /* set 1 as well */
        {2, 64 * 1024, 0, 0},          /* root 2: set 0 */
        {2, big, 2, 1},                /* its second op (the other set) fails */
        {2, big, 0, 0},                /* all fine again */
        {P - 1, 200 * 1024, 0, 0},     /* another root, after all that */
    };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        int root = steps[i].root % P;
        size_t n = steps[i].n;
        fill(want, n, 1000 + i);
        if (me == root) {
            memcpy(buf, want, n);
            if (steps[i].fail) nc_seg_debug_fail_populate(steps[i].fail);
        } else {
            memset(buf, 0x33, n);
        }
        int rc = numacoll_bcast(t, buf, n, root);
        int expect = steps[i].fails_here && !a->creation ? NUMACOLL_ERR_UNSUPPORTED : NUMACOLL_OK;
        if (me == root) nc_seg_debug_fail_populate(0);
        if (rc != expect) {
            fprintf(stderr, "rank %d, step %zu: expected %s, got %s (%s)\n", me, i,
                    numacoll_status_name(expect), numacoll_status_name(rc), numacoll_last_error());
            return 71;
        }
        if (rc != NUMACOLL_OK) {
            const char *m = numacoll_last_error();
            if (!strstr(m, "could not get the memory of its queue") ||
                (me == root && !strstr(m, "cannot allocate"))) {
                fprintf(stderr, "rank %d, step %zu: message: %s\n", me, i, m);
                return 72;
            }
            if (me == 0 && i == 1) printf("expected error: %s\n", m);
            continue;
        }
        if (memcmp(buf, want, n) != 0) {
            fprintf(stderr, "rank %d, step %zu: wrong content\n", me, i);
            return 73;
        }
    }
    free(buf);
    free(want);
    return 0;
}

void test_populate_first_use(void **state)
{
    (void)state;
    for (int creation = 0; creation < 2; creation++) {
        clear_env();
        setenv("NUMACOLL_BCAST_CMA_MIN", "0", 1); /* the queues, not CMA (test_bcast_cma) */
        if (creation) setenv("NUMACOLL_BCAST_POPULATE", "creation", 1);
        env_reload();
        pop_args_t a = {.creation = creation};
        int Ps[] = {2, 4};
        for (int i = 0; i < 2; i++)
            run_members(Ps[i], pop_worker, &a, 60);
    }
    clear_env();
    setenv("NUMACOLL_BCAST_POPULATE", "lazy", 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_ERR_CONFIG);
    assert_non_null(strstr(numacoll_last_error(), "allowed: first-use, creation"));
    clear_env();
    env_reload();
}
