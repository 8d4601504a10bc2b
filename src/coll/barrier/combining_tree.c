/*
 * shm-combining-tree: the software combining tree (Yew, Tzeng, Lawrie), fan-in k =
 * NUMACOLL_BARRIER_TREE_K (default 2).
 *
 * Ranks are grouped k by k into the leaf nodes (rank r -> leaf r / k); nodes are grouped
 * k by k into the nodes of the next level, up to a single root. Each node holds one
 * counter. An arriving process increments its leaf's counter; the last of the node's
 * members to arrive climbs to the parent node and increments it, and so on; the process
 * that completes the root posts the global release word, which everybody else waits on.
 * Depth ceil(log_k P); at most k processes contend for one counter.
 *
 * Counters only grow: after episode e a node with c members holds e * c, so "I am the last
 * arriver of episode e" is prev + 1 == e * c, with no reset. An increment for episode e+1
 * can only happen after the release of episode e, i.e. after every increment of e.
 *
 * Release: one global release word (rather than a wake-up tree): with 2 CPUs and
 * oversubscription a single store that every waiter sees beats log_k P dependent wake-ups
 * (compare mcs/tournament, whose wake-up trees measure 3-4x slower at P = 8 on 2 CPUs).
 * Placement: a node's counter is written by up to k processes; it sits in the block of
 * the lowest rank its subtree covers (line = tree level), which is one of those writers
 * and, with a compact placement, on the same NUMA node as the others. The release word is
 * in the global block.
 *
 * The rank areas are sized for k = 2 (the most levels) so that a member with another
 * NUMACOLL_BARRIER_TREE_K cannot make the areas overlap (it would only deadlock, which the
 * timeout reports).
 */
#include "common.h"

#include <stdlib.h>

static size_t global_bytes(const numacoll_team_t *t)
{
    return t->line;
}
/* one line per tree level (at most ceil(log2 P) levels, the k = 2 case) */
static size_t rank_bytes(const numacoll_team_t *t)
{
    int levels = nc_bar_ceil_log2(t->size);
    return (size_t)(levels > 0 ? levels : 1) * t->line;
}

typedef struct ct_priv {
    int k;
} ct_priv_t;

static int init(numacoll_team_t *t, nc_barrier_slot_t *s)
{
    ct_priv_t *p = calloc(1, sizeof *p);
    if (!p) return nc_error(NUMACOLL_ERR_NOMEM, "out of memory (combining-tree barrier)");
    p->k = (int)nc_cfg_int(NC_CFG_BARRIER_TREE_K);
    s->priv = p;
    (void)t;
    return NUMACOLL_OK;
}

static void fini(numacoll_team_t *t, nc_barrier_slot_t *s)
{
    (void)t;
    free(s->priv);
    s->priv = NULL;
}

static int run(numacoll_team_t *t, nc_barrier_slot_t *s)
{
    uint64_t e = ++s->calls;
    const int k = ((ct_priv_t *)s->priv)->k;
    _Atomic uint64_t *release = nc_bar_line(t, s->global, 0);
    if (t->size == 1) return NUMACOLL_OK;

    int below = t->size; /* number of members of the level below (ranks at first) */
    int idx = t->rank;   /* my index among them */
    long span = k;       /* ranks covered by one node of the current level */
    for (size_t level = 0;; level++, span *= k) {
        int nnodes = (below + k - 1) / k;
        int node = idx / k;
        int members = below - node * k < k ? below - node * k : k;
        /* node (level, node) covers ranks node*span ..: its counter sits in the block of
         * the first of them, one of its own writers (NUMA-local to the group with a
         * compact placement) */
        char *host = nc_barrier_rank_area(t, s, (int)((long)node * span));
        _Atomic uint64_t *cnt = nc_bar_line(t, host, level);
        /* acq_rel: the last arriver acquires the earlier arrivers' writes (one release
         * sequence on the counter) and carries them up and into the release store */
        uint64_t prev = atomic_fetch_add_explicit(cnt, 1, memory_order_acq_rel);
        if (prev + 1 != e * (uint64_t)members) break; /* not last: wait for the release */
        if (nnodes == 1) {                            /* I completed the root */
            nc_bar_post(t, release, e);
            return NUMACOLL_OK;
        }
        below = nnodes;
        idx = node;
    }
    /* the release word is written by whichever process completes the root in episode e
     * (one writer per episode): >= e means all P processes arrived at episode e and their
     * writes before it are visible to us */
    return nc_bar_wait(t, release, e, "barrier(combining-tree)");
}

const nc_barrier_algo_t nc_barrier_combining_tree = {
    .name = "combining-tree",
    .description = "software combining tree of k-member counters (k = NUMACOLL_BARRIER_TREE_K), "
                   "last arriver climbs, one global release word",
    .global_bytes = global_bytes,
    .rank_bytes = rank_bytes,
    .init = init,
    .run = run,
    .fini = fini,
};
