/*
 * shm-sense-reversing-gr: two-phase flat tree, gather then release.
 *
 * Gather: every rank r > 0 posts the episode number on its arrival line; rank 0 waits
 * for all of them. Release: rank 0 posts the episode on every rank's own wake-up line,
 * and each rank waits on its own line only (no line read by P-1 processes at once).
 *
 * Placement: both lines live in the block of the rank r they belong to. The arrival line
 * is written by r (a store into a line r owns; rank 0 fetches it once). The wake-up line
 * is READ-spun by r, so it sits in r's NUMA-local block: r's polling never leaves its
 * node and rank 0 pays one remote store per rank in the release phase.
 */
#include "common.h"

enum { ARRIVE = 0, WAKE = 1 };

static size_t global_bytes(const numacoll_team_t *t)
{
    (void)t;
    return 0;
}
static size_t rank_bytes(const numacoll_team_t *t)
{
    return 2 * t->line;
}

static int run(numacoll_team_t *t, nc_barrier_slot_t *s)
{
    uint64_t k = ++s->calls;
    if (t->rank != 0) {
        char *mine = nc_barrier_rank_area(t, s, t->rank);
        nc_bar_post(t, nc_bar_line(t, mine, ARRIVE), k);
        /* my wake-up line is written only by rank 0 after the gather phase: >= k means
         * every rank arrived at episode k and their prior writes are visible to us */
        return nc_bar_wait(t, nc_bar_line(t, mine, WAKE), k, "barrier(sense-reversing-gr)");
    }
    for (int r = 1; r < t->size; r++) {
        /* rank r's arrival line, written only by rank r: >= k means r entered episode k */
        int rc = nc_bar_wait(t, nc_bar_line(t, nc_barrier_rank_area(t, s, r), ARRIVE), k,
                             "barrier(sense-reversing-gr)");
        if (rc) return rc;
    }
    for (int r = 1; r < t->size; r++)
        nc_bar_post(t, nc_bar_line(t, nc_barrier_rank_area(t, s, r), WAKE), k);
    return NUMACOLL_OK;
}

const nc_barrier_algo_t nc_barrier_sense_reversing_gr = {
    .name = "sense-reversing-gr",
    .description = "two-phase flat tree: gather per-rank arrival lines at rank 0, then rank 0 "
                   "wakes every rank on its own line",
    .global_bytes = global_bytes,
    .rank_bytes = rank_bytes,
    .run = run,
};
