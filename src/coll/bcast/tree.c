/*
 * Notification trees of the broadcast: k-ary, k-nomial, flat, chain (paper 3) and a
 * topology tree (root -> group leaders -> members, over the team's group hierarchy).
 *
 * nc_bcast_tree_parents() gives the parent of every rank for one root. The broadcast state
 * calls it once per possible root when a tree is first used (bc_tree_build, from
 * tree_ready) and keeps, for its own rank, the parent, the children and the data source
 * per root (tree_cache_t), so a call finds them in O(1).
 */
#include "bcast_internal.h"

#include <stdlib.h>
#include <string.h>

const char *const nc_bcast_tree_names[NC_BTREE_COUNT] = {"kary", "knomial", "flat", "chain",
                                                         "topo"};

int nc_bcast_tree_find(const char *name)
{
    for (int i = 0; i < NC_BTREE_COUNT; i++)
        if (name && strcmp(name, nc_bcast_tree_names[i]) == 0) return i;
    return -1;
}

/* Parent of virtual rank v (root = 0) in the rotated shapes. */
static int vparent(int kind, int v, int k)
{
    if (v == 0) return -1;
    switch (kind) {
    case NC_BTREE_FLAT:
        return 0;
    case NC_BTREE_CHAIN:
        return v - 1;
    case NC_BTREE_KNOMIAL: {
        /* clear the lowest non-zero base-k digit of v */
        int kk = k < 2 ? 2 : k;
        int pw = 1;
        while ((v / pw) % kk == 0)
            pw *= kk;
        return v - ((v / pw) % kk) * pw;
    }
    default: /* k-ary */
        return (v - 1) / (k < 1 ? 1 : k);
    }
}

/*
 * Topology tree. Level by level (lowest first), the members of every group hang below the
 * group's leader in a k-ary tree (leader first, then the members in ascending order). The leader is
 * the group's lowest rank, except that the root takes the place of the leader of every group on its
 * way up, so that data enter each group once. A member at level l > 0 is the natural leader of a
 * group of level l - 1; it is replaced by whoever leads that group for this root (cur[]). Ranks
 * left without a parent (in no group, or leaders of the last level when there is no top group)
 * attach to the root.
 */
static void topo_parents(int P, int root, int k, int nlev, const int *groups, int *parent)
{
    int *cur = malloc((size_t)P * sizeof *cur);
    int *low = malloc((size_t)P * sizeof *low);       /* per group: lowest natural member */
    int *lead = malloc((size_t)P * sizeof *lead);     /* per group: effective leader */
    int *off = malloc(((size_t)P + 1) * sizeof *off); /* per group: start in list */
    int *list = malloc((size_t)P * sizeof *list);     /* non-leaders, grouped, ascending */
    if (!cur || !low || !lead || !off || !list) {
        free(cur), free(low), free(lead), free(off), free(list);
        for (int r = 0; r < P; r++)
            parent[r] = r == root ? -1 : root;
        return;
    }
    if (k < 1) k = 1;
    for (int r = 0; r < P; r++)
        cur[r] = r, parent[r] = -1;
    for (int l = 0; l < nlev; l++) {
        const int *g = groups + (size_t)l * P;
        for (int i = 0; i < P; i++)
            low[i] = -1, lead[i] = -1, off[i] = 0;
        for (int r = 0; r < P; r++) {
            int gi = g[r];
            if (gi < 0 || gi >= P) continue;
            if (low[gi] < 0) low[gi] = r; /* ascending scan: first is lowest */
            if (cur[r] == root) lead[gi] = root;
        }
        for (int i = 0; i < P; i++)
            if (low[i] >= 0 && lead[i] < 0) lead[i] = cur[low[i]];
        /* inside a group: k-ary over (leader, the other members in ascending order) */
        for (int r = 0; r < P; r++) {
            int gi = g[r];
            if (gi >= 0 && gi < P && cur[r] != lead[gi]) off[gi + 1]++;
        }
        off[0] = 0;
        for (int i = 0; i < P; i++)
            off[i + 1] += off[i];
        for (int r = 0; r < P; r++) { /* fill; off[gi] advances to the group's end */
            int gi = g[r];
            if (gi >= 0 && gi < P && cur[r] != lead[gi]) list[off[gi]++] = cur[r];
        }
        for (int gi = P - 1; gi >= 0; gi--) /* shift back: off[gi] = start again */
            off[gi + 1] = off[gi];
        off[0] = 0;
        for (int gi = 0; gi < P; gi++) {
            if (low[gi] < 0) continue;
            for (int j = off[gi]; j < off[gi + 1]; j++) {
                int pi = (j - off[gi]) / k; /* member index j-off+1, parent index (i-1)/k */
                parent[list[j]] = pi == 0 ? lead[gi] : list[off[gi] + pi - 1];
            }
        }
        for (int i = 0; i < P; i++)
            if (low[i] >= 0) cur[low[i]] = lead[i];
    }
    for (int r = 0; r < P; r++)
        if (r != root && parent[r] < 0) parent[r] = root;
    parent[root] = -1;
    free(cur), free(low), free(lead), free(off), free(list);
}

void nc_bcast_tree_parents(int kind, int P, int root, int k, int nlev, const int *groups,
                           int *parent)
{
    if (kind == NC_BTREE_TOPO && groups && nlev > 0) {
        topo_parents(P, root, k, nlev, groups, parent);
        return;
    }
    if (kind == NC_BTREE_TOPO) kind = NC_BTREE_KARY;
    for (int r = 0; r < P; r++) {
        int v = (r - root + P) % P;
        int pv = vparent(kind, v, k);
        parent[r] = pv < 0 ? -1 : (pv + root) % P;
    }
}

/* ---- the tree cache: per root, this process's parent, children and data source ---------- */

void bc_tree_free(tree_cache_t *c)
{
    free(c->parent), free(c->source), free(c->holds_copy), free(c->child_off), free(c->children);
    memset(c, 0, sizeof *c);
}

/* Build the cache of tree @p kind with fan-out @p k for every root (replacing any): the
 * parents and children from nc_bcast_tree_parents, and with the relay the nearest copy's
 * holder as each root's data source. */
int bc_tree_build(numacoll_team_t *t, bcast_t *b, int kind, int k)
{
    tree_cache_t *c = &b->trees[kind];
    if (kind == b->tree_kind) b->hot.kids_root = -1; /* its child list may change */
    bc_tree_free(c);
    int P = t->size, me = t->rank;
    int *par = malloc((size_t)P * sizeof *par);
    int *H = malloc((size_t)P * sizeof *H); /* nearest holder at or above each rank */
    int *nch = malloc((size_t)P * sizeof *nch);
    int *stack = malloc((size_t)P * sizeof *stack);
    c->parent = malloc((size_t)P * sizeof *c->parent);
    c->source = malloc((size_t)P * sizeof *c->source);
    c->holds_copy = calloc((size_t)P, 1);
    c->child_off = calloc((size_t)P + 1, sizeof *c->child_off);
    size_t cap = (size_t)P, n = 0;
    c->children = malloc(cap * sizeof *c->children);
    int rc = NUMACOLL_OK;
    if (!par || !H || !nch || !stack || !c->parent || !c->source || !c->holds_copy ||
        !c->child_off || !c->children) {
        rc = nc_error(NUMACOLL_ERR_NOMEM, "out of memory building the broadcast trees");
        goto out;
    }
    for (int root = 0; root < P; root++) {
        nc_bcast_tree_parents(kind, P, root, k, b->group_levels, b->group_of, par);
        c->parent[root] = par[me];
        c->child_off[root] = (int)n;
        for (int i = 1; i < P; i++) { /* children in rotated order from the root */
            int r = (root + i) % P;
            if (par[r] != me) continue;
            if (n == cap) {
                int *nc2 = realloc(c->children, 2 * cap * sizeof *nc2);
                if (!nc2) {
                    rc = nc_error(NUMACOLL_ERR_NOMEM, "out of memory building the trees");
                    goto out;
                }
                c->children = nc2, cap *= 2;
            }
            c->children[n++] = r;
        }
        /* relay holders: a rank keeps a copy if it has children and lies on another NUMA
         * node than the copy it reads from */
        memset(nch, 0, (size_t)P * sizeof *nch);
        for (int r = 0; r < P; r++)
            if (par[r] >= 0) nch[par[r]]++;
        for (int r = 0; r < P; r++)
            H[r] = -2; /* unknown */
        H[root] = root;
        for (int r = 0; r < P; r++) {
            int top = 0, y = r;
            while (H[y] == -2)
                stack[top++] = y, y = par[y]; /* up to a resolved rank */
            while (top > 0) {                 /* resolve the path top-down */
                int z = stack[--top], from = H[par[z]];
                int nz = b->numa_of[z], nf = b->numa_of[from];
                H[z] = (nch[z] > 0 && nz >= 0 && nf >= 0 && nz != nf) ? z : from;
            }
        }
        c->source[root] = me == root ? root : H[par[me]];
        c->holds_copy[root] = (char)(me != root && H[me] == me);
    }
    c->child_off[P] = (int)n;
    c->built = 1;
    c->fanout = k;
out:
    free(par), free(H), free(nch), free(stack);
    if (rc) bc_tree_free(c);
    return rc;
}
