/*
 * shm-dissemination: the dissemination barrier (Hensgen, Finkel, Manber). In round j
 * (j = 0 .. ceil(log2 P) - 1) rank r signals rank (r + 2^j) mod P and waits for the signal
 * of rank (r - 2^j) mod P. After the last round every rank has heard, directly or
 * transitively, from all P ranks. No release phase: everybody leaves after its last round.
 * Works for any P (not only powers of two).
 *
 * With P = 2 this is the two-process fast path: each process stores to its own line and
 * waits on the other's, so the two one-way transfers happen in parallel (about one
 * transfer of latency, half a cache-line round trip).
 *
 * Placement: the round-j line of rank r is written only by r and read only by
 * r + 2^j: it lives in its WRITER's block. The store then upgrades a line the writer
 * already holds (shared after the reader's last fetch) instead of first pulling a line the
 * reader is spinning on, and the reader takes the one transfer it needs when it misses.
 */
#include "common.h"

static size_t global_bytes(const numacoll_team_t *t)
{
    (void)t;
    return 0;
}
static size_t rank_bytes(const numacoll_team_t *t)
{
    return (size_t)nc_bar_ceil_log2(t->size) * t->line;
}

static int run(numacoll_team_t *t, nc_barrier_slot_t *s)
{
    uint64_t e = ++s->calls;
    const int r = t->rank, P = t->size, rounds = nc_bar_ceil_log2(P);
    char *mine = nc_barrier_rank_area(t, s, r);
    for (int j = 0; j < rounds; j++) {
        int from = ((r - (1 << j)) % P + P) % P;
        nc_bar_post(t, nc_bar_line(t, mine, (size_t)j), e);
        /* round-j line of rank r - 2^j, written only by it after its rounds < j of episode
         * e: >= e means it (and everyone it heard from) reached episode e */
        int rc = nc_bar_wait(t, nc_bar_line(t, nc_barrier_rank_area(t, s, from), (size_t)j), e,
                             "barrier(dissemination)");
        if (rc) return rc;
    }
    return NUMACOLL_OK;
}

const nc_barrier_algo_t nc_barrier_dissemination = {
    .name = "dissemination",
    .description = "dissemination: ceil(log2 P) rounds, rank r signals r+2^j and waits for "
                   "r-2^j; no release phase (P = 2: one parallel exchange)",
    .global_bytes = global_bytes,
    .rank_bytes = rank_bytes,
    .run = run,
};
