/*
 * shm-tournament: the tournament barrier (Hensgen, Finkel, Manber; as in Mellor-Crummey
 * and Scott). In round j (j = 0 .. ceil(log2 P) - 1) rank r with r mod 2^(j+1) == 0 is
 * the statically chosen winner and r + 2^j (if < P) the loser: the loser posts the episode
 * on the winner's round-j line and drops out; the winner waits for it and plays the next
 * round. Rank 0 is the champion. Wake-up walks the same tree down: the champion, then every
 * woken process, posts the episode on the wake-up line of each loser it beat, latest round
 * first.
 *
 * Placement: the round-j line lives in the WINNER's block and the wake-up line in the
 * loser's block: every line is in the block of the process spinning on it (its reader),
 * so polling is local and the single remote writer pays one transfer.
 */
#include "common.h"

static size_t global_bytes(const numacoll_team_t *t)
{
    (void)t;
    return 0;
}
/* rounds lines + 1 wake-up line */
static size_t rank_bytes(const numacoll_team_t *t)
{
    return (size_t)(nc_bar_ceil_log2(t->size) + 1) * t->line;
}

static int run(numacoll_team_t *t, nc_barrier_slot_t *s)
{
    uint64_t e = ++s->calls;
    const int r = t->rank, P = t->size, rounds = nc_bar_ceil_log2(P);
    char *mine = nc_barrier_rank_area(t, s, r);
    int j = 0;
    for (; j < rounds; j++) {
        int bit = 1 << j;
        if (r & bit) { /* loser of round j: report to the winner, then wait to be woken */
            nc_bar_post(t, nc_bar_line(t, nc_barrier_rank_area(t, s, r - bit), (size_t)j), e);
            /* my wake-up line is written only by the winner r - 2^j, once the champion
             * saw every arrival: >= e means all P processes arrived at episode e */
            int rc = nc_bar_wait(t, nc_bar_line(t, mine, (size_t)rounds), e, "barrier(tournament)");
            if (rc) return rc;
            break;
        }
        if (r + bit < P) {
            /* my round-j line is written only by the round-j loser r + 2^j after its own
             * subtree arrived: >= e means that subtree reached episode e */
            int rc = nc_bar_wait(t, nc_bar_line(t, mine, (size_t)j), e, "barrier(tournament)");
            if (rc) return rc;
        }
    }
    /* wake the losers I beat, in rounds j-1 .. 0 (the biggest subtree first) */
    for (int i = j - 1; i >= 0; i--) {
        int loser = r + (1 << i);
        if (loser < P)
            nc_bar_post(t, nc_bar_line(t, nc_barrier_rank_area(t, s, loser), (size_t)rounds), e);
    }
    return NUMACOLL_OK;
}

const nc_barrier_algo_t nc_barrier_tournament = {
    .name = "tournament",
    .description = "tournament barrier: static winners per round, tree wake-up, local spinning",
    .global_bytes = global_bytes,
    .rank_bytes = rank_bytes,
    .run = run,
};
