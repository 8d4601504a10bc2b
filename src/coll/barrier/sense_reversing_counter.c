/*
 * shm-sense-reversing-counter: a flat tree of per-process counters.
 *
 * Every rank r > 0 bumps its own arrival counter (a line in its own block) to the episode
 * number; rank 0 waits until every counter has reached the episode, then bumps one global
 * release word that all others wait on. O(P) work for rank 0, no atomic read-modify-write.
 *
 * Placement: the arrival counter lives in its WRITER's block (the arriving rank): its store
 * hits a line it owns and only rank 0 fetches it, once per episode. The release word is in
 * the global block, first-touched by rank 0 = its only writer; the P-1 readers each fetch
 * it once when it changes.
 *
 * P = 1: returns at once. P = 2: one round trip (rank 1 -> rank 0 -> rank 1).
 */
#include "common.h"

static size_t global_bytes(const numacoll_team_t *t)
{
    return t->line;
}
static size_t rank_bytes(const numacoll_team_t *t)
{
    return t->line;
}

static int run(numacoll_team_t *t, nc_barrier_slot_t *s)
{
    uint64_t k = ++s->calls;
    _Atomic uint64_t *release = nc_bar_line(t, s->global, 0);
    if (t->rank != 0) {
        nc_bar_post(t, nc_bar_line(t, nc_barrier_rank_area(t, s, t->rank), 0), k);
        /* release is written only by rank 0, after it saw every arrival counter >= k:
         * seeing >= k means all P ranks arrived at episode k and their prior writes are
         * visible to us (rank 0 acquired them and released them with this store) */
        return nc_bar_wait(t, release, k, "barrier(sense-reversing-counter)");
    }
    for (int r = 1; r < t->size; r++) {
        /* rank r's arrival counter, written only by rank r: >= k means rank r entered
         * episode k, and its writes before the barrier are visible */
        int rc = nc_bar_wait(t, nc_bar_line(t, nc_barrier_rank_area(t, s, r), 0), k,
                             "barrier(sense-reversing-counter)");
        if (rc) return rc;
    }
    nc_bar_post(t, release, k);
    return NUMACOLL_OK;
}

const nc_barrier_algo_t nc_barrier_sense_reversing_counter = {
    .name = "sense-reversing-counter",
    .description = "flat tree: each rank bumps its own counter line, rank 0 waits for all and "
                   "bumps one release word",
    .global_bytes = global_bytes,
    .rank_bytes = rank_bytes,
    .run = run,
};
