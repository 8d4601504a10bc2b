/*
 * shm-mcs: the MCS tree barrier (Mellor-Crummey and Scott): a 4-ary arrival tree and a
 * binary wake-up tree, every process spinning on lines of its own block only.
 *
 * Arrival: rank r's children are 4r+1 .. 4r+4. Each child posts the episode number on
 * its own slot line in the PARENT's block (one line per child slot, single writer); the
 * parent waits until its (up to) four slots have reached the episode, then posts to its
 * own parent. Wake-up: rank 0, then every woken rank, posts the episode on the wake-up
 * line of its binary-tree children 2r+1, 2r+2, which lives in the CHILD's block.
 *
 * Placement: every line is placed in the block of the process that spins on it (its
 * READER), so all polling stays NUMA-local and each transfer happens once, when the
 * single remote writer stores. (The original MCS packs the four child flags into one
 * word; here each slot keeps its own line, the rule of this library.)
 */
#include "common.h"

enum { SLOT0 = 0, WAKE = 4, NLINES = 5 };

static size_t global_bytes(const numacoll_team_t *t)
{
    (void)t;
    return 0;
}
static size_t rank_bytes(const numacoll_team_t *t)
{
    return NLINES * t->line;
}

static int run(numacoll_team_t *t, nc_barrier_slot_t *s)
{
    uint64_t e = ++s->calls;
    const int r = t->rank, P = t->size;
    char *mine = nc_barrier_rank_area(t, s, r);
    for (int j = 0; j < 4 && 4 * r + 1 + j < P; j++) {
        /* slot j of my block is written only by my arrival child 4r+1+j, after its whole
         * subtree arrived: >= e means that subtree reached episode e */
        int rc = nc_bar_wait(t, nc_bar_line(t, mine, SLOT0 + (size_t)j), e, "barrier(mcs)");
        if (rc) return rc;
    }
    if (r != 0) {
        char *parent = nc_barrier_rank_area(t, s, (r - 1) / 4);
        nc_bar_post(t, nc_bar_line(t, parent, SLOT0 + (size_t)((r - 1) % 4)), e);
        /* my wake-up line is written only by my wake-up parent (r-1)/2, after rank 0 saw
         * the whole arrival tree: >= e means every process arrived at episode e */
        int rc = nc_bar_wait(t, nc_bar_line(t, mine, WAKE), e, "barrier(mcs)");
        if (rc) return rc;
    }
    for (int c = 2 * r + 1; c <= 2 * r + 2 && c < P; c++)
        nc_bar_post(t, nc_bar_line(t, nc_barrier_rank_area(t, s, c), WAKE), e);
    return NUMACOLL_OK;
}

const nc_barrier_algo_t nc_barrier_mcs = {
    .name = "mcs",
    .description = "MCS tree barrier: 4-ary arrival tree, binary wake-up tree, local spinning",
    .global_bytes = global_bytes,
    .rank_bytes = rank_bytes,
    .run = run,
};
