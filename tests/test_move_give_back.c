/*
 * The data-movement engine gives its slots' pages back (NUMACOLL_MOVE_GIVE_BACK): forked
 * teams with NUMACOLL_MOVE=copy, 4 slots of 16 KiB (16448-byte slots: 17 pages a member)
 * and 256 eager bytes a slot; residency measured with mincore(2) on the member's slot
 * range of the shared mapping.
 *  - after a large call, NUMACOLL_MOVE_GIVE_BACK=4 small calls in a row return every
 *    member's pages beyond the eager parts (3 small ones do not), the next large call gets
 *    them again and moves every byte right (also where a member cannot get them at once:
 *    short chunks, as test_move's test_lazy_pages_fail); NUMACOLL_MOVE_GIVE_BACK=0 keeps
 *    them;
 *  - a reader still in an earlier call (P = 3, member 2 held back before a scatter whose
 *    root, member 1, then completes 4 small scatters) keeps the owner from punching the
 *    chunks it has yet to read: it receives every byte, and the owner gives the pages back
 *    once the reader is past them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "coll/move/move_internal.h"
#include "core/nc_internal.h"
#include "forkrun.h"
#include "test_move_common.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { SLOTS = 4, GIVE_BACK = 4, LARGE = 65536, SMALL = 8 };

/* pages of this member's slot range (its area past the control lines) in memory */
static size_t slot_pages_in_memory(numacoll_team_t *t, size_t *total)
{
    nc_move_team_t *s = t->move;
    size_t ps = nc_page_size(), n = (s->area_stride - s->slots_off) / ps;
    if (total) *total = n;
    return nc_pages_in_memory(mv_area(s, t->rank) + s->slots_off, n * ps);
}

/* at most the pages that hold the slots' eager parts (two where one crosses a page) */
static int given_back(nc_forkctx_t *c, const char *when)
{
    size_t total = 0, in = slot_pages_in_memory(c->team, &total);
    if (in <= 2 * SLOTS && in < total) return 1;
    fprintf(stderr, "rank %d: %zu of %zu slot pages in memory %s (at most %d expected)\n",
            c->rank, in, total, when, 2 * SLOTS);
    return 0;
}

static int all_in_memory(nc_forkctx_t *c, const char *when)
{
    size_t total = 0, in = slot_pages_in_memory(c->team, &total);
    if (in == total) return 1;
    fprintf(stderr, "rank %d: %zu of %zu slot pages in memory %s (all expected)\n", c->rank,
            in, total, when);
    return 0;
}

static int run(nc_forkctx_t *c, kind_t kind, size_t b, int root, int i)
{
    mcase_t m = {kind, b, root, 0, (unsigned)i, 0};
    return mc_run(c->team, c->rank, c->size, &m, i);
}

/* arg: NUMACOLL_MOVE_GIVE_BACK as set (GIVE_BACK or 0) */
static int threshold_worker(nc_forkctx_t *c)
{
    const int keep = *(const int *)c->arg == 0;
    int i = 0;
    /* a large allgather: every member streams 16 full chunks through its 4 slots */
    if (run(c, ALLGATHER, LARGE, -1, i++)) return 10;
    if (!all_in_memory(c, "after the large call")) return 11;
    /* small allgathers and alltoalls (each member reads every other in each, so all have
     * left the large call after the first): the pages stay for 3, go after the 4th */
    for (int k = 0; k < GIVE_BACK - 1; k++)
        if (run(c, k & 1 ? ALLTOALL : ALLGATHER, SMALL, -1, i++)) return 12;
    if (!all_in_memory(c, "after 3 small calls")) return 13;
    if (run(c, ALLGATHERV, SMALL, -1, i++)) return 14;
    if (keep) {
        for (int k = 0; k < 5 * GIVE_BACK; k++)
            if (run(c, ALLGATHER, SMALL, -1, i++)) return 15;
        return all_in_memory(c, "after 24 small calls, NUMACOLL_MOVE_GIVE_BACK=0") ? 0 : 16;
    }
    if (!given_back(c, "after 4 small calls")) return 17;
    /* the next large calls get the pages again, every byte right; member 0 cannot get
     * them at the first: it streams in short chunks and keeps the eager pages only */
    if (c->rank == 0) nc_seg_debug_fail_populate(1);
    if (run(c, ALLTOALLV, LARGE / 4, -1, i++)) return 18;
    if (c->rank == 0) nc_seg_debug_fail_populate(0);
    if (c->rank == 0 && (!c->team->move->short_logged ||
                         !given_back(c, "after a call in short chunks")))
        return 24;
    if (run(c, ALLGATHER, LARGE, -1, i++)) return 19;
    if (!all_in_memory(c, "after large calls again")) return 20;
    /* large calls in between restart the count */
    for (int round = 0; round < 3; round++) {
        for (int k = 0; k < GIVE_BACK - 1; k++)
            if (run(c, ALLGATHER, SMALL, -1, i++)) return 21;
        if (run(c, ALLGATHER, LARGE, -1, i++)) return 22;
    }
    return all_in_memory(c, "with a large call every 4 calls") ? 0 : 23;
}

static void set_env(const char *give_back)
{
    nc_test_clear_env();
    setenv("NUMACOLL_TIMEOUT", "30", 1); /* a hang becomes an error naming the culprit */
    setenv("NUMACOLL_MOVE", "copy", 1);
    setenv("NUMACOLL_MOVE_FRAGMENT", "16K", 1);
    setenv("NUMACOLL_MOVE_SLOTS", "4", 1);
    setenv("NUMACOLL_MOVE_EAGER", "256", 1);
    if (give_back) setenv("NUMACOLL_MOVE_GIVE_BACK", give_back, 1);
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
}

static void run_members(int P, nc_forkrun_fn worker, void *arg, size_t shared)
{
    int baseline = nc_shm_baseline();
    nc_forkresult_t res;
    int failed = nc_forkrun(P, NC_FORK_BIND, worker, arg, shared, 60, &res);
    for (int r = 0; r < P; r++)
        if (res.exit_code[r]) fprintf(stderr, "rank %d exited %d\n", r, res.exit_code[r]);
    assert_int_equal(res.timed_out, 0);
    assert_int_equal(failed, 0);
    assert_true(nc_shm_settle(baseline) <= baseline);
}

static void test_given_back_after_small_calls(void **state)
{
    (void)state;
    if (!nc_seg_populate_supported()) skip(); /* the pages stay (state.c) */
    int give_back = GIVE_BACK;
    set_env("4");
    run_members(2, threshold_worker, &give_back, 0);
    run_members(3, threshold_worker, &give_back, 0);
    give_back = 0;
    set_env("0");
    run_members(2, threshold_worker, &give_back, 0);
    nc_test_clear_env();
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
}

/* P = 3. Member 1 scatters 12000 bytes to each (its stream: two full chunks; member 2
 * reads both, member 0 the first) while member 2 is held back before the call. Members 0
 * and 1 then complete 4 small scatters from member 0 (whose slots are free: it wrote no
 * stream in the large call), so member 1 reaches NUMACOLL_MOVE_GIVE_BACK=4 while member 2
 * has read nothing of its stream: it must keep the pages (checked before member 2 is let
 * go). Member 2 then receives every byte; after a barrier and one small call more member 1
 * gives them back, and a large scatter gets them again. */
static int slow_reader_worker(nc_forkctx_t *c)
{
    _Atomic int *go = c->shared;
    int i = 0;
    for (int k = 0; k < SLOTS; k++) /* every member's slots hold small chunks, all read */
        if (run(c, ALLGATHER, SMALL, -1, i++)) return 30;
    if (numacoll_barrier(c->team) != NUMACOLL_OK) return 31;
    if (c->rank == 2) {
        /* member 1 stores go (release) once it has decided; a test's wait, so it sleeps */
        while (!atomic_load_explicit(go, memory_order_acquire))
            usleep(1000);
    }
    if (run(c, SCATTER, 12000, 1, i++)) return 32;
    int bad = 0;
    for (int k = 0; k < GIVE_BACK && !bad; k++)
        bad = run(c, SCATTER, SMALL, 0, i++) ? 33 : 0;
    if (c->rank == 1) {
        if (!bad && !all_in_memory(c, "while rank 2 has not read its chunks")) bad = 34;
        atomic_store_explicit(go, 1, memory_order_release); /* also on failure: no hang */
    }
    if (bad) return bad;
    if (numacoll_barrier(c->team) != NUMACOLL_OK) return 36;
    if (run(c, ALLGATHER, SMALL, -1, i++)) return 37;
    if (c->rank == 1 && !given_back(c, "once rank 2 read its chunks")) return 38;
    if (run(c, SCATTER, 12000, 1, i++)) return 39;
    if (c->rank == 1 && !all_in_memory(c, "after the large scatter again")) return 40;
    return 0;
}

static void test_slow_reader_keeps_pages(void **state)
{
    (void)state;
    if (!nc_seg_populate_supported()) skip();
    set_env("4");
    run_members(3, slow_reader_worker, NULL, sizeof(_Atomic int));
    nc_test_clear_env();
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_given_back_after_small_calls),
        cmocka_unit_test(test_slow_reader_keeps_pages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
