/*
 * shm-topo: the hierarchical topology barrier of paper 1 (Kurnosov 2022).
 *
 * The team's group hierarchy (topo/: groups per memory level, leader = lowest rank,
 * leaders go up, a top group last) becomes a tree: a process's children are the
 * non-leader members of every group it leads (lowest level first) and its parent is the
 * leader of the one group where it is not the leader. Each group is a flat tree: members
 * post the episode number on their arrival line; the leader waits for all of them, then
 * posts its own arrival for the level above. The top leader (rank 0) posts one global
 * release word that every process waits on (the paper's global sense).
 *
 * Variants by level set: "topo" reads NUMACOLL_BARRIER_TOPO_LEVELS; "topo-numa",
 * "topo-socket" and "topo-numa-socket" are fixed (the paper's shm-topo-NUMA, -SOCKET and
 * -NUMA-SOCKET) so that a benchmark can run them side by side.
 *
 * No usable level (unbound processes, a single NUMA node...): nc_topo_team_hier returns
 * NULL and the barrier is the flat tree (every rank reports to rank 0, the
 * sense-reversing-counter scheme); rank 0 says so once at NUMACOLL_VERBOSE >= 1.
 *
 * Release: one global word rather than per-rank wake-up lines. On this 2-CPU VM the two
 * variants of the same flat gather measure the same (sense-reversing-counter with one word
 * vs sense-reversing-gr with per-rank lines, numacoll-bench medians: P = 2 0.11 vs 0.12 us,
 * P = 8 oversubscribed 25.8 vs 25.7 us), and one store is less work for the releaser than
 * P - 1 stores; per-rank lines would only pay off with many waiters on remote nodes.
 *
 * Placement: the arrival line lives in its WRITER's block: at the lowest level the group
 * shares a NUMA node anyway, and at the upper levels each leader's store stays local while
 * the leader above pays one remote fetch per episode. The release word is in the global
 * block, first-touched by rank 0, its writer.
 */
#include "common.h"

#include "../../topo/topo.h"

#include <stdlib.h>
#include <string.h>

typedef struct topo_priv {
    int nchildren;
    int *children; /* ranks whose arrival I wait for, lowest level first */
    int is_root;
    int flat; /* 1 = no hierarchy, flat fallback */
    int nlevels;
    char op[48]; /* "barrier(<name>)" for wait diagnostics */
} topo_priv_t;

static size_t global_bytes(const numacoll_team_t *t)
{
    return t->line;
}
static size_t rank_bytes(const numacoll_team_t *t)
{
    return t->line;
}

/* Parent of rank r in the hierarchy's tree: the leader of the first group (lowest level
 * first) in which r is not the leader; -1 if r leads every group it is in. */
static int parent_in(const nc_hier_t *h, int r)
{
    for (int l = 0; l < h->nlevels; l++) {
        int g = h->group_of[(size_t)l * (size_t)h->nprocs + (size_t)r];
        if (g < 0 || g >= h->levels[l].ngroups) continue;
        const nc_group_t *grp = &h->levels[l].groups[g];
        if (grp->size > 0 && grp->members[0] != r) return grp->members[0];
    }
    return -1;
}

/*
 * Build my children list. Works on any hierarchy: ranks that lead everything they are in
 * (normally only rank 0, the top leader) other than the lowest of them are attached to
 * that lowest one, so the result is always a single tree (parents have lower ranks than
 * their children, so it has no cycle).
 */
int nc_barrier_topo_tree(const nc_hier_t *h, int P, int me, int *children, int *nchildren,
                         int *root)
{
    int n = 0, top = -1;
    int *parent = malloc((size_t)P * sizeof *parent);
    if (!parent) return NUMACOLL_ERR_NOMEM;
    for (int r = 0; r < P; r++) {
        parent[r] = h && h->nprocs == P ? parent_in(h, r) : (r == 0 ? -1 : 0);
        if (parent[r] >= r) parent[r] = -1; /* malformed (leader not lowest): treat as root */
        if (parent[r] < 0 && top < 0) top = r;
    }
    for (int r = 0; r < P; r++)
        if (parent[r] < 0 && r != top) parent[r] = top;
    /* lowest level first: a leader's lower-level members are listed before the leaders that
     * join it at upper levels, which is the order in which they normally arrive */
    if (h && h->nprocs == P) {
        for (int l = 0; l < h->nlevels; l++) {
            int g = h->group_of[(size_t)l * (size_t)P + (size_t)me];
            if (g < 0 || g >= h->levels[l].ngroups) continue;
            const nc_group_t *grp = &h->levels[l].groups[g];
            for (int i = 0; i < grp->size; i++) {
                int m = grp->members[i];
                if (m != me && m >= 0 && m < P && parent[m] == me) {
                    children[n++] = m;
                    parent[m] = -2; /* listed */
                }
            }
        }
    }
    for (int r = 0; r < P; r++) /* the rest (flat case, adopted roots) */
        if (parent[r] == me) children[n++] = r;
    *nchildren = n;
    *root = top;
    free(parent);
    return NUMACOLL_OK;
}

static int init_levels(numacoll_team_t *t, nc_barrier_slot_t *s, const char *name,
                       const char *levels)
{
    topo_priv_t *p = calloc(1, sizeof *p);
    int *children = malloc((size_t)t->size * sizeof *children);
    if (!p || !children) {
        free(p);
        free(children);
        return nc_error(NUMACOLL_ERR_NOMEM, "out of memory (%s barrier)", name);
    }
    const nc_hier_t *h = nc_topo_team_hier(t, levels);
    if (h && h->nprocs != t->size) h = NULL;
    int root = 0;
    int rc = nc_barrier_topo_tree(h, t->size, t->rank, children, &p->nchildren, &root);
    if (rc) {
        free(p);
        free(children);
        return nc_error(rc, "out of memory (%s barrier)", name);
    }
    p->children = children;
    p->is_root = t->rank == root;
    p->flat = h == NULL;
    p->nlevels = h ? h->nlevels : 0;
    snprintf(p->op, sizeof p->op, "barrier(%s)", name);
    s->priv = p;
    if (t->rank == 0 && t->size > 1) {
        /* verbose 1 only for the algorithm the user selected; every variant at 2 */
        int lvl = strcmp(nc_cfg_str(NC_CFG_BARRIER), name) == 0 ? 1 : 2;
        if (!h)
            nc_log(lvl, t->rank, t->size,
                   "%s barrier: no usable hierarchy for levels '%s' (processes unbound, or one "
                   "unit per level): falling back to a flat tree (all ranks report to rank 0)",
                   name, levels);
        else
            nc_log(lvl, t->rank, t->size, "%s barrier: %d group level(s) over '%s'", name,
                   h->nlevels, levels);
    }
    return NUMACOLL_OK;
}

static void fini(numacoll_team_t *t, nc_barrier_slot_t *s)
{
    (void)t;
    topo_priv_t *p = s->priv;
    if (p) free(p->children);
    free(p);
    s->priv = NULL;
}

static int run(numacoll_team_t *t, nc_barrier_slot_t *s)
{
    uint64_t e = ++s->calls;
    const topo_priv_t *p = s->priv;
    for (int i = 0; i < p->nchildren; i++) {
        /* arrival line of child c, written only by c after its own group(s) arrived:
         * >= e means c's whole subtree reached episode e (writes visible) */
        int rc =
            nc_bar_wait(t, nc_bar_line(t, nc_barrier_rank_area(t, s, p->children[i]), 0), e, p->op);
        if (rc) return rc;
    }
    _Atomic uint64_t *release = nc_bar_line(t, s->global, 0);
    if (p->is_root) {
        nc_bar_post(t, release, e);
        return NUMACOLL_OK;
    }
    nc_bar_post(t, nc_bar_line(t, nc_barrier_rank_area(t, s, t->rank), 0), e);
    /* the release word is written only by the top leader after its whole tree arrived:
     * >= e means all P processes reached episode e */
    return nc_bar_wait(t, release, e, p->op);
}

static int init_cfg(numacoll_team_t *t, nc_barrier_slot_t *s)
{
    return init_levels(t, s, "topo", nc_cfg_str(NC_CFG_BARRIER_TOPO_LEVELS));
}
static int init_numa(numacoll_team_t *t, nc_barrier_slot_t *s)
{
    return init_levels(t, s, "topo-numa", "numa");
}
static int init_socket(numacoll_team_t *t, nc_barrier_slot_t *s)
{
    return init_levels(t, s, "topo-socket", "socket");
}
static int init_numa_socket(numacoll_team_t *t, nc_barrier_slot_t *s)
{
    return init_levels(t, s, "topo-numa-socket", "numa,socket");
}

const nc_barrier_algo_t nc_barrier_topo = {
    .name = "topo",
    .description = "hierarchical topology barrier (paper 1) over NUMACOLL_BARRIER_TOPO_LEVELS; "
                   "flat tree when no level is usable",
    .global_bytes = global_bytes,
    .rank_bytes = rank_bytes,
    .init = init_cfg,
    .run = run,
    .fini = fini,
};
const nc_barrier_algo_t nc_barrier_topo_numa = {
    .name = "topo-numa",
    .description = "topology barrier grouped by NUMA node (paper: shm-topo-NUMA)",
    .global_bytes = global_bytes,
    .rank_bytes = rank_bytes,
    .init = init_numa,
    .run = run,
    .fini = fini,
};
const nc_barrier_algo_t nc_barrier_topo_socket = {
    .name = "topo-socket",
    .description = "topology barrier grouped by package (paper: shm-topo-SOCKET)",
    .global_bytes = global_bytes,
    .rank_bytes = rank_bytes,
    .init = init_socket,
    .run = run,
    .fini = fini,
};
const nc_barrier_algo_t nc_barrier_topo_numa_socket = {
    .name = "topo-numa-socket",
    .description = "topology barrier grouped by NUMA node, then package (paper: "
                   "shm-topo-NUMA-SOCKET)",
    .global_bytes = global_bytes,
    .rank_bytes = rank_bytes,
    .init = init_numa_socket,
    .run = run,
    .fini = fini,
};
