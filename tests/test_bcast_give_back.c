/*
 * The pipelined broadcast gives its queue pages back (NUMACOLL_BCAST_GIVE_BACK): forked
 * teams with a queue of 256 KiB a member (8 slots of 32 KiB in 2 sets), the model's
 * constants configured (no calibration) and residency measured with mincore(2) on the
 * member's queue range of the shared mapping.
 *  - after a large broadcast from rank 0, NUMACOLL_BCAST_GIVE_BACK=4 calls in a row that do
 *    not write into its queue return its pages (3 do not; a large broadcast of another
 *    root, two ops, counts as one call), the next large broadcast gets them again and
 *    moves every byte right; where the root cannot get them, its broadcast goes in inline
 *    pieces and still delivers every byte (P = 2, 3, 4: at 4 an inner tree node forwards
 *    the pieces); NUMACOLL_BCAST_GIVE_BACK=0 keeps them;
 *  - a receiver still before the large broadcast (P = 2, rank 1 held back) keeps the root
 *    from punching: it receives every byte, and the root gives the pages back once it is
 *    past them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "coll/bcast/bcast_internal.h"
#include "core/nc_internal.h"
#include "forkrun.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { GIVE_BACK = 4, LARGE = 256 << 10, SMALL = 8 };

/* pages of this member's queue in memory (-1: mincore failed), of *total */
static long queue_pages_in_memory(numacoll_team_t *t, size_t *total)
{
    bcast_t *b = t->bcast;
    size_t ps = nc_page_size(), n = b->queue_bytes / ps;
    size_t in = nc_pages_in_memory(slot_buf(b, t->rank, 0), n * ps);
    *total = n;
    return in == (size_t)-1 ? -1 : (long)in;
}

static int residency(nc_forkctx_t *c, int all, const char *when)
{
    size_t total = 0;
    long in = queue_pages_in_memory(c->team, &total);
    if (in >= 0 && (all ? (size_t)in == total : in == 0)) return 1;
    fprintf(stderr, "rank %d: %ld of %zu queue pages in memory %s (%s expected)\n", c->rank, in,
            total, when, all ? "all" : "none");
    return 0;
}

/* a broadcast of @p bytes from @p root with the pattern of call @p i; 0 if every byte is right */
static int bcast(nc_forkctx_t *c, size_t bytes, int root, int i)
{
    unsigned char *buf = malloc(bytes);
    if (!buf) return 1;
    for (size_t k = 0; k < bytes; k++)
        buf[k] = c->rank == root ? (unsigned char)(k * 7 + (size_t)i * 13 + 1) : 0xee;
    int rc = numacoll_bcast(c->team, buf, bytes, root), bad = rc != NUMACOLL_OK;
    for (size_t k = 0; k < bytes && !bad; k++)
        bad = buf[k] != (unsigned char)(k * 7 + (size_t)i * 13 + 1);
    if (bad)
        fprintf(stderr, "rank %d: broadcast %d (%zu bytes from %d): rc %d (%s)%s\n", c->rank, i,
                bytes, root, rc, rc ? numacoll_last_error() : "", rc ? "" : ", wrong bytes");
    free(buf);
    return bad;
}

/* arg: NUMACOLL_BCAST_GIVE_BACK as set (GIVE_BACK or 0) */
static int threshold_worker(nc_forkctx_t *c)
{
    const int keep = *(const int *)c->arg == 0, me0 = c->rank == 0;
    int i = 0;
    if (bcast(c, LARGE, 0, i++)) return 10; /* two ops, both sets of rank 0's queue */
    if (me0 && !residency(c, 1, "after the large broadcast")) return 11;
    /* 3 calls without rank 0's queue: small from 1, large from 1 (two ops), small from 0 */
    if (bcast(c, SMALL, 1, i++) || bcast(c, LARGE, 1, i++) || bcast(c, SMALL, 0, i++)) return 12;
    if (me0 && !residency(c, 1, "after 3 calls")) return 13;
    /* every member is past the large broadcast: the 4th call returns the pages */
    if (numacoll_barrier(c->team) != NUMACOLL_OK) return 14;
    if (bcast(c, SMALL, 1, i++)) return 15;
    if (keep) {
        for (int k = 0; k < 5 * GIVE_BACK; k++)
            if (bcast(c, SMALL, k % c->size, i++)) return 16;
        return !me0 || residency(c, 1, "after 24 calls, NUMACOLL_BCAST_GIVE_BACK=0") ? 0 : 17;
    }
    if (me0 && !residency(c, 0, "after 4 calls")) return 18;
    /* rank 0 cannot get them back at once: inline pieces, every byte right, no pages */
    if (me0) nc_seg_debug_fail_populate(1);
    int bad = bcast(c, LARGE, 0, i++);
    if (me0) nc_seg_debug_fail_populate(0);
    if (bad) return 19;
    if (me0 && (!c->team->bcast->short_logged || !residency(c, 0, "after a call in pieces")))
        return 20;
    /* the next large broadcast gets them again */
    if (bcast(c, LARGE, 0, i++) || bcast(c, SMALL, 1, i++)) return 21;
    return !me0 || residency(c, 1, "after the large broadcast again") ? 0 : 22;
}

static void set_env(const char *give_back)
{
    nc_test_clear_env();
    setenv("NUMACOLL_TIMEOUT", "30", 1); /* a hang becomes an error naming the culprit */
    setenv("NUMACOLL_BCAST_QUEUE_BYTES", "256K", 1);
    setenv("NUMACOLL_BCAST_FRAGMENT", "32K", 1);
    setenv("NUMACOLL_BCAST_SETS", "2", 1);
    setenv("NUMACOLL_BCAST_MODEL_T", "0.1", 1);
    setenv("NUMACOLL_BCAST_MODEL_TW", "200", 1);
    setenv("NUMACOLL_BCAST_ADAPT", "0", 1);
    setenv("NUMACOLL_BCAST_RELAY", "0", 1);
    setenv("NUMACOLL_BCAST_CMA_MIN", "0", 1);
    setenv("NUMACOLL_BCAST_POPULATE", "first-use", 1);
    setenv("NUMACOLL_BCAST_TREE", "kary", 1);
    if (give_back) setenv("NUMACOLL_BCAST_GIVE_BACK", give_back, 1);
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
    if (!nc_seg_populate_supported()) skip(); /* the queues get their pages at creation */
    int give_back = GIVE_BACK;
    set_env("4");
    run_members(2, threshold_worker, &give_back, 0);
    run_members(3, threshold_worker, &give_back, 0);
    run_members(4, threshold_worker, &give_back, 0); /* rank 1 forwards to rank 3 */
    give_back = 0;
    set_env("0");
    run_members(2, threshold_worker, &give_back, 0);
    nc_test_clear_env();
    assert_int_equal(numacoll_config_reload(), NUMACOLL_OK);
}

/* P = 2. After a small broadcast (the state's set-up needs both), rank 1 is held back
 * while rank 0 broadcasts 256 KiB (two ops, one per set: the root waits for nobody) and 4
 * small messages (inline blocks of ops 3..6: no reuse yet), so rank 0 reaches
 * NUMACOLL_BCAST_GIVE_BACK=4 while rank 1 has read nothing of its queue: it must keep the
 * pages (checked before rank 1 is let go). Rank 1 then receives every byte; after a
 * barrier and one call more rank 0 gives them back, and a large broadcast gets them again. */
static int slow_reader_worker(nc_forkctx_t *c)
{
    _Atomic int *go = c->shared;
    int i = 0;
    if (bcast(c, SMALL, 0, i++)) return 30;
    if (c->rank == 1) {
        /* rank 0 stores go (release) once it has decided; a test's wait, so it sleeps */
        while (!atomic_load_explicit(go, memory_order_acquire))
            usleep(1000);
    }
    int bad = bcast(c, LARGE, 0, i++) ? 31 : 0;
    for (int k = 0; k < GIVE_BACK && !bad; k++)
        bad = bcast(c, SMALL, 0, i++) ? 32 : 0;
    if (c->rank == 0) {
        if (!bad && !residency(c, 1, "while rank 1 has not read the large broadcast")) bad = 33;
        atomic_store_explicit(go, 1, memory_order_release); /* also on failure: no hang */
    }
    if (bad) return bad;
    if (numacoll_barrier(c->team) != NUMACOLL_OK) return 34;
    if (bcast(c, SMALL, 1, i++)) return 35;
    if (c->rank == 0 && !residency(c, 0, "once rank 1 read the large broadcast")) return 36;
    if (bcast(c, LARGE, 0, i++)) return 37;
    return c->rank != 0 || residency(c, 1, "after the large broadcast again") ? 0 : 38;
}

static void test_slow_reader_keeps_pages(void **state)
{
    (void)state;
    if (!nc_seg_populate_supported()) skip();
    set_env("4");
    run_members(2, slow_reader_worker, NULL, sizeof(_Atomic int));
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
