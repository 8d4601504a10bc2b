/*
 * Algorithm "hier": the fold climbs the team's topology groups (NUMA nodes, then sockets,
 * then the top group of the remaining leaders; src/topo/). At each level the leader of a
 * group (its lowest rank) folds its members' values in rank order: at the lowest level their
 * inputs, from their in slots, above it the partial results of the level below, from their
 * result slots; it keeps its partial in its own result slot and announces it with its
 * partial flag, chunk * 16 + level + 1. The last level's leader then holds the result, and
 * every member that wants it copies it from there. A reader on another NUMA node fetches
 * one partial per group instead of one input per member: the small-message algorithm of
 * teams that span NUMA nodes. Every member, a reduce's root too, posts its whole input
 * (rd_post_whole): its group's leader reads it. A team without usable levels folds as flat
 * does.
 *
 * Order of the fold: inside each group in rank order, then the groups' partials in order of
 * their leaders' ranks (leaders are their groups' lowest ranks), level by level: with groups
 * of consecutive ranks, ((x_0 op x_1) op (x_2 op x_3)) for two groups of two. The same on
 * every member and at every call, but not the flat order: results differ from flat's in the
 * last bits of floating-point sums.
 */
#include "reduce_internal.h"

#include "../../topo/topo.h"

#include <string.h>

enum { LEVEL_STRIDE = 16 }; /* partial flag = chunk * 16 + level + 1 (at most 15 levels) */

/* our group at @p level (we are in one at every level up to the last one we lead) */
static const nc_group_t *group_at(const nc_hier_t *h, int level, int me)
{
    int g = h->group_of[(size_t)level * h->nprocs + me];
    return g >= 0 ? &h->levels[level].groups[g] : NULL;
}

int rd_step_hier(rd_call_t *call, const rd_chunk_t *chunk)
{
    nc_reduce_team_t *r = call->state;
    const nc_hier_t *h = r->hier;
    const size_t es = call->esize, bytes = chunk->n * es;
    if (!h || h->nlevels <= 0 || h->nlevels >= LEVEL_STRIDE) return rd_step_flat(call, chunk);
    const uint64_t base = chunk->number * LEVEL_STRIDE;
    char *partial = rd_result(r, call->me, chunk->slot);
    int rc;
    for (int level = 0; level < h->nlevels; level++) {
        const nc_group_t *g = group_at(h, level, call->me);
        if (!g || g->members[0] != call->me) break; /* not this group's leader: we are done */
        if (level == 0) {
            if (chunk->first != 0 && (rc = rd_wait_posted(call, chunk))) return rc;
            /* our own input from our slot: in place, the output is our input */
            memcpy(partial, rd_in(r, call->me, chunk->slot), bytes);
        }
        for (int i = 1; i < g->size; i++) {
            int m = g->members[i];
            const char *value;
            if (level == 0) {
                value = rd_in(r, m, chunk->slot); /* posted: the protocol or the wait above */
            } else {
                /* Wait: member m alone writes its partial flag, with release after its
                 * partial of this level - 1; the flag's value (acquire) makes it visible,
                 * and m rewrites that slot only for chunk + slots, after our done */
                rc = rd_wait_flag(call, m, rd_flag(r, m, RD_LINE_PARTIAL),
                                  base + (uint64_t)level);
                if (rc) return rc;
                value = rd_result(r, m, chunk->slot);
            }
            call->kernel(partial, partial, value, chunk->n);
        }
        /* release: our partial of this level before the flag that announces it */
        nc_flag_post(call->team, rd_flag(r, call->me, RD_LINE_PARTIAL), base + (uint64_t)level + 1);
    }
    if (!call->output) return NUMACOLL_OK;
    int holder = h->levels[h->nlevels - 1].groups[0].members[0];
    /* Wait: the last level's leader alone writes its partial flag, with release after the
     * whole result; see above for the slot's reuse */
    rc = rd_wait_flag(call, holder, rd_flag(r, holder, RD_LINE_PARTIAL),
                      base + (uint64_t)h->nlevels);
    if (rc) return rc;
    memcpy(call->output + chunk->first * es, rd_result(r, holder, chunk->slot), bytes);
    return NUMACOLL_OK;
}
